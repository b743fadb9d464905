"""Greedy-decoding reference data for the Llama model path, from HF `transformers` (float32, CPU).

Writes (checked in, small, deterministic):
  tests/data/models/smollm2_reference.json   the default model's GGUF loaded by transformers
      (AutoModelForCausalLM.from_pretrained(dir, gguf_file=...), dequantized to float32), raw and
      chat prompts, 48 greedy tokens each (no stop at EOS), top-32 logits per step
  tests/data/models/tiny_llama3/             a tiny random-weight Llama-3-style HF directory
      (config.json, generation_config.json, model.safetensors in F32): GQA, head_dim 16,
      llama3 rope scaling with original_max_position_embeddings 64, untied lm_head
  tests/data/models/tiny_llama3_reference.json  the same schema for id-list prompts on it
Usage: .venv/bin/python tools/reference/llama.py [MODEL.gguf]
   (default model: ~/.cache/xlacel/models/SmolLM2-135M-Instruct.Q4_1.gguf)

Greedy loop: one forward pass over the whole prompt (prefill; its last position is step 0), then
one token per forward pass with the DynamicCache returned by the previous call; each step takes
torch.argmax of the last position's logits (first index on ties). Runs on one CPU thread with
torch.use_deterministic_algorithms(True) so reruns give identical files.
"""
import collections
import hashlib
import json
import math
import pathlib
import shutil
import sys
import time

import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig, LlamaConfig, LlamaForCausalLM

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "models"
DEFAULT_MODEL = pathlib.Path.home() / ".cache" / "xlacel" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"

N_NEW = 48
TOP_K = 32
ATTN = "eager"
FORMAT = "xlacel-greedy-reference-v1"

LONG_PROSE = (
    "The lighthouse stood at the edge of the northern cliffs for more than two hundred years. "
    "Its keepers came and went, each leaving a small mark: a carved initial on the iron railing, "
    "a logbook filled with careful notes about the weather, a garden of hardy herbs planted in the "
    "lee of the stone wall. In the winter, storms rolled in from the open sea and the waves climbed "
    "so high that salt spray rattled against the lantern glass. The keeper would climb the spiral "
    "stairs every few hours to trim the wick, polish the lenses and make sure the light turned "
    "steadily through the night. Ships passing in the dark relied on that slow, patient signal to "
    "find their way around the rocks and into the sheltered harbor beyond. When electricity finally "
    "reached the coast, the light was automated and the last keeper packed up his belongings, "
    "closed the heavy wooden door behind him and walked down the winding path to the village. "
    "People in the village still say that on quiet nights you can hear the old clockwork mechanism "
    "ticking, as if the tower remembers the hands that cared for it. Today the lighthouse is a "
    "small museum, and visitors who climb to the top are rewarded with a view that"
)

RAW_PROMPTS = [
    ("capital_raw", "The capital of France is"),
    ("fibonacci_code", "def fibonacci(n):"),
    ("lighthouse_prose", LONG_PROSE),
]

CHAT_PROMPTS = [
    ("capital_chat", [{"role": "user", "content": "What is the capital of France?"}]),
    ("haiku_chat", [{"role": "user", "content": "Write a haiku about the sea."}]),
    ("system_chat", [
        {"role": "system", "content": "You are a concise assistant. Answer in one short sentence."},
        {"role": "user", "content": "Why is the sky blue?"},
    ]),
]

TINY_PROMPT_LENGTHS = [5, 17, 70, 150]
TINY_PROMPT_SEED = 1234
TINY_INIT_SEED = 0
TINY_INITIALIZER_RANGE = 0.2  # 10x the default 0.02, so logits are spread out and greedy output varies
TINY_CONFIG = dict(
    vocab_size=512,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    max_position_embeddings=2048,
    rms_norm_eps=1e-5,
    hidden_act="silu",
    tie_word_embeddings=False,
    bos_token_id=1,
    eos_token_id=2,
    attention_bias=False,
    mlp_bias=False,
    initializer_range=TINY_INITIALIZER_RANGE,
)
TINY_ROPE_THETA = 500000.0
TINY_ROPE_SCALING = {
    "rope_type": "llama3",
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 64,
}


def setup_torch():
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(0)
    torch.set_grad_enabled(False)


def f32(x):
    """A float32 value as the shortest decimal that parses back (as float32) to the same value."""
    v = np.float32(x)
    if not math.isfinite(float(v)):
        raise ValueError(f"non-finite logit {v!r}")
    return float(np.format_float_positional(v, unique=True, trim="0"))


def step_record(step, position, logits):
    logits = logits.to(torch.float32)
    top = torch.topk(logits, TOP_K)
    argmax = int(torch.argmax(logits))
    ids = [int(i) for i in top.indices]
    vals = [f32(v) for v in top.values]
    # topk's order among equal values is unspecified; the greedy token is torch.argmax (first max).
    if ids[0] != argmax:
        assert vals[0] == f32(logits[argmax]), (ids[0], argmax)
    return {
        "step": step,
        "position": position,
        "argmax": argmax,
        "argmax_logit": f32(logits[argmax]),
        "top2_gap": f32(top.values[0] - top.values[1]),
        "top": {"ids": ids, "values": vals},
    }


def greedy(model, prompt_ids, eos_ids):
    """Manual greedy loop with a KV cache: exactly N_NEW tokens, no stop at EOS."""
    input_ids = torch.tensor([prompt_ids], dtype=torch.long)
    out = model(input_ids=input_ids, use_cache=True)
    past = out.past_key_values
    steps, output = [], []
    n = len(prompt_ids)
    for step in range(N_NEW):
        logits = out.logits[0, -1]
        rec = step_record(step, n - 1 + step, logits)
        steps.append(rec)
        tok = rec["argmax"]
        output.append(tok)
        if step + 1 == N_NEW:
            break
        out = model(input_ids=torch.tensor([[tok]], dtype=torch.long), past_key_values=past, use_cache=True)
        past = out.past_key_values
    # Cross-check: one forward pass over prompt + generated tokens (no cache) must give the same
    # greedy tokens; the logit difference shows the numeric noise between the two paths.
    full = model(input_ids=torch.tensor([prompt_ids + output[:-1]], dtype=torch.long), use_cache=False).logits[0]
    full = full[n - 1:]
    max_diff = 0.0
    agree = True
    for i, s in enumerate(steps):
        ids = torch.tensor(s["top"]["ids"])
        diff = (full[i][ids] - torch.tensor(s["top"]["values"], dtype=torch.float32)).abs().max().item()
        max_diff = max(max_diff, diff)
        agree = agree and int(torch.argmax(full[i])) == s["argmax"]
    gaps = [s["top2_gap"] for s in steps]
    imin = int(np.argmin(gaps))
    eos_pos = [i for i, t in enumerate(output) if t in eos_ids]
    return {
        "prompt_ids": list(prompt_ids),
        "n_prompt": n,
        "output_ids": output,
        "eos_positions": eos_pos,
        "first_eos_step": eos_pos[0] if eos_pos else None,
        "min_top2_gap": gaps[imin],
        "min_top2_gap_step": imin,
        "full_recompute": {"argmax_agrees": agree, "max_abs_top32_logit_diff": f32(max_diff)},
        "steps": steps,
    }


def dump(path, obj):
    """JSON with lists of scalars and small dicts kept on one line (one step per line)."""

    def enc(o, depth):
        pad = " " * depth
        if isinstance(o, dict):
            flat = all(not isinstance(v, (dict, list)) or (isinstance(v, list) and all(
                not isinstance(x, (dict, list)) for x in v)) for v in o.values())
            if "top" in o or (depth > 0 and flat and len(json.dumps(o)) < 200):
                return json.dumps(o, ensure_ascii=False, separators=(",", ":"))
            items = [f"{pad} {json.dumps(k)}: {enc(v, depth + 1)}" for k, v in o.items()]
            return "{\n" + ",\n".join(items) + "\n" + pad + "}"
        if isinstance(o, list):
            if all(not isinstance(x, (dict, list)) for x in o):
                return json.dumps(o, ensure_ascii=False, separators=(",", ":"))
            items = [f"{pad} {enc(v, depth + 1)}" for v in o]
            return "[\n" + ",\n".join(items) + "\n" + pad + "]"
        return json.dumps(o, ensure_ascii=False)

    text = enc(obj, 0) + "\n"
    assert json.loads(text) == obj
    path.write_text(text, encoding="utf-8")


def common_meta():
    return {
        "format": FORMAT,
        "generator": "tools/reference/llama.py",
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "dtype": "float32",
        "device": "cpu",
        "num_threads": torch.get_num_threads(),
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "n_new_tokens": N_NEW,
        "top_k": TOP_K,
        "decoding": "greedy: torch.argmax (first index on ties) of the last position's float32 logits; "
                    "prefill of the whole prompt is step 0, then one token per step with the KV cache "
                    "(DynamicCache); never stops at EOS",
        "float_format": "logits are float32 values written as the shortest decimal that parses back to "
                        "the same float32",
    }


# ---------------------------------------------------------------- SmolLM2 (GGUF route)

def permute_like_llama_cpp(w, n_head):
    """convert_hf_to_gguf.py LlamaModel.permute: HF q/k rows -> GGUF (interleaved rope pairs)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def gguf_facts(model_path, model):
    import gguf
    from gguf import GGUFReader
    from gguf.quants import dequantize

    reader = GGUFReader(str(model_path))
    types = collections.Counter(t.tensor_type.name for t in reader.tensors)
    cfg = model.config
    tensors = {t.name: t for t in reader.tensors}
    deq_dtypes = set()
    qk_ok = True
    for layer in (0, cfg.num_hidden_layers - 1):
        attn = model.model.layers[layer].self_attn
        for name, mod, heads in (("attn_q", attn.q_proj, cfg.num_attention_heads),
                                 ("attn_k", attn.k_proj, cfg.num_key_value_heads)):
            t = tensors[f"blk.{layer}.{name}.weight"]
            g = dequantize(t.data, t.tensor_type)
            deq_dtypes.add(str(g.dtype))
            hf = mod.weight.detach().numpy()
            qk_ok = qk_ok and np.array_equal(permute_like_llama_cpp(hf, heads), g.reshape(hf.shape))
    t = tensors["token_embd.weight"]
    emb = dequantize(t.data, t.tensor_type)
    deq_dtypes.add(str(emb.dtype))
    emb_ok = np.array_equal(model.model.embed_tokens.weight.detach().numpy(), emb.reshape(-1, cfg.hidden_size))
    return {
        "tensor_types": dict(sorted(types.items())),
        "token_embd_type": t.tensor_type.name,
        "dequantized_numpy_dtype": sorted(deq_dtypes),
        "qk_reverse_permuted": bool(qk_ok),
        "embedding_equals_gguf_dequant": bool(emb_ok),
        "lm_head_tied_to_embedding": model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr(),
        "gguf_py_version": getattr(gguf, "__version__", None) or _dist_version("gguf"),
        "note": "transformers dequantizes every GGUF tensor with gguf-py (gguf.quants.dequantize) to a "
                "float32 numpy array, undoes llama.cpp's q/k row permutation (LlamaTensorProcessor), "
                "then casts to the requested dtype (float32: no-op)",
    }


def _dist_version(name):
    from importlib.metadata import version
    return version(name)


def smollm2(model_path):
    t0 = time.time()
    directory, name = str(model_path.parent), model_path.name
    tok = AutoTokenizer.from_pretrained(directory, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(directory, gguf_file=name, dtype=torch.float32,
                                                 attn_implementation=ATTN)
    model.eval()
    assert model.config._attn_implementation == ATTN
    assert all(p.dtype == torch.float32 for p in model.parameters())
    eos_id = model.config.eos_token_id
    eos_ids = [eos_id] if isinstance(eos_id, int) else list(eos_id)
    load_s = time.time() - t0

    prompts = []
    for pname, text in RAW_PROMPTS:
        ids = tok(text)["input_ids"]
        assert ids == tok(text, add_special_tokens=False)["input_ids"]
        prompts.append({"name": pname, "kind": "raw", "messages": None, "text": text,
                        "add_special_tokens": True, "ids": ids})
    for pname, messages in CHAT_PROMPTS:
        text = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        ids = tok(text, add_special_tokens=False)["input_ids"]
        assert ids == tok(text)["input_ids"], "tokenizer adds special tokens; decide which ids to record"
        prompts.append({"name": pname, "kind": "chat", "messages": messages, "text": text,
                        "add_special_tokens": False, "ids": ids})

    results = []
    for p in prompts:
        ts = time.time()
        r = greedy(model, p["ids"], eos_ids)
        entry = {"name": p["name"], "kind": p["kind"], "text": p["text"]}
        if p["messages"] is not None:
            entry["messages"] = p["messages"]
        entry["add_special_tokens"] = p["add_special_tokens"]
        entry.update(r)
        entry["output_text"] = tok.decode(r["output_ids"], skip_special_tokens=False)
        # keep "steps" last
        entry["steps"] = entry.pop("steps")
        results.append(entry)
        print(f"  {p['name']}: {r['n_prompt']} prompt tokens, min gap {r['min_top2_gap']} at step "
              f"{r['min_top2_gap_step']}, eos {r['eos_positions']}, recompute agrees "
              f"{r['full_recompute']['argmax_agrees']} ({time.time() - ts:.1f}s)")
        print(f"    {entry['output_text']!r}")

    sha = hashlib.sha256(model_path.read_bytes()).hexdigest()
    meta = common_meta()
    meta.update({
        "model": name,
        "model_sha256": sha,
        "loader": "AutoModelForCausalLM.from_pretrained(dir, gguf_file=model, dtype=torch.float32, "
                  f"attn_implementation={ATTN!r}); AutoTokenizer.from_pretrained(dir, gguf_file=model)",
        "attn_implementation": model.config._attn_implementation,
        "model_class": type(model).__name__,
        "config": {k: model.config.to_dict().get(k) for k in (
            "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
            "num_key_value_heads", "head_dim", "rms_norm_eps", "rope_parameters", "max_position_embeddings",
            "tie_word_embeddings", "bos_token_id", "eos_token_id")},
        "eos_ids": eos_ids,
        "tokenizer": {
            "class": type(tok).__name__,
            "bos_token": tok.bos_token, "bos_token_id": tok.bos_token_id,
            "eos_token": tok.eos_token, "eos_token_id": tok.eos_token_id,
            "adds_special_tokens": tok("x")["input_ids"] != tok("x", add_special_tokens=False)["input_ids"],
            "chat_template_call": "apply_chat_template(messages, add_generation_prompt=True, tokenize=False), "
                                  "then encoded with add_special_tokens=False",
        },
        "gguf": gguf_facts(model_path, model),
        "prompts": results,
    })
    dump(OUT / "smollm2_reference.json", meta)
    print(f"smollm2: load {load_s:.1f}s, total {time.time() - t0:.1f}s")


# ---------------------------------------------------------------- tiny Llama-3 style model

def tiny_config():
    return LlamaConfig(**TINY_CONFIG, rope_parameters={"rope_theta": TINY_ROPE_THETA, **TINY_ROPE_SCALING})


def build_tiny(directory):
    cfg = tiny_config()
    torch.manual_seed(TINY_INIT_SEED)
    model = LlamaForCausalLM(cfg).to(torch.float32).eval()
    # RMSNorm weights are initialised to 1; randomise them (seeded) so a missing norm scale shows.
    g = torch.Generator().manual_seed(TINY_INIT_SEED + 1)
    for name, p in model.named_parameters():
        if name.endswith("norm.weight"):
            p.copy_(1.0 + 0.25 * torch.randn(p.shape, generator=g))
    model.generation_config = GenerationConfig(bos_token_id=1, eos_token_id=2, do_sample=False,
                                               max_new_tokens=N_NEW)
    if directory.exists():
        shutil.rmtree(directory)
    model.save_pretrained(directory, safe_serialization=True)
    # Also write the rope settings in the legacy top-level form (rope_theta + rope_scaling) that
    # published Llama-3.x config.json files use, next to transformers 5's rope_parameters.
    cpath = directory / "config.json"
    c = json.loads(cpath.read_text())
    c["rope_theta"] = TINY_ROPE_THETA
    c["rope_scaling"] = dict(TINY_ROPE_SCALING)
    cpath.write_text(json.dumps(c, indent=2, sort_keys=True) + "\n")
    return model


def tiny_llama3():
    t0 = time.time()
    directory = OUT / "tiny_llama3"
    built = build_tiny(directory)
    # The reference comes from the directory as written (what the C++ engine will read).
    model = AutoModelForCausalLM.from_pretrained(str(directory), dtype=torch.float32, attn_implementation=ATTN)
    model.eval()
    assert model.config._attn_implementation == ATTN
    assert model.config.rope_parameters["rope_type"] == "llama3"
    sd_built, sd_loaded = built.state_dict(), model.state_dict()
    assert sd_built.keys() == sd_loaded.keys()
    assert all(torch.equal(sd_built[k], sd_loaded[k]) for k in sd_built)
    assert not model.config.tie_word_embeddings
    assert model.lm_head.weight.data_ptr() != model.model.embed_tokens.weight.data_ptr()

    rng = np.random.default_rng(TINY_PROMPT_SEED)
    results = []
    for n in TINY_PROMPT_LENGTHS:
        ids = [1] + [int(x) for x in rng.integers(3, TINY_CONFIG["vocab_size"], n - 1)]  # bos + random ids
        r = greedy(model, ids, [2])
        entry = {"name": f"random_{n}", "kind": "ids", "text": None}
        entry.update(r)
        entry["steps"] = entry.pop("steps")
        results.append(entry)
        distinct = len(set(r["output_ids"]))
        assert distinct > 4, f"degenerate greedy output for prompt {n}: {r['output_ids']}"
        print(f"  random_{n}: {distinct} distinct output ids, min gap {r['min_top2_gap']} at step "
              f"{r['min_top2_gap_step']}, eos {r['eos_positions']}, recompute agrees "
              f"{r['full_recompute']['argmax_agrees']}")

    inv = model.model.rotary_emb.inv_freq.tolist()
    meta = common_meta()
    meta.update({
        "model": "tiny_llama3",
        "loader": "AutoModelForCausalLM.from_pretrained(tests/data/models/tiny_llama3, dtype=torch.float32, "
                  f"attn_implementation={ATTN!r})",
        "attn_implementation": model.config._attn_implementation,
        "model_class": type(model).__name__,
        "init": f"torch.manual_seed({TINY_INIT_SEED}); LlamaForCausalLM(config) with initializer_range "
                f"{TINY_INITIALIZER_RANGE}; RMSNorm weights set to 1 + 0.25*randn (generator seed "
                f"{TINY_INIT_SEED + 1})",
        "prompt_ids": f"[1] + numpy.random.default_rng({TINY_PROMPT_SEED}).integers(3, 512, n - 1) per length, "
                      "drawn in order",
        "rope_inv_freq": [f32(x) for x in inv],
        "rope_attention_scaling": f32(model.model.rotary_emb.attention_scaling),
        "eos_ids": [2],
        "prompts": results,
    })
    dump(OUT / "tiny_llama3_reference.json", meta)
    print(f"tiny_llama3: {time.time() - t0:.1f}s")


def main():
    model_path = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_MODEL
    setup_torch()
    OUT.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    tiny_llama3()
    smollm2(model_path.resolve())
    print(f"done in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
