"""Vision-language models of real shape with random weights, for speed comparisons with llama.cpp
(llama-mtmd-cli): each an HF directory built with transformers' own classes (seeded), and the
GGUF pair llama.cpp's converter makes of it (the text model quantized with llama-quantize, the
image encoder file, mmproj, in F16).

    .venv/bin/python tools/peer/vlm_files.py [smolvlm_256m] [gemma3_4b] [--quant Q8_0]

  smolvlm_256m  SmolVLMForConditionalGeneration shaped as SmolVLM-256M-Instruct: a SigLIP-style
                encoder of width 768 (12 layers, 12 heads, MLP 3072) over 512 x 512 images of
                16 x 16 patches, pixel shuffle by 4 (64 tokens per tile); text SmolLM2-135M's
                shape (width 576, 30 layers, 9 heads, 3 KV heads, MLP 1536, 49280 tokens, tied)
  gemma3_4b     Gemma3ForConditionalGeneration shaped as gemma-3-4b-it: SigLIP so400m (width 1152,
                27 layers, 16 heads, MLP 4304) over 896 x 896 images of 14 x 14 patches pooled to
                256 tokens; text gemma3 4B (width 2560, 34 layers, 8 heads, 4 KV heads, head_dim
                256, MLP 10240, 262208 tokens)

Into $XLACEL_CACHE/bench-vlm/NAME/ (default ~/.cache/xlacel/bench-vlm): hf/ (config.json,
model.safetensors in bf16, tokenizer, chat template, preprocessor_config.json and
processor_config.json as the published checkpoints ship them), model-f16.gguf (deleted after
quantizing), model.<QUANT>.gguf, mmproj-f16.gguf, and image.jpg (a seeded 640 x 480 photo-like
test image). The tokenizers are the real vocabularies: SmolLM2's from the SmolLM2-135M GGUF, plus
SmolVLM's image tokens (<fake_token_around_image>, <image>, <end_of_utterance>, <global-img>,
<row_i_col_j>); Gemma 3's from the Gemma 3 270M GGUF (which has <start_of_image> and
<end_of_image>), written as a SentencePiece model with <image_soft_token> added at 262144 as
gemma-3-4b-it has it. llama.cpp's sources and tools: tools/peer/build_llama_cpp.
"""
import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
CACHE = pathlib.Path(os.environ.get("XLACEL_CACHE", pathlib.Path.home() / ".cache" / "xlacel"))
OUT = CACHE / "bench-vlm"
MODELS = CACHE / "models"
TEMPLATES = ROOT / "tools" / "reference" / "family_templates"
IMAGE_CONFIGS = ROOT / "tests" / "data" / "images" / "configs"
SEED = 0

SMOLVLM_TEMPLATE = (
    "<|im_start|>{% for message in messages %}{{message['role'] | capitalize}}{% if message['content'][0]"
    "['type'] == 'image' %}{{':'}}{% else %}{{': '}}{% endif %}{% for line in message['content'] %}{% if "
    "line['type'] == 'text' %}{{line['text']}}{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}"
    "{% endfor %}<end_of_utterance>\n{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}")
SMOLVLM_TOKENS = ["<fake_token_around_image>", "<image>", "<end_of_utterance>", "<global-img>"] + \
    [f"<row_{i}_col_{j}>" for i in range(1, 7) for j in range(1, 7)]


def llama_cpp():
    """The bin directory of the pinned llama.cpp build, and its sources."""
    out = subprocess.run([str(ROOT / "tools" / "peer" / "build_llama_cpp")], check=True, capture_output=True,
                         text=True).stdout.strip()
    bin_dir = pathlib.Path(out)
    return bin_dir, bin_dir.parents[1] / "vendor" / "llama.cpp"


def smolvlm_tokenizer(hf):
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(str(MODELS), gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")
    tok.add_special_tokens({"additional_special_tokens": SMOLVLM_TOKENS})
    tok.eos_token = "<end_of_utterance>"
    tok.chat_template = SMOLVLM_TEMPLATE
    tok.save_pretrained(hf)
    return tok


def smolvlm(hf):
    from transformers import SmolVLMConfig, SmolVLMForConditionalGeneration
    tok = smolvlm_tokenizer(hf)
    config = SmolVLMConfig(
        vision_config=dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
                           image_size=512, patch_size=16, layer_norm_eps=1e-6, hidden_act="gelu_pytorch_tanh",
                           num_channels=3),
        text_config=dict(model_type="llama", hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                         num_attention_heads=9, num_key_value_heads=3, head_dim=64, vocab_size=49280,
                         max_position_embeddings=8192, rms_norm_eps=1e-5, rope_theta=100000.0,
                         tie_word_embeddings=True, bos_token_id=tok.bos_token_id,
                         eos_token_id=tok.convert_tokens_to_ids("<end_of_utterance>"),
                         pad_token_id=tok.pad_token_id, architectures=["VLlama3ForCausalLM"]),
        scale_factor=4, image_token_id=tok.convert_tokens_to_ids("<image>"), tie_word_embeddings=True)
    build(config, SmolVLMForConditionalGeneration, hf)
    shutil.copy(IMAGE_CONFIGS / "smolvlm_256m.json", hf / "preprocessor_config.json")
    (hf / "processor_config.json").write_text(json.dumps({"image_seq_len": 64, "processor_class": "SmolVLMProcessor"},
                                                         indent=2) + "\n")
    return "smollm"


def varint(n):
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


# sentencepiece_model.proto's wire format (ModelProto: pieces 1, trainer_spec 2, normalizer_spec 3),
# written without the protobuf package.
def proto_field(number, payload):
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def proto_varint(number, value):
    return varint(number << 3) + varint(value)


def proto_float(number, value):
    return varint(number << 3 | 5) + np.float32(value).tobytes()


def gemma3_tokenizer(hf):
    """Gemma 3's SentencePiece vocabulary from the 270M GGUF as tokenizer.model, <image_soft_token>
    added at 262144 (tokenizer_config.json's added_tokens_decoder), its chat template."""
    sys.path.insert(0, str(llama_cpp()[1] / "gguf-py"))
    from gguf import GGUFReader
    reader = GGUFReader(str(MODELS / "gemma-3-270m-q4_k_m.gguf"))
    fields = reader.fields
    tokens = [bytes(fields["tokenizer.ggml.tokens"].parts[i]).decode("utf-8")
              for i in fields["tokenizer.ggml.tokens"].data]
    scores = [float(fields["tokenizer.ggml.scores"].parts[i][0]) for i in fields["tokenizer.ggml.scores"].data]
    types = [int(fields["tokenizer.ggml.token_type"].parts[i][0]) for i in fields["tokenizer.ggml.token_type"].data]
    # GGUF's token types are SentencePiece's; BPE with byte fallback, no normalisation but spaces as
    # U+2581 (Gemma's tokenizer.model).
    pieces = [proto_field(1, proto_field(1, piece.encode()) + proto_float(2, score) + proto_varint(3, kind))
              for piece, score, kind in zip(tokens, scores, types)]
    trainer = (proto_varint(3, 2) + proto_varint(4, len(tokens)) + proto_varint(35, 1) + proto_varint(40, 3)
               + proto_varint(41, 2) + proto_varint(42, 1) + proto_varint(43, 0))
    normalizer = proto_field(1, b"identity") + proto_varint(3, 0) + proto_varint(4, 0) + proto_varint(5, 1)
    (hf / "tokenizer.model").write_bytes(b"".join(pieces) + proto_field(2, trainer) + proto_field(3, normalizer))
    soft = len(tokens)
    config = {
        "added_tokens_decoder": {str(soft): {"content": "<image_soft_token>", "lstrip": False, "normalized": False,
                                             "rstrip": False, "single_word": False, "special": True}},
        "bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>", "unk_token": "<unk>",
        "boi_token": "<start_of_image>", "eoi_token": "<end_of_image>", "image_token": "<image_soft_token>",
        "add_bos_token": True, "add_eos_token": False, "tokenizer_class": "GemmaTokenizer",
        "chat_template": (TEMPLATES / "gemma3_text.jinja").read_text(),
    }
    (hf / "tokenizer_config.json").write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    (hf / "special_tokens_map.json").write_text(json.dumps(
        {k: config[k] for k in ("bos_token", "eos_token", "pad_token", "unk_token")}, indent=2) + "\n")
    return {t: tokens.index(t) for t in ("<start_of_image>", "<end_of_image>")}, soft


def gemma3(hf):
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration
    image_ids, soft = gemma3_tokenizer(hf)
    config = Gemma3Config(
        vision_config=dict(model_type="siglip_vision_model", hidden_size=1152, intermediate_size=4304,
                           num_hidden_layers=27, num_attention_heads=16, image_size=896, patch_size=14,
                           layer_norm_eps=1e-6, vision_use_head=False),
        text_config=dict(model_type="gemma3_text", hidden_size=2560, intermediate_size=10240, num_hidden_layers=34,
                         num_attention_heads=8, num_key_value_heads=4, head_dim=256, vocab_size=262208,
                         query_pre_attn_scalar=256, sliding_window=1024, max_position_embeddings=131072,
                         rope_theta=1_000_000.0, rope_local_base_freq=10_000.0,
                         rope_scaling={"factor": 8.0, "rope_type": "linear"}, bos_token_id=2, eos_token_id=1,
                         pad_token_id=0),
        mm_tokens_per_image=256, boi_token_index=image_ids["<start_of_image>"],
        eoi_token_index=image_ids["<end_of_image>"], image_token_index=soft)
    build(config, Gemma3ForConditionalGeneration, hf)
    shutil.copy(IMAGE_CONFIGS / "gemma3_4b.json", hf / "preprocessor_config.json")
    (hf / "processor_config.json").write_text(json.dumps({"image_seq_length": 256, "processor_class": "Gemma3Processor"},
                                                         indent=2) + "\n")
    return "default"


def build(config, model_class, hf):
    """Seeded weights in bf16 as transformers initialises them, saved as safetensors."""
    torch.manual_seed(SEED)
    torch.set_default_dtype(torch.bfloat16)
    try:
        model = model_class(config).eval()
    finally:
        torch.set_default_dtype(torch.float32)
    model.save_pretrained(hf, safe_serialization=True)
    print(f"{hf}: {sum(p.numel() for p in model.parameters()) / 1e6:.0f}M parameters", flush=True)


def test_image(path):
    """A seeded 640 x 480 JPEG: smooth colour fields plus noise, as a photo compresses."""
    from PIL import Image
    rng = np.random.default_rng(SEED)
    y, x = np.mgrid[0:480, 0:640] / 480.0
    rgb = np.stack([np.sin(3 * x + 1), np.cos(2 * y), np.sin(x * y * 5)], axis=-1) * 100 + 128
    rgb += rng.normal(0, 12, rgb.shape)
    Image.fromarray(np.clip(rgb, 0, 255).astype(np.uint8)).save(path, quality=90)


def convert(name, make, quant):
    bin_dir, sources = llama_cpp()
    out = OUT / name
    hf = out / "hf"
    if not (hf / "model.safetensors").exists() and not (hf / "model.safetensors.index.json").exists():
        shutil.rmtree(hf, ignore_errors=True)
        hf.mkdir(parents=True)
        (hf / ".pre").write_text(make(hf))
    pre = (hf / ".pre").read_text()
    python = sys.executable
    # The converter knows BPE pre-tokenizers by a hash of their output: the vocabulary's own name.
    run_converter = ("import sys; sys.argv = sys.argv[1:]; sys.path.insert(0, {src!r}); import convert_hf_to_gguf; "
                     "from conversion.base import TextModel; TextModel.get_vocab_base_pre = lambda self, t: {pre!r}; "
                     "convert_hf_to_gguf.main()").format(src=str(sources), pre=pre)
    f16 = out / "model-f16.gguf"
    quantized = out / f"model.{quant}.gguf"
    mmproj = out / "mmproj-f16.gguf"
    if not quantized.exists():
        subprocess.run([python, "-c", run_converter, "convert_hf_to_gguf.py", str(hf), "--outtype", "f16",
                        "--outfile", str(f16)], check=True)
        subprocess.run(["nice", str(bin_dir / "llama-quantize"), str(f16), str(quantized), quant], check=True)
        f16.unlink()
    if not mmproj.exists():
        subprocess.run([python, "-c", run_converter, "convert_hf_to_gguf.py", str(hf), "--outtype", "f16",
                        "--outfile", str(mmproj), "--mmproj"], check=True)
    if not (out / "image.jpg").exists():
        test_image(out / "image.jpg")
    for f in (quantized, mmproj, out / "image.jpg"):
        print(f"{f}: {f.stat().st_size / 2**20:.1f} MiB")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="*", default=["smolvlm_256m"], choices=["smolvlm_256m", "gemma3_4b"])
    parser.add_argument("--quant", default="Q8_0", help="llama-quantize type of the text model (Q8_0, Q4_K_M)")
    args = parser.parse_args()
    makers = {"smolvlm_256m": smolvlm, "gemma3_4b": gemma3}
    for name in args.models:
        convert(name, makers[name], args.quant)


if __name__ == "__main__":
    main()
