"""The tiny gpt-oss as OpenAI publishes gpt-oss: an HF directory whose experts are MXFP4 blocks.

    .venv/bin/python tools/reference/gpt_oss_mxfp4_hf.py

Writes tests/data/models/converted/gpt_oss_mxfp4_hf/: the weights of converted/gpt_oss_mxfp4.gguf
(tools/reference/gpt_oss_mxfp4.py) in the published checkpoints' layout, so that the greedy
references of converted/gpt_oss_mxfp4.json hold for it too:
- each layer's mlp.experts.gate_up_proj_blocks [E, 2 inter, hidden / 32, 16] and _scales [E,
  2 inter, hidden / 32] (uint8; gate and up rows interleaved, gate first), down_proj_blocks [E,
  hidden, inter / 32, 16] and _scales: the GGUF's MXFP4 codes and exponents as they are, each
  block's 32 codes two per byte, element 2i in byte i's low nibble and 2i + 1 in its high one;
- every other tensor as gguf-py dequantizes it (float32), in HF's layout;
- config.json with "quantization_config": {"quant_method": "mxfp4", ...}.
The check that the layout is the published one: transformers loads the directory (dequantizing the
experts, as it does without a GPU) to exactly the weights the references were computed from.
"""
import json
import pathlib
import shutil
import sys

import numpy as np
import torch
from safetensors.numpy import save_file
from transformers import AutoModelForCausalLM

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import converted_gguf  # noqa: E402
import gpt_oss_mxfp4  # noqa: E402

import gguf  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
HF_DIR = ROOT / "tests" / "data" / "models" / "gpt_oss"
OUT = converted_gguf.OUT / "gpt_oss_mxfp4_hf"
MXFP4_BLOCK_BYTES = 17  # one E8M0 exponent byte, then 16 bytes of codes


def published_blocks(raw, rows, columns):
    """A GGUF MXFP4 tensor's bytes [E, rows, columns / 32 * 17] as HF's blocks and scales.

    GGUF's block: the exponent, then byte j holding element j (low nibble) and j + 16 (high)."""
    experts = raw.shape[0]
    blocks = raw.reshape(experts, rows, columns // 32, MXFP4_BLOCK_BYTES)
    scales = blocks[..., 0].copy()
    packed = blocks[..., 1:]
    codes = np.concatenate([packed & 0x0F, packed >> 4], axis=-1)  # element order 0 .. 31
    hf = (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8)
    return np.ascontiguousarray(hf), np.ascontiguousarray(scales)


def main():
    config = json.loads((HF_DIR / "config.json").read_text())
    layers = config["num_hidden_layers"]
    state = gpt_oss_mxfp4.hf_state_dict(gpt_oss_mxfp4.OUT_GGUF, layers)
    tensors = {t.name: t for t in gguf.GGUFReader(str(gpt_oss_mxfp4.OUT_GGUF)).tensors}
    out = {}
    for name, value in state.items():
        if name.endswith("mlp.experts.gate_up_proj") or name.endswith("mlp.experts.down_proj"):
            continue
        out[name] = value.numpy().astype(np.float32)
    for l in range(layers):
        h, b = f"model.layers.{l}.mlp.experts.", f"blk.{l}."
        raw = {p: np.asarray(tensors[b + f"ffn_{p}_exps.weight"].data, dtype=np.uint8)
               for p in ("gate", "up", "down")}
        for p, t in raw.items():
            assert tensors[b + f"ffn_{p}_exps.weight"].tensor_type.name == "MXFP4", p
        inter, hidden = config["intermediate_size"], config["hidden_size"]
        gate_blocks, gate_scales = published_blocks(raw["gate"], inter, hidden)
        up_blocks, up_scales = published_blocks(raw["up"], inter, hidden)
        blocks = np.empty((gate_blocks.shape[0], 2 * inter) + gate_blocks.shape[2:], np.uint8)
        scales = np.empty((gate_scales.shape[0], 2 * inter) + gate_scales.shape[2:], np.uint8)
        blocks[:, 0::2], blocks[:, 1::2] = gate_blocks, up_blocks
        scales[:, 0::2], scales[:, 1::2] = gate_scales, up_scales
        out[h + "gate_up_proj_blocks"], out[h + "gate_up_proj_scales"] = blocks, scales
        out[h + "down_proj_blocks"], out[h + "down_proj_scales"] = published_blocks(raw["down"], hidden, inter)

    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    config["quantization_config"] = {
        "quant_method": "mxfp4",
        "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                   "model.embed_tokens", "lm_head"],
    }
    (OUT / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    for name in ("generation_config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(HF_DIR / name, OUT / name)
    save_file(out, str(OUT / "model.safetensors"), metadata={"format": "pt"})

    # transformers reads the directory to the very weights of the references.
    model = AutoModelForCausalLM.from_pretrained(str(OUT), dtype=torch.float32)
    loaded = {k: v.float() for k, v in model.state_dict().items()}
    assert loaded.keys() == state.keys(), sorted(set(loaded) ^ set(state))
    for k in state:
        assert torch.equal(loaded[k], state[k]), f"{k}: transformers reads other values"
    size = sum(p.stat().st_size for p in OUT.iterdir())
    print(f"{OUT.relative_to(ROOT)}: {size // 1024} KiB, transformers reads the references' weights")


if __name__ == "__main__":
    main()
