"""Greedy reference of the real Gemma 3 270M (base, Q4_K_M GGUF) from HF `transformers`.

Writes tests/data/models/gemma3_270m_reference.json (schema: tests/data/models/README.md): the
GGUF loaded by transformers (AutoModelForCausalLM.from_pretrained(dir, gguf_file=...), every
tensor dequantized by gguf-py to float32, norm weights minus 1 as Gemma2TensorProcessor does),
5 raw prompts encoded by the GGUF's tokenizer as transformers builds it (bos added), 48 greedy
tokens each, eager attention, float32, one thread. The C++ test feeds `prompt_ids`, so it does
not depend on xlacel tokenizing Gemma text.
Usage: .venv/bin/python tools/reference/gemma3_270m.py [MODEL.gguf]
   (default: ~/.cache/xlacel/models/gemma-3-270m-q4_k_m.gguf)
"""
import hashlib
import pathlib
import sys
import time

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import llama  # noqa: E402  (greedy loop, JSON writer, shared metadata)

DEFAULT_MODEL = pathlib.Path.home() / ".cache" / "xlacel" / "models" / "gemma-3-270m-q4_k_m.gguf"

PROMPTS = llama.RAW_PROMPTS + [
    ("recipe_raw", "To make a simple tomato sauce, first"),
    ("numbers_raw", "1, 2, 3, 5, 8, 13,"),
]


def main():
    model_path = (pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_MODEL).resolve()
    llama.setup_torch()
    t0 = time.time()
    directory, name = str(model_path.parent), model_path.name
    tok = AutoTokenizer.from_pretrained(directory, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(directory, gguf_file=name, dtype=torch.float32,
                                                 attn_implementation=llama.ATTN)
    model.eval()
    assert model.config._attn_implementation == llama.ATTN
    assert all(p.dtype == torch.float32 for p in model.parameters())
    eos_id = model.config.eos_token_id
    eos_ids = [eos_id] if isinstance(eos_id, int) else list(eos_id)
    print(f"loaded in {time.time() - t0:.1f}s")

    results = []
    for pname, text in PROMPTS:
        ids = tok(text)["input_ids"]
        r = llama.greedy(model, ids, eos_ids)
        entry = {"name": pname, "kind": "raw", "text": text, "add_special_tokens": True}
        entry.update(r)
        entry["output_text"] = tok.decode(r["output_ids"], skip_special_tokens=False)
        entry["steps"] = entry.pop("steps")
        results.append(entry)
        print(f"  {pname}: {r['n_prompt']} prompt tokens, min gap {r['min_top2_gap']} at step "
              f"{r['min_top2_gap_step']}, recompute agrees {r['full_recompute']['argmax_agrees']}: "
              f"{entry['output_text']!r}")

    cfg = model.config.to_dict()
    meta = llama.common_meta()
    meta.update({
        "generator": "tools/reference/gemma3_270m.py",
        "model": name,
        "model_sha256": hashlib.sha256(model_path.read_bytes()).hexdigest(),
        "loader": "AutoModelForCausalLM.from_pretrained(dir, gguf_file=model, dtype=torch.float32, "
                  f"attn_implementation={llama.ATTN!r}); AutoTokenizer.from_pretrained(dir, gguf_file=model)",
        "attn_implementation": model.config._attn_implementation,
        "model_class": type(model).__name__,
        "config": {k: cfg.get(k) for k in (
            "model_type", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
            "num_attention_heads", "num_key_value_heads", "head_dim", "rms_norm_eps", "rope_parameters",
            "sliding_window", "layer_types", "query_pre_attn_scalar", "max_position_embeddings",
            "tie_word_embeddings", "bos_token_id", "eos_token_id")},
        "eos_ids": eos_ids,
        "tokenizer": {"class": type(tok).__name__, "bos_token_id": tok.bos_token_id,
                      "call": "tok(text)['input_ids'] (adds bos)"},
        "prompts": results,
    })
    llama.dump(llama.OUT / "gemma3_270m_reference.json", meta)
    print(f"done in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
