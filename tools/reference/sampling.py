"""Reference keep-sets and probabilities for the host-side sampler (src/engine/sampler.cpp).

Applies transformers' own logits processors, in the order generate() builds them
(RepetitionPenaltyLogitsProcessor, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper,
MinPLogitsWarper), to fixed logit vectors and records which token ids survive and their softmax
probabilities; greedy cases record the argmax after the penalty. The draw itself (torch.multinomial)
is not reproducible across implementations, so it is checked statistically in the C++ test.

Writes tests/data/session/sampling_reference.json.
Run: .venv/bin/python tools/reference/sampling.py

Logit vectors are either listed or "hashed": logit[i] = float32(u(i) / 2**32 * scale + offset),
u(i) = (i * 2654435761) mod 2**32, exact in double arithmetic, so C++ rebuilds them bit for bit.
Every option value is a float32 value (what the C++ options hold).
"""
import json
import math
import pathlib

import numpy as np
import torch
from transformers.generation.logits_process import (
    LogitsProcessorList,
    MinPLogitsWarper,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "session" / "sampling_reference.json"

NEG_INF = float("-inf")
SMALL = [1.5, -0.25, 3.0, 2.75, -4.0, 0.5, 3.0, 1.0, -1.5, 2.0, 0.0, -0.75]
VOCAB = 49152


def f32(value):
    return float(np.float32(value))


def hashed(size, scale, offset):
    u = (np.arange(size, dtype=np.uint64) * np.uint64(2654435761)) % np.uint64(2**32)
    return (u.astype(np.float64) / 2.0**32 * scale + offset).astype(np.float32)


# name, logits (list or hashed spec), context, options (defaults as SamplingOptions)
CASES = [
    ("temperature_only", SMALL, [], dict(temperature=0.7)),
    ("top_k_3", SMALL, [], dict(temperature=1.0, top_k=3)),
    ("top_k_ties_kept", [1.0, 3.0, 3.0, 2.0, 3.0, 0.0], [], dict(temperature=1.0, top_k=2)),
    ("top_k_larger_than_vocab", SMALL, [], dict(temperature=1.0, top_k=100)),
    ("top_p_0_9", SMALL, [], dict(temperature=1.0, top_p=0.9)),
    ("top_p_0_5", SMALL, [], dict(temperature=1.0, top_p=0.5)),
    ("top_p_tiny_keeps_one", SMALL, [], dict(temperature=1.0, top_p=0.01)),
    ("top_p_exact_boundary_uniform", [1.0, 1.0, 1.0, 1.0], [], dict(temperature=1.0, top_p=0.5)),
    ("top_p_ties_at_cut", [0.0, 2.0, 2.0, 0.0, 2.0, 2.0], [], dict(temperature=1.0, top_p=0.5)),
    ("top_p_0_75_uniform", [0.5] * 8, [], dict(temperature=1.0, top_p=0.75)),
    ("min_p_0_1", SMALL, [], dict(temperature=1.0, min_p=0.1)),
    ("min_p_0_5", SMALL, [], dict(temperature=1.0, min_p=0.5)),
    ("min_p_1_keeps_tied_max", [5.0, 1.0, 5.0, 4.0], [], dict(temperature=1.0, min_p=1.0)),
    ("penalty_positive_and_negative", SMALL, [2, 4, 6, 4, 2, 11],
     dict(temperature=1.0, repeat_penalty=1.3)),
    ("penalty_window", SMALL, [2, 6, 3, 9, 3, 1], dict(temperature=1.0, repeat_penalty=2.0, repeat_last_n=3)),
    ("penalty_below_one", SMALL, [8, 10], dict(temperature=1.0, repeat_penalty=0.5)),
    ("minus_inf_logits", [NEG_INF, 1.0, NEG_INF, 0.5, 2.0], [], dict(temperature=0.9, top_p=0.95)),
    ("all_combined", SMALL, [2, 6, 9],
     dict(temperature=0.8, top_k=6, top_p=0.85, min_p=0.05, repeat_penalty=1.1, repeat_last_n=64)),
    ("high_temperature", SMALL, [], dict(temperature=2.5, top_k=8, top_p=0.95)),
    ("vocab_top_k_50", dict(size=VOCAB, scale=60.0, offset=-40.0), [], dict(temperature=1.0, top_k=50)),
    ("vocab_top_p_0_3", dict(size=VOCAB, scale=60.0, offset=-40.0), [], dict(temperature=1.0, top_p=0.3)),
    ("flat_top_p_0_5", dict(size=4096, scale=6.0, offset=-3.0), [], dict(temperature=1.0, top_p=0.5)),
    ("vocab_min_p_0_5", dict(size=VOCAB, scale=60.0, offset=-40.0), [], dict(temperature=1.0, min_p=0.5)),
    ("vocab_combined", dict(size=VOCAB, scale=60.0, offset=-40.0), list(range(40000, 49152, 61)),
     dict(temperature=0.8, top_k=400, top_p=0.8, min_p=0.05, repeat_penalty=1.2, repeat_last_n=64)),
    ("greedy_plain", SMALL, [], dict(temperature=0.0)),
    ("greedy_penalty_moves_argmax", SMALL, [2, 6], dict(temperature=0.0, repeat_penalty=1.5)),
    ("greedy_penalty_ties_lower_id", [1.0, 4.0, 2.0, 2.0, 1.0], [1], dict(temperature=0.0, repeat_penalty=2.0)),
    ("greedy_vocab_penalty", dict(size=VOCAB, scale=60.0, offset=-40.0), list(range(0, 49152, 7)),
     dict(temperature=0.0, repeat_penalty=1.3, repeat_last_n=0)),
]

DEFAULTS = dict(temperature=0.0, top_k=0, top_p=1.0, min_p=0.0, repeat_penalty=1.0, repeat_last_n=64)


def run_case(name, logits_spec, context, overrides):
    options = {**DEFAULTS, **overrides}
    for key in ("temperature", "top_p", "min_p", "repeat_penalty"):
        options[key] = f32(options[key])
    if isinstance(logits_spec, dict):
        logits = hashed(**logits_spec)
    else:
        logits = np.array(logits_spec, dtype=np.float32)
    scores = torch.from_numpy(logits.copy()).unsqueeze(0)
    window = context[-options["repeat_last_n"]:] if options["repeat_last_n"] > 0 else context

    processors = LogitsProcessorList()
    if options["repeat_penalty"] != 1.0 and window:
        processors.append(RepetitionPenaltyLogitsProcessor(options["repeat_penalty"]))
    greedy = options["temperature"] <= 0
    if not greedy:
        if options["temperature"] != 1.0:
            processors.append(TemperatureLogitsWarper(options["temperature"]))
        warped = processors(torch.tensor([window], dtype=torch.long), scores.clone())[0]
        if options["top_k"] > 0:
            processors.append(TopKLogitsWarper(options["top_k"]))
        if options["top_p"] < 1.0:
            processors.append(TopPLogitsWarper(options["top_p"]))
        if options["min_p"] > 0:
            processors.append(MinPLogitsWarper(options["min_p"]))
    input_ids = torch.tensor([window], dtype=torch.long)
    scores = processors(input_ids, scores)

    case = {"name": name, "context": context, "options": options}
    if isinstance(logits_spec, dict):
        case["hashed_logits"] = logits_spec
    else:
        case["logits"] = [v if math.isfinite(v) else "-inf" for v in logits.tolist()]
    if greedy:
        case["greedy"] = int(torch.argmax(scores[0]).item())
        return case
    probabilities = torch.softmax(scores[0], dim=-1)
    kept = torch.nonzero(scores[0] != NEG_INF).flatten().tolist()
    case["kept"] = kept
    case["probabilities"] = [round(probabilities[i].item(), 10) for i in kept]
    if len(logits) > 16:
        check_no_tie_at_cut(name, warped, kept)
    return case


def check_no_tie_at_cut(name, warped, kept):
    """torch.sort orders ties arbitrarily in longer vectors: no dropped token may tie a kept one."""
    lowest_kept = warped[kept].min()
    tied = torch.nonzero(warped == lowest_kept).flatten().tolist()
    assert set(tied) <= set(kept), f"{name}: a tie at the cut ({tied}), choose other logits"


def main():
    cases = [run_case(*case) for case in CASES]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with open(OUT, "w") as f:
        json.dump({"generator": "tools/reference/sampling.py",
                   "transformers": __import__("transformers").__version__,
                   "torch": torch.__version__,
                   "cases": cases}, f, separators=(",", ":"))
        f.write("\n")
    for case in cases:
        print(case["name"], case.get("greedy", f"{len(case.get('kept', []))} kept"))


if __name__ == "__main__":
    main()
