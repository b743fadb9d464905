#!/usr/bin/env python3
"""Writes a Hugging Face Llama directory with seeded random weights, for speed measurements.

    tools/gpu/make_random_llama.py OUT_DIR [--preset llama-3.2-1b|tiny] [--dtype bfloat16|float32]
                                           [--seed 0]

Only the shapes matter for decode speed, so no real checkpoint is needed (the GPU machine has no
network): the preset llama-3.2-1b has Llama-3.2-1B's config (16 layers, hidden 2048, 32 heads,
8 KV heads, vocab 128256, tied embeddings, llama3 RoPE), about 2.5 GB in bf16. The tiny preset
is for checking this script and the loaders on a CPU machine (its vocabulary is the
tokenizer's). The preset olmoe-small is a mixture of experts of OLMoE-1B-7B's proportions (64
experts, 8 per token, expert width half the hidden size, untied embeddings) at a quarter of its
width and 4 of its 16 layers (~150M parameters), for measuring what decode reads of its experts. Weights are N(0, 0.02) from numpy's
seeded generator (norm weights 1), so two runs with one seed write identical files. numpy and
ml_dtypes only (no torch), so it runs in the project venv and on the GPU machine alike; HF
transformers loads the result (config.json, generation_config.json, model.safetensors), and so
does xlacel. Llama 3's tokenizer is not at hand offline, so tokenizer.json is SmolLM2's (from
tests/data; `--tokenizer` for another): its ids are all below the vocabulary size, which is all
`xlacel bench` needs of it (it tokenizes a fixed text for its prompt).
"""
import argparse
import json
import os
import shutil
import struct

import ml_dtypes
import numpy as np

PRESETS = {
    "llama-3.2-1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                         num_attention_heads=32, num_key_value_heads=8, head_dim=64,
                         vocab_size=128256, tie_word_embeddings=True,
                         max_position_embeddings=131072, original_max_position_embeddings=8192,
                         factor=32.0, bos_token_id=128000, eos_token_id=128001),
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=49152,
                 tie_word_embeddings=True, max_position_embeddings=2048,
                 original_max_position_embeddings=64, factor=8.0, bos_token_id=1,
                 eos_token_id=2),
    "olmoe-small": dict(hidden_size=512, intermediate_size=256, num_hidden_layers=4,
                        num_attention_heads=8, num_key_value_heads=8, head_dim=64,
                        vocab_size=50304, tie_word_embeddings=False,
                        max_position_embeddings=4096, num_experts=64, num_experts_per_tok=8,
                        bos_token_id=1, eos_token_id=2),
}

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_TOKENIZER = os.path.join(ROOT, "tests", "data", "tokenizer", "smollm2_tokenizer.json")
SAFETENSORS_DTYPE = {"bfloat16": "BF16", "float32": "F32"}
NUMPY_DTYPE = {"bfloat16": ml_dtypes.bfloat16, "float32": np.float32}


def moe_config_json(p, dtype):
    return {
        "architectures": ["OlmoeForCausalLM"], "model_type": "olmoe", "dtype": dtype,
        "attention_bias": False, "attention_dropout": 0.0, "clip_qkv": None,
        "hidden_act": "silu", "initializer_range": 0.02, "rms_norm_eps": 1e-05,
        "norm_topk_prob": False, "use_cache": True, "rope_theta": 10000.0,
        "rope_parameters": {"rope_theta": 10000.0, "rope_type": "default"},
        **{k: p[k] for k in ("hidden_size", "intermediate_size", "num_hidden_layers",
                             "num_attention_heads", "num_key_value_heads", "head_dim",
                             "vocab_size", "tie_word_embeddings", "max_position_embeddings",
                             "num_experts", "num_experts_per_tok", "bos_token_id",
                             "eos_token_id")},
    }


def config_json(p, dtype):
    if "num_experts" in p:
        return moe_config_json(p, dtype)
    rope = {"factor": p["factor"], "high_freq_factor": 4.0, "low_freq_factor": 1.0,
            "original_max_position_embeddings": p["original_max_position_embeddings"],
            "rope_type": "llama3"}
    return {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "dtype": dtype,
        "attention_bias": False, "attention_dropout": 0.0, "mlp_bias": False,
        "hidden_act": "silu", "initializer_range": 0.02, "rms_norm_eps": 1e-05,
        "pretraining_tp": 1, "use_cache": True, "rope_theta": 500000.0,
        "rope_scaling": rope, "rope_parameters": dict(rope, rope_theta=500000.0),
        **{k: p[k] for k in ("hidden_size", "intermediate_size", "num_hidden_layers",
                             "num_attention_heads", "num_key_value_heads", "head_dim",
                             "vocab_size", "tie_word_embeddings", "max_position_embeddings",
                             "bos_token_id", "eos_token_id")},
    }


def tensor_shapes(p):
    """(name, shape, is_norm) in the order HF's LlamaForCausalLM (or OlmoeForCausalLM) names
    them."""
    h, i, d = p["hidden_size"], p["intermediate_size"], p["head_dim"]
    q, kv = p["num_attention_heads"] * d, p["num_key_value_heads"] * d
    yield "model.embed_tokens.weight", (p["vocab_size"], h), False
    for layer in range(p["num_hidden_layers"]):
        prefix = f"model.layers.{layer}."
        yield prefix + "input_layernorm.weight", (h,), True
        yield prefix + "self_attn.q_proj.weight", (q, h), False
        yield prefix + "self_attn.k_proj.weight", (kv, h), False
        yield prefix + "self_attn.v_proj.weight", (kv, h), False
        yield prefix + "self_attn.o_proj.weight", (h, q), False
        yield prefix + "post_attention_layernorm.weight", (h,), True
        if "num_experts" not in p:
            yield prefix + "mlp.gate_proj.weight", (i, h), False
            yield prefix + "mlp.up_proj.weight", (i, h), False
            yield prefix + "mlp.down_proj.weight", (h, i), False
            continue
        # OLMoE: q/k norms across heads, a router, then each expert's MLP.
        yield prefix + "self_attn.q_norm.weight", (q,), True
        yield prefix + "self_attn.k_norm.weight", (kv,), True
        yield prefix + "mlp.gate.weight", (p["num_experts"], h), False
        for e in range(p["num_experts"]):
            for name, shape in (("gate_proj", (i, h)), ("up_proj", (i, h)), ("down_proj", (h, i))):
                yield prefix + f"mlp.experts.{e}.{name}.weight", shape, False
    yield "model.norm.weight", (h,), True
    if not p["tie_word_embeddings"]:
        yield "lm_head.weight", (p["vocab_size"], h), False


def write_safetensors(path, p, dtype, seed):
    shapes = list(tensor_shapes(p))
    itemsize = np.dtype(NUMPY_DTYPE[dtype]).itemsize
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape, _ in shapes:
        size = int(np.prod(shape)) * itemsize
        header[name] = {"dtype": SAFETENSORS_DTYPE[dtype], "shape": list(shape),
                        "data_offsets": [offset, offset + size]}
        offset += size
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)  # the data starts 8-byte aligned
    rng = np.random.default_rng(seed)
    with open(path + ".part", "wb") as out:
        out.write(struct.pack("<Q", len(encoded)))
        out.write(encoded)
        for _, shape, is_norm in shapes:
            if is_norm:
                values = np.ones(shape, dtype=np.float32)
            else:
                values = rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02)
            out.write(values.astype(NUMPY_DTYPE[dtype]).tobytes())
    os.replace(path + ".part", path)
    return offset


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="llama-3.2-1b")
    parser.add_argument("--dtype", choices=sorted(SAFETENSORS_DTYPE), default="bfloat16")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tokenizer", default=DEFAULT_TOKENIZER, help="a tokenizer.json to copy")
    args = parser.parse_args()
    p = PRESETS[args.preset]
    os.makedirs(args.out_dir, exist_ok=True)
    with open(os.path.join(args.out_dir, "config.json"), "w") as f:
        json.dump(config_json(p, args.dtype), f, indent=2)
    with open(os.path.join(args.out_dir, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": p["bos_token_id"], "eos_token_id": p["eos_token_id"],
                   "do_sample": False}, f, indent=2)
    shutil.copy(args.tokenizer, os.path.join(args.out_dir, "tokenizer.json"))
    size = write_safetensors(os.path.join(args.out_dir, "model.safetensors"), p, args.dtype,
                             args.seed)
    print(f"{args.out_dir}: {args.preset} {args.dtype} seed {args.seed}, "
          f"{size / 2**20:.1f} MiB of weights")


if __name__ == "__main__":
    main()
