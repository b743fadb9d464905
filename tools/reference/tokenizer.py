"""Reference data for the tokenizer, from HF `transformers` (GGUF route) and `tokenizers`.

Writes (checked in, small, deterministic):
  tests/data/tokenizer/corpus.json           the test strings (built here, see CORPUS)
  tests/data/tokenizer/smollm2_tokenizer.json the HF tokenizer.json that transformers builds when it
      loads the default model's GGUF (AutoTokenizer.from_pretrained(dir, gguf_file=...))
  tests/data/tokenizer/variants.json         small patches applied to that file by the C++ test
      (pre_tokenizer / post_processor / model flags), one per variant
  tests/data/tokenizer/tiny_llama_bpe.gguf   a small synthetic GGUF (gpt2 vocabulary cut from
      SmolLM2's, tokenizer.ggml.pre = llama-bpe, add_bos_token = true, user-defined and
      mislabelled control tokens) to check the Llama-3 style GGUF route
  tests/data/tokenizer/tiny_llama_bpe.tokenizer.json  the tokenizer.json transformers builds
      from it (checked through the tokenizer.json route against `tokenizers`)
  tests/data/tokenizer/malformed_llama_spm.gguf  a sentencepiece vocabulary without scores (an Error)
  tests/data/tokenizer/expected.json         per route/variant: ids for every corpus entry with
      add_special_tokens true and false, and the decoded text
  tests/data/tokenizer/expected_gemma.json   the same for Gemma 3 270M's GGUF (a sentencepiece
      "llama" vocabulary: GemmaTokenizer, merges derived from the vocabulary, byte fallback)
  tests/data/tokenizer/model_types.json      HF directories (a tokenizer.json from tests/data, a
      config.json model_type, a tokenizer_config.json) for which AutoTokenizer loads a
      model-specific class that rebuilds the normalizer / pre-tokenizer / decoder; their ids are
      expected.json's "hf_<name>"
  tests/data/tokenizer/class_choice.json     the class AutoTokenizer loads for each model_type x
      declared tokenizer_class x (byte-level or not) tokenizer.json
      (the SentencePiece-style routes use the tiny family tokenizers: run families.py first)
Usage: .venv/bin/python tools/reference/tokenizer.py [MODEL.gguf [GEMMA.gguf]]
   (defaults: ~/.cache/xlacel/models/SmolLM2-135M-Instruct.Q4_1.gguf and gemma-3-270m-q4_k_m.gguf
   beside it; the Gemma reference is skipped with a note when that file is absent)
"""
import copy
import json
import os
import pathlib
import shutil
import sys
import tempfile
import types

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "tokenizer"
DEFAULT_MODEL = pathlib.Path.home() / ".cache" / "xlacel" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
GEMMA_MODEL = DEFAULT_MODEL.parent / "gemma-3-270m-q4_k_m.gguf"

LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def build_corpus():
    corpus = [
        "",
        "a",
        " ",
        "\n",
        "\t",
        "\r\n",
        "Z",
        "7",
        "!",
        "é",
        "中",
        "😀",
        "Hello world",
        "Hello, world!",
        " Hello world",
        "  Hello world  ",
        "Hello world   ",
        "   leading spaces",
        "The quick brown fox jumps over the lazy dog.",
        "It's a dog's life; they're here, we've seen, you'll see, he'd go, don't, can't, won't.",
        "IT'S A DOG'S LIFE; THEY'RE HERE, WE'VE SEEN, YOU'LL SEE, HE'D GO, DON'T, I'M.",
        "It'S mixed: They'Re, We'VE, You'Ll, He'D, Don'T, I'm",
        "'s 're 've 'll 'd n't 'S 'RE 'VE 'LL 'D N'T",
        "rock'n'roll ''quoted'' 'single' \"double\"",
        "Mr. O'Neil's cat—an ‘old’ one—said “hi”…",
        "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
        "#include <stdio.h>\n\nint main(void) {\n\tprintf(\"%d\\n\", 42);\n\treturn 0;\n}\n",
        "fn main() {\n    let v: Vec<u32> = (0..10).map(|x| x * x).collect();\n    println!(\"{:?}\", v);\n}",
        "const f = async (x) => { await fetch(`/api/${x}`); return x ?? null; };",
        "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC;",
        "<html><body><div class=\"a\">Hi &amp; bye</div></body></html>",
        "for i in range(10):\r\n    print(i)\r\n",
        "x=1;y=2;z=x+y*3/4-5%6**7//8",
        "if (a && b || !c) { a <<= 2; b >>= 1; c ^= ~d; }",
        "    indented with four spaces",
        "\ttab\tseparated\tvalues\t",
        "line one\nline two\n\nline four\n\n\n",
        "trailing newline\n",
        "windows\r\nline\r\nendings\r\n\r\n",
        "mixed \t \n \r\n  whitespace \t\t runs",
        "a  b   c    d     e      f",
        "\n\n\n",
        "          ",
        "0",
        "12",
        "123",
        "1234",
        "12345",
        "123456",
        "1234567",
        "12345678901234567890",
        "3.14159 2.71828 -1e-10 +6.02e23 0x1F 0b1010 1_000_000",
        "Version 1.2.3, 2024-11-22 13:45:07, $1,234.56, 99.9%",
        "phone: +1 (555) 123-4567",
        "١٢٣ ٤٥٦ ۱۲۳ १२३ ๑๒๓ ①②③ Ⅻ ½",
        "中文分词测试：今天天气很好，我们去公园散步吧。",
        "日本語のテキストです。カタカナとひらがな、そして漢字。",
        "한국어 텍스트입니다. 안녕하세요!",
        "مرحبا بالعالم، هذا نص عربي.",
        "שלום עולם, זה טקסט בעברית.",
        "नमस्ते दुनिया, यह हिंदी पाठ है।",
        "สวัสดีชาวโลก นี่คือข้อความภาษาไทย",
        "Привет, мир! Это русский текст. ЁЖИК ёжик",
        "Γειά σου Κόσμε! Αυτό είναι ελληνικό κείμενο.",
        "Ünïcödé façade naïve café résumé coöperate Straße",
        "Tiếng Việt có dấu: Xin chào thế giới",
        "ÅÄÖ åäö ÆØÅ æøå Ł ł Ż ż",
        "e\u0301 a\u0300\u0316 n\u0303 o\u0308\u0304 (combining marks)",
        "\u0915\u094d\u0937 \u0e01\u0e34\u0e4a",
        "Zalgo: Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f\u031e\u0320\u034da",
        "replacement char \ufffd and BOM \ufeff and ZWSP \u200b",
        "\ufffd",
        "nbsp\u00a0here, em\u2003space, ideographic\u3000space",
        "soft\u00adhyphen and zero\u200cwidth\u200djoiner",
        "private use \ue000 and noncharacter \ufdd0 and \U0010fffd",
        "math 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝐁𝐨𝐥𝐝 ∀x∈ℝ: x²≥0 ∑∫∂√∞",
        "emoji 😀😃😄 🎉 👍",
        "👨\u200d👩\u200d👧\u200d👦 family ZWJ",
        "👩🏽\u200d💻 technologist with skin tone",
        "👍🏻👍🏼👍🏽👍🏾👍🏿",
        "flags 🇺🇸🇯🇵🇩🇪🇫🇷 🏳️\u200d🌈 🏴\u200d☠️",
        "keycaps 1️⃣ #️⃣ and ❤️ vs ❤",
        "<|im_start|>",
        "<|im_end|>",
        "<|endoftext|>",
        "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n",
        "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n",
        "text<|endoftext|>more text",
        " <|endoftext|> spaced ",
        "<|im_start|><|im_end|><|endoftext|>",
        "<|im_start|<|im_end|>|>",
        "< |im_start| > <|im_sta rt|> <|IM_START|>",
        "<repo_name>xlacel<file_sep>src/main.cpp\n<filename>a.py<gh_stars>10",
        "<jupyter_code>print(1)<jupyter_output>1<empty_output>",
        "<issue_start>bug<issue_comment>fixed<issue_closed>",
        "<reponame>x <jupyter_start><jupyter_text>t<jupyter_script>",
        "<think>reasoning</think>",
        "Mixed: English, 中文, русский, العربية, 日本語, 한국어 and 😀 in one line.",
        "URL https://example.com/path?q=1&r=two#frag and email a.b+c@example.org",
        "C:\\Users\\name\\file.txt /usr/local/bin/xlacel ~/.cache",
        "Markdown **bold** _it_ `code` [link](http://x.y) > quote\n- item\n1. item",
        "JSON {\"key\": [1, 2.5, true, null, \"s\\u00e9\"]}",
        "LaTeX $\\frac{a}{b} + \\sqrt{x^2}$ and \\begin{equation}",
        "!!!???...,,,;;;:::---___===+++***&&&|||",
        "(((nested))) [[[brackets]]] {{{braces}}} <<<angles>>>",
        "@user #hashtag $VAR %s ^caret &amp ~tilde `tick`",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "ababababababababababababababab",
        "supercalifragilisticexpialidocious antidisestablishmentarianism",
        "camelCaseIdentifier snake_case_identifier SCREAMING_CASE kebab-case",
        "HTTPServerError XMLHttpRequest iPhone eBay McDonald",
        "ALL CAPS SENTENCE WITH SOME WORDS",
        "Sentence ending with space ",
        " starts with space",
        "ends with tab\t",
        "\tstarts with tab",
        "a\u2028b\u2029c\u0085d\u000be\u000cf",
        "control \u0001\u0002\u001f\u007f chars",
        "null \u0000 byte",
        "I'll've y'all'd",
        "'",
        "''",
        "n't",
        "don't\nDON'T\n don't",
        "…",
        "—",
        "½ ¼ ¾ ™ © ® ° ± × ÷",
        "🧑‍🤝‍🧑",
        "\U0001F600\U0001F601 \U0001F9D1\U0001F3FF\u200d\U0001F680",
        # sentencepiece vocabularies (Gemma): spaces as \u2581, runs of spaces and newlines as
        # tokens, byte fallback for characters outside the vocabulary, the turn markers
        "\u2581",
        "\u2581\u2581already metaspace\u2581",
        "  two leading, three trailing   ",
        "\n\nHello\n\n\n\nworld\n",
        " \n \t\t\n",
        "tab\there\t\tand\t\t\tthere",
        "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n",
        "<start_of_turn><end_of_turn><bos><eos><pad><unk><mask>",
        " <start_of_turn> spaced <end_of_turn> ",
        "<unused0><unused99>[multimodal]",
        "<0x41><0xE2> literal byte-token spellings",
        "\U00020000\U0002A6D6 rare CJK \U0001FAE8 new emoji \U000E0041 tag",
        "\U0001F9CC\U0001FAE5 and unassigned \U0001FB00\U000F0000",
        "0123456789 00 000 9999999999",
        "a\u2581b \u2581 c",
    ]
    return corpus


def load_transformers_gguf(directory, name):
    """AutoTokenizer on a GGUF without torch: the metadata readers only touch torch dtypes."""
    import transformers  # noqa: F401  (decides torch is unavailable before the stub below)
    import transformers.modeling_gguf_pytorch_utils as gguf_utils
    from transformers import AutoTokenizer

    if "torch" not in sys.modules:
        fake = types.ModuleType("torch")
        fake.float32, fake.float16, fake.bfloat16 = "float32", "float16", "bfloat16"

        class _Any:
            pass

        fake.Tensor = fake.dtype = fake.device = _Any
        sys.modules["torch"] = fake
    gguf_utils.is_torch_available = lambda: True
    return AutoTokenizer.from_pretrained(str(directory), gguf_file=name)


def load_backend_gguf(directory, name):
    """The class AutoTokenizer resolves to for llama GGUFs, without needing a model config
    (call after load_transformers_gguf, which installs the torch stub)."""
    from transformers.tokenization_utils_tokenizers import TokenizersBackend

    return TokenizersBackend.from_pretrained(str(directory), gguf_file=name)


def reference_transformers(tok, corpus):
    result = {"ids": [], "ids_no_special": [], "decoded": [], "decoded_skip_special": []}
    for text in corpus:
        ids = tok(text, add_special_tokens=True)["input_ids"]
        result["ids"].append(ids)
        result["ids_no_special"].append(tok(text, add_special_tokens=False)["input_ids"])
        result["decoded"].append(tok.decode(ids, skip_special_tokens=False))
        result["decoded_skip_special"].append(tok.decode(ids, skip_special_tokens=True))
    return result


def reference_tokenizers(tok, corpus):
    result = {"ids": [], "ids_no_special": [], "decoded": [], "decoded_skip_special": []}
    for text in corpus:
        ids = tok.encode(text, add_special_tokens=True).ids
        result["ids"].append(ids)
        result["ids_no_special"].append(tok.encode(text, add_special_tokens=False).ids)
        result["decoded"].append(tok.decode(ids, skip_special_tokens=False))
        result["decoded_skip_special"].append(tok.decode(ids, skip_special_tokens=True))
    return result


def variant_patches():
    hub = {
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Digits", "individual_digits": True},
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
            ],
        }
    }
    llama3 = {
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": LLAMA3_SPLIT}, "behavior": "Isolated", "invert": False},
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
            ],
        },
        "model": {"ignore_merges": True},
        "post_processor": {
            "type": "Sequence",
            "processors": [
                {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
                {
                    "type": "TemplateProcessing",
                    "single": [{"SpecialToken": {"id": "<|im_start|>", "type_id": 0}},
                               {"Sequence": {"id": "A", "type_id": 0}}],
                    "pair": [{"SpecialToken": {"id": "<|im_start|>", "type_id": 0}},
                             {"Sequence": {"id": "A", "type_id": 0}},
                             {"SpecialToken": {"id": "<|im_start|>", "type_id": 1}},
                             {"Sequence": {"id": "B", "type_id": 1}}],
                    "special_tokens": {"<|im_start|>": {"id": "<|im_start|>", "ids": [1],
                                                         "tokens": ["<|im_start|>"]}},
                },
            ],
        },
    }
    # Exercises the other Split behaviours, a String pattern, invert, contiguous digits and
    # add_prefix_space; ids come from `tokenizers` itself, so any combination is a valid check.
    splits = {
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Split", "pattern": {"String": "\n"}, "behavior": "MergedWithPrevious", "invert": False},
                {"type": "Split", "pattern": {"Regex": r"[,;]"}, "behavior": "MergedWithNext", "invert": False},
                {"type": "Split", "pattern": {"Regex": r"\s"}, "behavior": "Contiguous", "invert": False},
                {"type": "Split", "pattern": {"String": "<|"}, "behavior": "Removed", "invert": False},
                {"type": "Split", "pattern": {"Regex": r"\p{Han}+"}, "behavior": "Removed", "invert": True},
                {"type": "Digits", "individual_digits": False},
                {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
            ],
        },
    }
    return {"hub_smollm2": hub, "llama3": llama3, "splits": splits}


# name -> (tokenizer.json under tests/data, config.json, tokenizer_config.json)
MODEL_TYPE_ROUTES = {
    "qwen2": ("tokenizer/smollm2_tokenizer.json", {"model_type": "qwen2"}, {}),
    "qwen3": ("tokenizer/smollm2_tokenizer.json", {"model_type": "qwen3"}, {"tokenizer_class": "Qwen2Tokenizer"}),
    "cohere": ("tokenizer/smollm2_tokenizer.json", {"model_type": "cohere"}, {}),
    "olmoe": ("tokenizer/smollm2_tokenizer.json", {"model_type": "olmoe"}, {}),
    "starcoder2": ("tokenizer/smollm2_tokenizer.json", {"model_type": "starcoder2"}, {}),
    "llama_sentencepiece": ("models/mixtral/tokenizer.json", {"model_type": "llama"},
                            {"tokenizer_class": "LlamaTokenizerFast"}),
    "gemma": ("models/gemma3_text/tokenizer.json", {"model_type": "gemma3_text"}, {}),
}
CHOICE_MODEL_TYPES = [None, "llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen3_moe", "gemma2", "gemma3_text",
                      "granite", "olmo2", "olmoe", "phi3", "stablelm", "starcoder2", "cohere"]
CHOICE_DECLARED = [None, "PreTrainedTokenizerFast", "TokenizersBackend", "GPT2Tokenizer", "GPT2TokenizerFast",
                   "Qwen2Tokenizer", "LlamaTokenizer", "LlamaTokenizerFast", "GPTNeoXTokenizerFast",
                   "GemmaTokenizerFast", "CohereTokenizerFast"]


def load_hf_directory(tokenizer_json, config, tokenizer_config):
    """AutoTokenizer on a scratch HF directory holding these three files (config.json only when
    given)."""
    from transformers import AutoTokenizer

    scratch = pathlib.Path(tempfile.mkdtemp())
    try:
        shutil.copy(tokenizer_json, scratch / "tokenizer.json")
        if config is not None:
            (scratch / "config.json").write_text(json.dumps(config))
        (scratch / "tokenizer_config.json").write_text(json.dumps(tokenizer_config))
        return AutoTokenizer.from_pretrained(str(scratch))
    finally:
        shutil.rmtree(scratch)


def model_type_references(corpus, expected):
    import transformers

    transformers.logging.set_verbosity_error()
    data = ROOT / "tests" / "data"
    routes = {}
    for name, (path, config, tokenizer_config) in MODEL_TYPE_ROUTES.items():
        tok = load_hf_directory(data / path, config, tokenizer_config)
        routes[name] = {"tokenizer_json": path, "config": config, "tokenizer_config": tokenizer_config,
                        "class": type(tok).__name__}
        expected["hf_" + name] = reference_transformers(tok, corpus)
    (OUT / "model_types.json").write_text(json.dumps(routes, indent=1) + "\n", encoding="utf-8")
    choices = []
    for byte_level, path in ((True, "tokenizer/smollm2_tokenizer.json"), (False, "models/mixtral/tokenizer.json")):
        for model_type in CHOICE_MODEL_TYPES:
            for declared in CHOICE_DECLARED:
                tok = load_hf_directory(data / path, None if model_type is None else {"model_type": model_type},
                                        {} if declared is None else {"tokenizer_class": declared})
                choices.append({"model_type": model_type, "declared": declared, "byte_level": byte_level,
                                "class": type(tok).__name__})
    lines = ["["] + ["  " + json.dumps(c) + ("," if i + 1 < len(choices) else "") for i, c in enumerate(choices)]
    (OUT / "class_choice.json").write_text("\n".join(lines + ["]"]) + "\n", encoding="utf-8")


def apply_patch(base, patch):
    data = copy.deepcopy(base)
    for key, value in patch.items():
        if key == "model":
            data["model"].update(value)
        else:
            data[key] = value
    return data


def write_tiny_gguf(path, smollm_json):
    """A small gpt2-type GGUF in the Llama-3 style: llama-bpe pre-tokenizer, BOS added."""
    from gguf import GGUFWriter

    vocab = smollm_json["model"]["vocab"]
    by_id = sorted(vocab.items(), key=lambda item: item[1])
    keep = 1200
    tokens = [token for token, index in by_id[:keep]]
    kept = set(tokens)
    merges = []
    for merge in smollm_json["model"]["merges"]:
        a, b = merge if isinstance(merge, list) else merge.split(" ")
        if a in kept and b in kept and a + b in kept:
            merges.append(f"{a} {b}")
    token_type = [3 if index < 17 else 1 for index in range(len(tokens))]
    # user-defined tokens (type 4): one in the byte alphabet, one with a space (skipped by
    # transformers because its re-spelled form is what the vocabulary holds)
    tokens += ["<think>", "</think>", "<my token>"]
    token_type += [4, 4, 4]
    # a control token outside the byte alphabet: transformers does not add it as special
    tokens += ["<｜fim▁hole｜>"]
    token_type += [3]
    writer = GGUFWriter(str(path), "llama")
    writer.add_string("general.name", "tiny-llama-bpe-tokenizer")
    writer.add_string("tokenizer.ggml.model", "gpt2")
    writer.add_string("tokenizer.ggml.pre", "llama-bpe")
    writer.add_array("tokenizer.ggml.tokens", tokens)
    writer.add_array("tokenizer.ggml.token_type", token_type)
    writer.add_array("tokenizer.ggml.merges", merges)
    writer.add_uint32("tokenizer.ggml.bos_token_id", 1)
    writer.add_uint32("tokenizer.ggml.eos_token_id", 2)
    writer.add_uint32("tokenizer.ggml.padding_token_id", 2)
    writer.add_bool("tokenizer.ggml.add_bos_token", True)
    writer.add_bool("tokenizer.ggml.add_eos_token", False)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def write_malformed_gguf(path):
    """A sentencepiece ("llama") vocabulary without scores, which the C++ side rejects with an
    Error naming tokenizer.ggml.scores (a llama-architecture file derives merges from them)."""
    from gguf import GGUFWriter

    writer = GGUFWriter(str(path), "llama")
    writer.add_string("tokenizer.ggml.model", "llama")
    writer.add_array("tokenizer.ggml.tokens", ["<unk>", "<s>", "</s>", "\u2581a"])
    writer.add_array("tokenizer.ggml.token_type", [2, 3, 3, 1])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def main():
    import tokenizers

    model = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_MODEL
    OUT.mkdir(parents=True, exist_ok=True)
    corpus = build_corpus()
    (OUT / "corpus.json").write_text(json.dumps(corpus, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")

    expected = {"corpus_size": len(corpus)}
    with tempfile.TemporaryDirectory() as scratch:
        scratch = pathlib.Path(scratch)
        os.symlink(model.resolve(), scratch / model.name)
        tok = load_transformers_gguf(scratch, model.name)
        expected["gguf"] = reference_transformers(tok, corpus)
        expected["gguf"]["vocab_size"] = len(tok)
        base = json.loads(tok.backend_tokenizer.to_str())
    base_path = OUT / "smollm2_tokenizer.json"
    base_path.write_text(json.dumps(base, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
    expected["json_base"] = reference_tokenizers(tokenizers.Tokenizer.from_file(str(base_path)), corpus)

    patches = variant_patches()
    (OUT / "variants.json").write_text(json.dumps(patches, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    for name, patch in patches.items():
        tok = tokenizers.Tokenizer.from_str(json.dumps(apply_patch(base, patch)))
        expected["json_" + name] = reference_tokenizers(tok, corpus)

    write_malformed_gguf(OUT / "malformed_llama_spm.gguf")
    gemma = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else GEMMA_MODEL
    if gemma.exists():
        with tempfile.TemporaryDirectory() as scratch:
            scratch = pathlib.Path(scratch)
            os.symlink(gemma.resolve(), scratch / gemma.name)
            tok = load_transformers_gguf(scratch, gemma.name)
            reference = reference_transformers(tok, corpus)
            reference["vocab_size"] = len(tok)
            reference["tokenizer_class"] = type(tok).__name__
            reference["corpus_size"] = len(corpus)
        lines = ["{"] + [
            json.dumps(key) + ": " + json.dumps(value, ensure_ascii=False, separators=(",", ":"))
            + ("," if index + 1 < len(reference) else "")
            for index, (key, value) in enumerate(reference.items())
        ] + ["}"]
        (OUT / "expected_gemma.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    else:
        print(f"note: {gemma} is absent (scripts/setup fetches it); expected_gemma.json not rewritten")
    tiny = OUT / "tiny_llama_bpe.gguf"
    write_tiny_gguf(tiny, base)
    with tempfile.TemporaryDirectory() as scratch:
        scratch = pathlib.Path(scratch)
        shutil.copy(tiny, scratch / tiny.name)
        tok = load_backend_gguf(scratch, tiny.name)
        expected["tiny_gguf"] = reference_transformers(tok, corpus)
        expected["tiny_gguf"]["vocab_size"] = len(tok)
        tiny_json = OUT / "tiny_llama_bpe.tokenizer.json"
        tiny_json.write_text(tok.backend_tokenizer.to_str() + "\n", encoding="utf-8")
    expected["json_tiny"] = reference_tokenizers(tokenizers.Tokenizer.from_file(str(tiny_json)), corpus)

    model_type_references(corpus, expected)

    lines = ["{"]
    items = list(expected.items())
    for index, (key, value) in enumerate(items):
        lines.append(json.dumps(key) + ": " + json.dumps(value, ensure_ascii=False, separators=(",", ":"))
                     + ("," if index + 1 < len(items) else ""))
    lines.append("}")
    (OUT / "expected.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(corpus)} corpus entries, routes/variants: {[k for k in expected if k != 'corpus_size']}")


if __name__ == "__main__":
    main()
