"""YaRN RoPE frequencies and attention factors as transformers computes them
(_compute_yarn_parameters, float32), for tests/models_graph_test.cpp's bit-exact check of
models/rope_frequencies.cpp.

    .venv/bin/python tools/reference/yarn_frequencies.py   -> tests/data/models/yarn_frequencies.json

Each case is a config.json (a Qwen 3 shape with the RoPE parameters under test: Qwen's truncated
ramp, gpt-oss's untruncated one with explicit betas, DeepSeek's mscale pair, partial rotary, a
top-level original context) and what transformers derives from it.
"""
import json
import pathlib

import torch
from transformers import AutoConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "models" / "yarn_frequencies.json"

BASE = dict(model_type="qwen3", vocab_size=64, hidden_size=256, intermediate_size=64, num_hidden_layers=1,
            num_attention_heads=2, num_key_value_heads=1, head_dim=128, max_position_embeddings=131072,
            rms_norm_eps=1e-6)
CASES = {
    "qwen3_factor4": dict(rope_parameters={"rope_type": "yarn", "rope_theta": 1e6, "factor": 4.0,
                                           "original_max_position_embeddings": 32768}),
    "gpt_oss_untruncated": dict(head_dim=64, rope_parameters={
        "rope_type": "yarn", "rope_theta": 150000.0, "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
        "truncate": False, "original_max_position_embeddings": 4096}),
    "mscale_pair": dict(rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0,
                                         "mscale": 1.0, "mscale_all_dim": 0.707,
                                         "original_max_position_embeddings": 4096}),
    "partial_top_level_original": dict(original_max_position_embeddings=8192, rope_parameters={
        "rope_type": "yarn", "rope_theta": 500000.0, "factor": 2.0, "partial_rotary_factor": 0.5,
        "attention_factor": 1.25}),
}


def main():
    cases = {}
    for name, overrides in CASES.items():
        config_json = {**BASE, **overrides}
        config = AutoConfig.for_model(**{k: v for k, v in config_json.items()})
        inv_freq, attention_factor = ROPE_INIT_FUNCTIONS["yarn"](config, torch.device("cpu"))
        assert inv_freq.dtype == torch.float32
        cases[name] = {"config": config_json, "inv_freq": inv_freq.tolist(),
                       "attention_factor": attention_factor}
    OUT.write_text(json.dumps({"generator": "tools/reference/yarn_frequencies.py", "cases": cases}, indent=1) + "\n")
    print(f"{len(cases)} cases in {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
