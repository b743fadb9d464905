"""Each tiny family's tokenizer: a small tokenizer.json (the family's special tokens, then one
token per byte) and a tokenizer_config.json with the family's real chat template, written into
its model directory so that text and chat prompts go through AutoTokenizer + apply_chat_template
exactly as for a published checkpoint of the family.

Styles (what the family's published tokenizer.json is like):
  byte_level  GPT-2 byte-level BPE (ByteLevel pre-tokenizer and decoder); the 256 byte characters
  gemma       Gemma's SentencePiece-style BPE: spaces as '▁' (normalizer), byte fallback <0xNN>
  llama_spm   Llama 2's: Prepend('▁') + Replace(' ', '▁'), byte fallback, Strip in the decoder
The tokens are: the family's special tokens at ids 0 (pad), 1 (the config's bos_token_id), 2
(its eos_token_id) and after, then the 256 byte tokens (and '▁' for the SentencePiece styles).
No merges (SmolLM3's has one, as a GGUF needs some): every character is its bytes, which keeps the
vocabulary (and the model) small.
"""
import json
import pathlib

from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors
from tokenizers.models import BPE

HERE = pathlib.Path(__file__).resolve().parent
TEMPLATES = HERE / "family_templates"
QWEN3_TEMPLATE = HERE.parents[1] / "tests" / "data" / "chat" / "templates" / "qwen3.jinja"


def _family(style, tokens, template, tokenizer_class, special, add_bos_token=None, unspecial=(), rstrip=(),
            merges=(), extra_special=None):
    return dict(style=style, tokens=tokens, template=template, tokenizer_class=tokenizer_class,
                special=special, add_bos_token=add_bos_token, unspecial=set(unspecial), rstrip=set(rstrip),
                merges=list(merges), extra_special=extra_special)


_QWEN3 = _family("byte_level", ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"],
                 QWEN3_TEMPLATE, "Qwen2Tokenizer",
                 dict(bos_token=None, eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token=None),
                 unspecial=["<think>", "</think>"])
_GEMMA_TOKENS = ["<pad>", "<bos>", "<eos>", "<unk>", "<mask>", "<start_of_turn>", "<end_of_turn>"]
_GEMMA_SPECIAL = dict(bos_token="<bos>", eos_token="<eos>", pad_token="<pad>", unk_token="<unk>", mask_token="<mask>")
_OLMO = dict(bos_token="<|endoftext|>", eos_token="<|endoftext|>", pad_token="<|pad|>", unk_token="<|endoftext|>")

# model_type -> its tokenizer; tokenizer_class is what the family's checkpoints declare (transformers
# may load another class for the model type: tools/reference/tokenizer.py checks xlacel's choice).
FAMILY_TEXT = {
    "qwen3": _QWEN3,
    "qwen3_moe": _QWEN3,
    # Qwen 3's text with one merge, as a GGUF needs some (the YaRN variant, also converted).
    "qwen3_with_merge": {**_QWEN3, "merges": [("\u0120", "t")]},
    "gemma3_text": _family("gemma", _GEMMA_TOKENS, TEMPLATES / "gemma3_text.jinja", "GemmaTokenizer",
                           _GEMMA_SPECIAL, add_bos_token=True),
    # Gemma 3's image tokens too, named as its processor reads them (tokenizer.boi_token, ...).
    "gemma3_vlm": _family("gemma", _GEMMA_TOKENS + ["<start_of_image>", "<end_of_image>", "<image_soft_token>"],
                          TEMPLATES / "gemma3_text.jinja", "GemmaTokenizer", _GEMMA_SPECIAL, add_bos_token=True,
                          extra_special=dict(boi_token="<start_of_image>", eoi_token="<end_of_image>",
                                             image_token="<image_soft_token>")),
    "gemma2": _family("gemma", _GEMMA_TOKENS, TEMPLATES / "gemma2.jinja", "GemmaTokenizer", _GEMMA_SPECIAL,
                      add_bos_token=True),
    "granite": _family("byte_level", ["<|pad|>", "<|start_of_role|>", "<|end_of_text|>", "<|end_of_role|>",
                                      "<|tool_call|>"], TEMPLATES / "granite.jinja", "GPT2Tokenizer",
                       dict(bos_token="<|end_of_text|>", eos_token="<|end_of_text|>", pad_token="<|pad|>",
                            unk_token="<|end_of_text|>")),
    # Granite 4.0's roles and tool-call tags, byte-level, with Granite's template; one merge, as a GGUF
    # needs some (264 tokens: llama.cpp's Mamba-2 converter pads a vocabulary to a multiple of 8).
    "granitemoehybrid": _family("byte_level", ["<|pad|>", "<|start_of_role|>", "<|end_of_text|>",
                                               "<|end_of_role|>", "<|tool_call|>", "<tool_call>", "</tool_call>"],
                                TEMPLATES / "granite.jinja", "GPT2Tokenizer",
                                dict(bos_token="<|end_of_text|>", eos_token="<|end_of_text|>", pad_token="<|pad|>",
                                     unk_token="<|end_of_text|>"),
                                unspecial=["<tool_call>", "</tool_call>"], merges=[("\u0120", "t")]),
    # SmolVLM's turns and image tokens (the Idefics3 processor's), byte-level, with SmolVLM's template.
    "smolvlm": _family("byte_level", ["<|endoftext|>", "<|im_start|>", "<end_of_utterance>",
                                      "<fake_token_around_image>", "<global-img>", "<image>"] +
                       [f"<row_{r}_col_{c}>" for r in range(1, 7) for c in range(1, 7)],
                       TEMPLATES / "smolvlm.jinja", "GPT2Tokenizer",
                       dict(bos_token="<|im_start|>", eos_token="<end_of_utterance>", pad_token="<|endoftext|>",
                            unk_token="<|endoftext|>")),
    "olmo2": _family("byte_level", ["<|pad|>", "<|startoftext|>", "<|endoftext|>"], TEMPLATES / "olmo2.jinja",
                     "GPT2Tokenizer", _OLMO),
    "olmoe": _family("byte_level", ["<|pad|>", "<|startoftext|>", "<|endoftext|>"], TEMPLATES / "olmo2.jinja",
                     "GPTNeoXTokenizer", _OLMO),
    "phi3": _family("llama_spm", ["<unk>", "<s>", "<|endoftext|>", "<|end|>", "<|user|>", "<|assistant|>",
                                  "<|system|>"], TEMPLATES / "phi3.jinja", "LlamaTokenizer",
                    dict(bos_token="<s>", eos_token="<|endoftext|>", pad_token="<|endoftext|>", unk_token="<unk>"),
                    add_bos_token=True, rstrip=["<|end|>", "<|user|>", "<|assistant|>", "<|system|>"]),
    "stablelm": _family("byte_level", ["<|pad|>", "<|user|>", "<|endoftext|>", "<|assistant|>", "<|system|>"],
                        TEMPLATES / "stablelm.jinja", "GPT2Tokenizer",
                        dict(bos_token="<|endoftext|>", eos_token="<|endoftext|>", pad_token="<|pad|>",
                             unk_token="<|endoftext|>")),
    "starcoder2": _family("byte_level", ["<fim_pad>", "<file_sep>", "<|endoftext|>"], TEMPLATES / "starcoder2.jinja",
                          "GPT2Tokenizer", dict(bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                                                pad_token="<fim_pad>", unk_token="<|endoftext|>")),
    "cohere": _family("byte_level", ["<PAD>", "<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>", "<UNK>", "<CLS>", "<SEP>",
                                     "<MASK_TOKEN>", "<|START_OF_TURN_TOKEN|>", "<|USER_TOKEN|>",
                                     "<|CHATBOT_TOKEN|>", "<|SYSTEM_TOKEN|>"], TEMPLATES / "cohere.jinja",
                      "CohereTokenizer",
                      dict(bos_token="<BOS_TOKEN>", eos_token="<|END_OF_TURN_TOKEN|>", pad_token="<PAD>",
                           unk_token="<UNK>", cls_token="<CLS>", sep_token="<SEP>", mask_token="<MASK_TOKEN>"),
                      add_bos_token=True),
    # SmolLM3's Llama-3 byte-level tokenizer; no chat template: its published one writes today's
    # date into the system turn ("Today Date: ..."), so a rendered chat is no fixed reference.
    "smollm3": _family("byte_level", ["<|finetune_right_pad_id|>", "<|begin_of_text|>", "<|im_end|>",
                                      "<|im_start|>", "<|end_of_text|>", "<think>", "</think>"], None,
                       "PreTrainedTokenizerFast",
                       dict(bos_token="<|begin_of_text|>", eos_token="<|im_end|>",
                            pad_token="<|finetune_right_pad_id|>", unk_token=None),
                       unspecial=["<think>", "</think>"],
                       merges=[("\u0120", "t")]),  # one merge (" t"): GGUF loaders require the key
    # Phi-4-mini's kind of tokenizer (GPT2Tokenizer, byte-level) with Phi-3's role tokens and
    # template, for the LongRoPE variant (families.py VARIANTS); one merge, as a GGUF needs some.
    "phi4": _family("byte_level", ["<|dummy_pad|>", "<|endoftext|>", "<|end|>", "<|user|>", "<|assistant|>",
                                   "<|system|>"], TEMPLATES / "phi3.jinja", "GPT2Tokenizer",
                    dict(bos_token="<|endoftext|>", eos_token="<|end|>", pad_token="<|dummy_pad|>",
                         unk_token="<|endoftext|>"),
                    rstrip=["<|end|>", "<|user|>", "<|assistant|>", "<|system|>"],
                    merges=[("\u0120", "t")]),
    # LFM2's ChatML roles and tool markers, byte-level; one merge, as a GGUF needs some.
    "lfm2": _family("byte_level", ["<|pad|>", "<|startoftext|>", "<|im_end|>", "<|im_start|>", "<|endoftext|>",
                                   "<|tool_list_start|>", "<|tool_list_end|>", "<|tool_response_start|>",
                                   "<|tool_response_end|>"], TEMPLATES / "lfm2.jinja", "PreTrainedTokenizerFast",
                    dict(bos_token="<|startoftext|>", eos_token="<|im_end|>", pad_token="<|pad|>", unk_token=None),
                    merges=[("\u0120", "t")]),
    # gpt-oss's o200k kind of tokenizer with its harmony tokens; no chat template (harmony's
    # renders the current date into the system message); one merge, as a GGUF needs some.
    "gpt_oss": _family("byte_level", ["<|endoftext|>", "<|startoftext|>", "<|return|>", "<|start|>", "<|end|>",
                                      "<|message|>", "<|channel|>", "<|call|>"], None, "PreTrainedTokenizerFast",
                       dict(bos_token="<|startoftext|>", eos_token="<|return|>", pad_token="<|endoftext|>",
                            unk_token=None),
                       merges=[("\u0120", "t")]),
    "mixtral": _family("llama_spm", ["<unk>", "<s>", "</s>"], TEMPLATES / "mixtral.jinja", "LlamaTokenizer",
                       dict(bos_token="<s>", eos_token="</s>", pad_token=None, unk_token="<unk>"),
                       add_bos_token=True),
}

# Templates that refuse a system message (gemma2, starcoder2, mixtral) get the multi-turn chat
# without one.
CHATS = [
    ("capital_chat", [{"role": "user", "content": "What is the capital of France?"}]),
    ("multi_turn_chat", [
        {"role": "system", "content": "Be brief. Café ünïcode 123."},
        {"role": "user", "content": "Hi!"},
        {"role": "assistant", "content": "Hello. Cafe\u0301 4567?"},
        {"role": "user", "content": "2+2=?"},
    ]),
]
RAW_PROMPTS = [("capital_raw", "The capital of France is 1234 cafe\u0301s")]


def byte_characters():
    """GPT-2's bytes_to_unicode, in byte order."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


def vocab_size(model_type):
    text = FAMILY_TEXT[model_type]
    return len(text["tokens"]) + 256 + (0 if text["style"] == "byte_level" else 1) + len(text["merges"])


def build_tokenizer(text):
    tokens = list(text["tokens"])
    if text["style"] == "byte_level":
        tokens += byte_characters()
    else:
        tokens += [f"<0x{b:02X}>" for b in range(256)] + ["\u2581"]
    tokens += ["".join(pair) for pair in text["merges"]]
    vocab = {token: index for index, token in enumerate(tokens)}
    special = text["special"]
    if text["style"] == "byte_level":
        tok = Tokenizer(BPE(vocab=vocab, merges=text["merges"], dropout=None, fuse_unk=False))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        tok.decoder = decoders.ByteLevel()
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    elif text["style"] == "gemma":
        tok = Tokenizer(BPE(vocab=vocab, merges=[], dropout=None, fuse_unk=True, unk_token=special["unk_token"],
                            byte_fallback=True))
        tok.normalizer = normalizers.Replace(" ", "\u2581")
        tok.pre_tokenizer = pre_tokenizers.Split(" ", "merged_with_previous")
        tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()])
    else:
        tok = Tokenizer(BPE(vocab=vocab, merges=[], dropout=None, fuse_unk=True, unk_token=special["unk_token"],
                            byte_fallback=True))
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
        tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                         decoders.Strip(" ", 1, 0)])
    tok.add_special_tokens([AddedToken(t, special=t not in text["unspecial"], normalized=False,
                                       rstrip=t in text["rstrip"]) for t in text["tokens"]])
    if text["add_bos_token"]:
        bos = special["bos_token"]
        tok.post_processor = processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
                                                           special_tokens=[(bos, vocab[bos])])
    return tok


def tokenizer_config(text, tok):
    added = json.loads(tok.to_str())["added_tokens"]
    template = {} if text["template"] is None else {"chat_template": text["template"].read_text(encoding="utf-8")}
    config = {
        "added_tokens_decoder": {str(t.pop("id")): t for t in added},
        **text["special"],
        **template,
        "clean_up_tokenization_spaces": False,
        "model_max_length": 2048,
        "tokenizer_class": text["tokenizer_class"],
    }
    if text.get("extra_special"):
        config["extra_special_tokens"] = text["extra_special"]
    if text["add_bos_token"] is not None:
        config["add_bos_token"] = text["add_bos_token"]
        config["add_eos_token"] = False
    return config


def write(model_type, directory):
    """Writes tokenizer.json and tokenizer_config.json into `directory`."""
    text = FAMILY_TEXT[model_type]
    tok = build_tokenizer(text)
    (directory / "tokenizer.json").write_text(tok.to_str() + "\n", encoding="utf-8")
    config = tokenizer_config(text, tok)
    (directory / "tokenizer_config.json").write_text(json.dumps(config, ensure_ascii=False, indent=2) + "\n",
                                                     encoding="utf-8")


def text_prompts(model_type, tokenizer):
    """The raw and chat prompts as transformers encodes them: [(entry without ids, ids)]."""
    prompts = []
    for name, text in RAW_PROMPTS:
        prompts.append(({"name": name, "kind": "raw", "text": text, "add_special_tokens": True},
                        tokenizer(text, add_special_tokens=True)["input_ids"]))
    if tokenizer.chat_template is None:
        return prompts
    refuses_system = "raise_exception('System" in tokenizer.chat_template or \
        "System role not supported" in tokenizer.chat_template or "Only user and assistant" in tokenizer.chat_template
    for name, messages in CHATS:
        if refuses_system:
            messages = [m for m in messages if m["role"] != "system"]
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        prompts.append(({"name": name, "kind": "chat", "text": text, "messages": messages,
                         "add_special_tokens": False}, tokenizer(text, add_special_tokens=False)["input_ids"]))
    return prompts
