"""A tiny Llama in every GGUF format that `--weights auto` keeps resident, and the greedy references
HF `transformers` computes from each file (float32, CPU, eager attention).

Writes (checked in, small, deterministic) tests/data/models/tiny_quantized/:
  <type>.gguf   the same tiny random-weight Llama with every 2-D weight matrix (embedding, q/k/v/o,
                gate/up/down, untied output) stored as <type>, norms in F32 as llama.cpp stores
                them; llama-architecture metadata, no tokenizer (the prompts are id lists); q/k
                rows permuted as llama.cpp's converter does. Types: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
                Q4_K, Q5_K, Q6_K, F16, BF16 (lower-case file names)
  <type>.json   48 greedy tokens for 4 id-list prompts (bos 1 + seeded random ids; lengths 5, 17,
                70, 150), from AutoModelForCausalLM.from_pretrained(dir, gguf_file=...) (every
                tensor dequantized by gguf-py to float32); the schema of
                tests/data/models/tiny_llama3_reference.json plus `gguf` (type, bytes, sha256 and
                whether HF's weights equal gguf-py's dequantization of the file)
Usage: .venv/bin/python tools/reference/quantized_gguf.py [TYPE...]   (default: all)

The shape is a multiple of 256 wherever a matrix row runs (hidden, intermediate, heads x
head_dim), because a K-quant block spans 256 elements of a row; one layer keeps the F16 and BF16
files near 1 MB. gguf-py quantizes the 32-element formats and BF16; the K-quants it can only
dequantize, so `quantize_k` below writes valid blocks by a plain min/max rule (not llama.cpp's
search, which only lowers the error: the test needs valid blocks, and HF dequantizes whatever
is stored).
"""
import hashlib
import pathlib
import sys
import time

import numpy as np
import torch
from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import families  # noqa: E402  (the id-list prompts)
import llama  # noqa: E402  (greedy loop, JSON writer, shared metadata, llama.cpp's q/k permutation)

import gguf  # noqa: E402  (after transformers, which imports it too)
from gguf import GGMLQuantizationType as QType  # noqa: E402
from gguf.quants import dequantize, quant_shape_to_byte_shape, quantize  # noqa: E402

OUT = llama.OUT / "tiny_quantized"
TYPES = ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K", "F16", "BF16"]
K_QUANTS = ("Q4_K", "Q5_K", "Q6_K")
# The seed makes every type's greedy steps clear of near-ties: the smallest top-2 logit gap over
# all types and prompts is 1.2e-3 (seed 0: 1.4e-5), ~100x HF's own float32 noise
# (full_recompute), so a mismatch means a wrong weight, not summation order.
INIT_SEED = 5
MIN_TOP2_GAP = 1e-3
INITIALIZER_RANGE = 0.1  # hidden 256: half the 64-wide tiny models' 0.2 keeps logits as spread
ROPE_THETA = 10000.0
# llama.py's tiny Llama, resized so rows are a multiple of 256 (K-quant blocks), one layer.
SHAPE = {**llama.TINY_CONFIG, **dict(
    vocab_size=256,
    hidden_size=256,
    intermediate_size=256,
    num_hidden_layers=1,
    head_dim=64,
    initializer_range=INITIALIZER_RANGE,
)}
# Largest relative RMS error of a matrix after quantization (a sanity bound: a wrongly packed
# block gives errors near 1).
MAX_RELATIVE_ERROR = {"Q8_0": 0.01, "Q4_0": 0.2, "Q4_1": 0.2, "Q5_0": 0.1, "Q5_1": 0.1,
                      "Q4_K": 0.2, "Q5_K": 0.1, "Q6_K": 0.05, "F16": 0.001, "BF16": 0.01}


# ---------------------------------------------------------------- the model and its GGUF names

def build():
    config = LlamaConfig(**SHAPE, rope_parameters={"rope_type": "default", "rope_theta": ROPE_THETA})
    torch.manual_seed(INIT_SEED)
    model = LlamaForCausalLM(config).to(torch.float32).eval()
    g = torch.Generator().manual_seed(INIT_SEED + 1)
    for name, p in model.named_parameters():
        if name.endswith("norm.weight"):
            p.copy_(1.0 + 0.25 * torch.randn(p.shape, generator=g))
    return model


def gguf_tensors(model):
    """(GGUF name, float32 array as the GGUF stores it: q/k rows permuted) per parameter."""
    cfg = model.config
    sd = {k: v.detach().numpy().astype(np.float32) for k, v in model.state_dict().items()}
    out = [("token_embd.weight", sd["model.embed_tokens.weight"])]
    hf = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
          "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
          "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
          "ffn_down": "mlp.down_proj"}
    heads = {"attn_q": cfg.num_attention_heads, "attn_k": cfg.num_key_value_heads}
    for layer in range(cfg.num_hidden_layers):
        for name, hf_name in hf.items():
            w = sd[f"model.layers.{layer}.{hf_name}.weight"]
            if name in heads:
                w = llama.permute_like_llama_cpp(w, heads[name])
            out.append((f"blk.{layer}.{name}.weight", w))
    out.append(("output_norm.weight", sd["model.norm.weight"]))
    out.append(("output.weight", sd["lm_head.weight"]))
    return out


# ---------------------------------------------------------------- K-quant blocks (QK_K = 256)

def f16_bytes(x):
    return x.astype(np.float16).view(np.uint8).reshape(len(x), 2)


def divide(a, b):
    """a / b where b != 0, else 0 (all-zero sub-blocks)."""
    return np.divide(a, b, out=np.zeros(np.broadcast_shapes(a.shape, b.shape), np.float32), where=b != 0)


def pack_k_scales(sc, mn):
    """Q4_K/Q5_K's 12 bytes of 6-bit scales and minimums (the layout gguf-py's get_scale_min reads)."""
    out = np.empty((len(sc), 12), np.uint8)
    out[:, 0:4] = sc[:, 0:4] | ((sc[:, 4:8] >> 4) << 6)
    out[:, 4:8] = mn[:, 0:4] | ((mn[:, 4:8] >> 4) << 6)
    out[:, 8:12] = (sc[:, 4:8] & 0x0F) | ((mn[:, 4:8] & 0x0F) << 4)
    return out


def quantize_k_affine(blocks, bits):
    """Q4_K (bits 4) / Q5_K (bits 5): 8 sub-blocks of 32, value = d * sc * q - dmin * m."""
    n, nmax = len(blocks), (1 << bits) - 1
    sub = blocks.reshape(n, 8, 32)
    lows = -np.minimum(sub.min(-1), 0)  # the minimum is never above 0, as llama.cpp's
    steps = (sub.max(-1) + lows) / nmax
    d = (steps.max(-1) / 63).astype(np.float16)
    dmin = (lows.max(-1) / 63).astype(np.float16)
    sc = np.clip(np.rint(divide(steps, d.astype(np.float32)[:, None])), 0, 63).astype(np.uint8)
    mn = np.clip(np.rint(divide(lows, dmin.astype(np.float32)[:, None])), 0, 63).astype(np.uint8)
    scale = d.astype(np.float32)[:, None] * sc
    offset = dmin.astype(np.float32)[:, None] * mn
    q = np.clip(np.rint(divide(sub + offset[..., None], scale[..., None])), 0, nmax).astype(np.uint8)
    low = (q & 0x0F).reshape(n, 4, 2, 32)  # byte i of group g: sub-block 2g low, 2g + 1 high nibble
    qs = (low[:, :, 0] | (low[:, :, 1] << 4)).reshape(n, 128)
    parts = [f16_bytes(d), f16_bytes(dmin), pack_k_scales(sc, mn)]
    if bits == 5:  # bit b of high byte i: the fifth bit of element i of sub-block b
        high = (q >> 4) & 1
        parts.append(np.bitwise_or.reduce(high << np.arange(8, dtype=np.uint8)[None, :, None], axis=1))
    parts.append(qs)
    return np.concatenate(parts, axis=1)


def quantize_q6_k(blocks):
    """Q6_K: 16 sub-blocks of 16, value = d * scale * (q - 32), q in [0, 63], scale int8."""
    n = len(blocks)
    sub = blocks.reshape(n, 16, 16)
    steps = np.abs(sub).max(-1) / 31
    d = (steps.max(-1) / 127).astype(np.float16)
    scales = np.clip(np.rint(divide(steps, d.astype(np.float32)[:, None])), -128, 127).astype(np.int8)
    scale = d.astype(np.float32)[:, None] * scales
    q = (np.clip(np.rint(divide(sub, scale[..., None])), -32, 31) + 32).astype(np.uint8)
    rows = q.reshape(n, 2, 4, 32)  # [half, row of 32 in the half, element]
    low, high = rows & 0x0F, rows >> 4
    ql = np.concatenate([low[:, :, 0] | (low[:, :, 2] << 4), low[:, :, 1] | (low[:, :, 3] << 4)], axis=2)
    qh = high[:, :, 0] | (high[:, :, 1] << 2) | (high[:, :, 2] << 4) | (high[:, :, 3] << 6)
    return np.concatenate([ql.reshape(n, 128), qh.reshape(n, 64), scales.view(np.uint8), f16_bytes(d)], axis=1)


def quantize_k(w, type_name):
    qtype = QType[type_name]
    blocks = w.astype(np.float32).reshape(-1, gguf.QK_K)
    packed = quantize_q6_k(blocks) if type_name == "Q6_K" else quantize_k_affine(blocks, int(type_name[1]))
    return packed.reshape(quant_shape_to_byte_shape(w.shape, qtype))


def stored(w, type_name):
    """The tensor as written: (array, GGUF type); 1-D tensors stay F32."""
    if w.ndim == 1:
        return w, QType.F32
    if type_name == "F16":
        return w.astype(np.float16), QType.F16
    if type_name in K_QUANTS:
        return quantize_k(w, type_name), QType[type_name]
    return quantize(w, QType[type_name]), QType[type_name]


# ---------------------------------------------------------------- files and references

def write_gguf(path, model, type_name):
    cfg = model.config
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name(f"tiny-llama-{type_name.lower()}")
    writer.add_context_length(cfg.max_position_embeddings)
    writer.add_embedding_length(cfg.hidden_size)
    writer.add_block_count(cfg.num_hidden_layers)
    writer.add_feed_forward_length(cfg.intermediate_size)
    writer.add_head_count(cfg.num_attention_heads)
    writer.add_head_count_kv(cfg.num_key_value_heads)
    writer.add_key_length(cfg.head_dim)
    writer.add_value_length(cfg.head_dim)
    writer.add_rope_dimension_count(cfg.head_dim)
    writer.add_rope_freq_base(ROPE_THETA)
    writer.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    writer.add_vocab_size(cfg.vocab_size)
    writer.add_bos_token_id(cfg.bos_token_id)
    writer.add_eos_token_id(cfg.eos_token_id)
    errors = {}
    for name, w in gguf_tensors(model):
        data, qtype = stored(w, type_name)
        if qtype != QType.F32:
            back = dequantize(data, qtype).reshape(w.shape)
            errors[name] = float(np.sqrt(np.mean((back - w) ** 2)) / np.sqrt(np.mean(w ** 2)))
        writer.add_tensor(name, data, raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    worst = max(errors.values())
    assert worst <= MAX_RELATIVE_ERROR[type_name], f"{type_name}: relative RMS error {worst}"
    return worst


def hf_equals_gguf_py(path, model):
    """Whether every weight HF loaded equals gguf-py's dequantization of the file (q/k permuted back)."""
    reader = gguf.GGUFReader(str(path))
    tensors = {t.name: t for t in reader.tensors}
    equal = True
    for name, w in gguf_tensors(model):
        t = tensors[name]
        equal = equal and np.array_equal(dequantize(t.data, t.tensor_type).reshape(w.shape), w)
    return bool(equal), sorted({t.tensor_type.name for t in reader.tensors})


def reference(type_name):
    t0 = time.time()
    path = OUT / f"{type_name.lower()}.gguf"
    built = build()
    relative_error = write_gguf(path, built, type_name)
    path.chmod(0o644)
    model = AutoModelForCausalLM.from_pretrained(str(OUT), gguf_file=path.name, dtype=torch.float32,
                                                 attn_implementation=llama.ATTN)
    model.eval()
    assert model.config._attn_implementation == llama.ATTN
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert not model.config.tie_word_embeddings
    equal, tensor_types = hf_equals_gguf_py(path, model)
    assert equal, f"{type_name}: HF's weights differ from gguf-py's dequantization"

    results = []
    for ids in families.prompts(SHAPE["vocab_size"]):
        r = llama.greedy(model, ids, [2])
        entry = {"name": f"random_{len(ids)}", "kind": "ids", "text": None}
        entry.update(r)
        entry["steps"] = entry.pop("steps")
        results.append(entry)
        distinct = len(set(r["output_ids"]))
        assert distinct > 4, f"{type_name}: degenerate greedy output for prompt {len(ids)}: {r['output_ids']}"
        assert r["min_top2_gap"] >= MIN_TOP2_GAP, f"{type_name}: near-tie in prompt {len(ids)}: {r['min_top2_gap']}"
        print(f"  {type_name} random_{len(ids)}: {distinct} distinct output ids, min gap {r['min_top2_gap']} at "
              f"step {r['min_top2_gap_step']}, recompute agrees {r['full_recompute']['argmax_agrees']}")

    data = path.read_bytes()
    meta = llama.common_meta()
    meta.update({
        "generator": "tools/reference/quantized_gguf.py",
        "model": path.name,
        "model_sha256": hashlib.sha256(data).hexdigest(),
        "loader": f"AutoModelForCausalLM.from_pretrained(tests/data/models/tiny_quantized, gguf_file={path.name!r}, "
                  f"dtype=torch.float32, attn_implementation={llama.ATTN!r})",
        "attn_implementation": model.config._attn_implementation,
        "model_class": type(model).__name__,
        "init": f"torch.manual_seed({INIT_SEED}); LlamaForCausalLM(config) with initializer_range "
                f"{INITIALIZER_RANGE}; RMSNorm weights set to 1 + 0.25*randn (generator seed {INIT_SEED + 1}); "
                f"every 2-D weight stored as {type_name}"
                + (" by quantized_gguf.py's min/max K-quant rule" if type_name in K_QUANTS else " by gguf-py"),
        "config": {k: model.config.to_dict().get(k) for k in (
            "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
            "num_key_value_heads", "head_dim", "rms_norm_eps", "rope_parameters", "max_position_embeddings",
            "tie_word_embeddings")},
        "gguf": {
            "type": type_name,
            "tensor_types": tensor_types,
            "bytes": len(data),
            "max_relative_rms_quantization_error": llama.f32(relative_error),
            "hf_weights_equal_gguf_py_dequantize": equal,
            "gguf_py_version": llama._dist_version("gguf"),
        },
        "prompt_ids": f"[1] + numpy.random.default_rng({families.PROMPT_SEED}).integers(3, {SHAPE['vocab_size']}, "
                      "n - 1) per length, drawn in order",
        "eos_ids": [2],
        "prompts": results,
    })
    llama.dump(OUT / f"{type_name.lower()}.json", meta)
    print(f"{type_name}: {len(data) // 1024} KiB, max relative error {relative_error:.3g}, {time.time() - t0:.1f}s")


def main():
    types = [t.upper() for t in sys.argv[1:]] or TYPES
    unknown = [t for t in types if t not in TYPES]
    if unknown:
        sys.exit(f"unknown type(s) {', '.join(unknown)} (known: {', '.join(TYPES)})")
    llama.setup_torch()
    OUT.mkdir(parents=True, exist_ok=True)
    for t in types:
        reference(t)


if __name__ == "__main__":
    main()
