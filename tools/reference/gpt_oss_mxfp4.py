"""The tiny gpt-oss with its experts in MXFP4, as llama.cpp stores gpt-oss, and HF's greedy
references from exactly those weights.

    .venv/bin/python tools/reference/gpt_oss_mxfp4.py

Writes tests/data/models/converted/gpt_oss_mxfp4.gguf: the converter's GGUF of
tests/data/models/gpt_oss (converted/gpt_oss.gguf, tools/reference/converted_gguf.py) through the
pinned llama.cpp's `llama-quantize ... MXFP4_MOE` (experts MXFP4, the other matrices Q8_0, as
llama.cpp's own gpt-oss files), and converted/gpt_oss_mxfp4.json: 48 greedy tokens for the
id-list prompts of gpt_oss/reference.json (the schema of tests/data/models/tiny_llama3_reference.json)
from GptOssForCausalLM (float32, CPU, eager) whose every weight is gguf-py's dequantization of
that file, mapped back to HF's layout (the converter's split of the stacked, interleaved,
transposed experts undone). The mapping is checked first on the unquantized GGUF, which must
give the HF directory's weights bit for bit.
"""
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import torch
from transformers import AutoModelForCausalLM

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import converted_gguf  # noqa: E402  (where the pinned llama.cpp is)
import llama  # noqa: E402  (greedy loop, JSON writer, shared metadata)

import gguf  # noqa: E402
from gguf.quants import dequantize  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
HF_DIR = ROOT / "tests" / "data" / "models" / "gpt_oss"
F32_GGUF = converted_gguf.OUT / "gpt_oss.gguf"
OUT_GGUF = converted_gguf.OUT / "gpt_oss_mxfp4.gguf"
OUT_JSON = converted_gguf.OUT / "gpt_oss_mxfp4.json"
QUANTIZE = converted_gguf.LLAMA_CPP.parents[1] / "build" / "bin" / "llama-quantize"


def hf_state_dict(path, layers):
    """The GGUF's tensors dequantized by gguf-py, under HF's names and in HF's layout."""
    tensors = {t.name: torch.from_numpy(np.array(dequantize(t.data, t.tensor_type), dtype=np.float32))
               for t in gguf.GGUFReader(str(path)).tensors}
    state = {"model.embed_tokens.weight": tensors["token_embd.weight"],
             "lm_head.weight": tensors["output.weight"],
             "model.norm.weight": tensors["output_norm.weight"]}
    for l in range(layers):
        b, h = f"blk.{l}.", f"model.layers.{l}."
        state[h + "input_layernorm.weight"] = tensors[b + "attn_norm.weight"]
        state[h + "post_attention_layernorm.weight"] = tensors[b + "post_attention_norm.weight"]
        for ours, theirs in (("q", "q_proj"), ("k", "k_proj"), ("v", "v_proj"), ("output", "o_proj")):
            state[h + f"self_attn.{theirs}.weight"] = tensors[b + f"attn_{ours}.weight"]
            state[h + f"self_attn.{theirs}.bias"] = tensors[b + f"attn_{ours}.bias"]
        state[h + "self_attn.sinks"] = tensors[b + "attn_sinks.weight"]
        state[h + "mlp.router.weight"] = tensors[b + "ffn_gate_inp.weight"]
        state[h + "mlp.router.bias"] = tensors[b + "ffn_gate_inp.bias"]
        gate, up = tensors[b + "ffn_gate_exps.weight"], tensors[b + "ffn_up_exps.weight"]  # [E, I, H]
        gate_up = torch.empty(gate.shape[0], gate.shape[2], 2 * gate.shape[1])
        gate_up[..., 0::2], gate_up[..., 1::2] = gate.transpose(1, 2), up.transpose(1, 2)
        state[h + "mlp.experts.gate_up_proj"] = gate_up
        gate_b, up_b = tensors[b + "ffn_gate_exps.bias"], tensors[b + "ffn_up_exps.bias"]  # [E, I]
        gate_up_b = torch.empty(gate_b.shape[0], 2 * gate_b.shape[1])
        gate_up_b[:, 0::2], gate_up_b[:, 1::2] = gate_b, up_b
        state[h + "mlp.experts.gate_up_proj_bias"] = gate_up_b
        state[h + "mlp.experts.down_proj"] = tensors[b + "ffn_down_exps.weight"].transpose(1, 2).contiguous()
        state[h + "mlp.experts.down_proj_bias"] = tensors[b + "ffn_down_exps.bias"]
    return state


def main():
    if not QUANTIZE.exists():
        sys.exit(f"no llama-quantize at {QUANTIZE} (run tools/peer/build_llama_cpp)")
    model = AutoModelForCausalLM.from_pretrained(str(HF_DIR), dtype=torch.float32, attn_implementation=llama.ATTN)
    model.eval()
    layers = model.config.num_hidden_layers
    # The mapping back, on the unquantized file: HF's own weights, bit for bit.
    original = model.state_dict()
    mapped = hf_state_dict(F32_GGUF, layers)
    assert mapped.keys() == original.keys(), sorted(set(mapped) ^ set(original))
    assert all(torch.equal(mapped[k], original[k]) for k in original), "the GGUF layout mapping is wrong"

    tmp = str(OUT_GGUF) + ".part"
    subprocess.run([str(QUANTIZE), str(F32_GGUF), tmp, "MXFP4_MOE"], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    os.replace(tmp, OUT_GGUF)
    OUT_GGUF.chmod(0o644)
    types = {t.name: t.tensor_type.name for t in gguf.GGUFReader(str(OUT_GGUF)).tensors}
    assert types["blk.0.ffn_gate_exps.weight"] == "MXFP4", types
    model.load_state_dict(hf_state_dict(OUT_GGUF, layers))

    reference = json.loads((HF_DIR / "reference.json").read_text())
    results = []
    for prompt in reference["prompts"]:
        if prompt["kind"] != "ids":
            continue
        entry = {"name": prompt["name"], "kind": "ids", "text": None}
        with torch.no_grad():
            entry.update(llama.greedy(model, prompt["prompt_ids"], [2]))
        results.append(entry)
        print(f"  {entry['name']}: min gap {entry['min_top2_gap']} at step {entry['min_top2_gap_step']}")
    # One MXFP4 tensor as gguf-py dequantizes it, for the bit-exact check of xlacel's
    # (tests/model_files_test.cpp).
    checked = next(t for t in gguf.GGUFReader(str(OUT_GGUF)).tensors if t.name == "blk.0.ffn_gate_exps.weight")
    values = np.array(dequantize(checked.data, checked.tensor_type), dtype=np.float32).reshape(-1)
    meta = llama.common_meta()
    meta.update({
        "generator": "tools/reference/gpt_oss_mxfp4.py",
        "model": "converted/gpt_oss_mxfp4.gguf",
        "loader": "GptOssForCausalLM of tests/data/models/gpt_oss with gguf-py's dequantization of every tensor",
        "gguf_types": sorted(set(types.values())),
        "eos_ids": [2],
        "prompts": results,
        "dequantized": {"tensor": checked.name, "values": [float(v) for v in values]},
    })
    llama.dump(OUT_JSON, meta)
    print(f"{OUT_GGUF.relative_to(ROOT)}: {OUT_GGUF.stat().st_size // 1024} KiB; {OUT_JSON.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
