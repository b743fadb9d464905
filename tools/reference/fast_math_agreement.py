#!/usr/bin/env python3
"""How many reference prompts stay token-exact under `--math fast`.

For each model's reference (tests/data/models/*_reference.json: transformers' greedy tokens),
runs every prompt through `xlacel generate` with `--math exact` and with `--math fast`, and
prints per prompt how many of the reference's tokens each reproduces before its first
difference, then how many prompts each reproduces whole. `--math fast` multiplies quantized
weights by activations rounded to 8 bits in prefill (products whose width is a multiple of 512
columns: SmolLM2's down projections, Gemma 3 270M's too); decode stays exact.

  .venv/bin/python tools/reference/fast_math_agreement.py [--tokens 48]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODELS = Path.home() / ".cache/xlacel/models"
REFERENCES = {
    "SmolLM2-135M Q4_1": (MODELS / "SmolLM2-135M-Instruct.Q4_1.gguf",
                          ROOT / "tests/data/models/smollm2_reference.json"),
    "Gemma 3 270M Q4_K_M": (MODELS / "gemma-3-270m-q4_k_m.gguf",
                            ROOT / "tests/data/models/gemma3_270m_reference.json"),
}


def generate(model, prompt, tokens, math, scratch):
    args = [str(ROOT / "build/xlacel"), "generate", "-m", str(model), "-n", str(tokens),
            "--ignore-eos", "--output-format", "json", "--math", math]
    if prompt["kind"] == "chat":
        messages = Path(scratch) / f"{prompt['name']}.json"
        messages.write_text(json.dumps(prompt["messages"]))
        args += ["--messages", str(messages)]
    else:
        args += ["-p", prompt["text"]]
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"{' '.join(args)} failed: {run.stderr.strip()}")
    out = json.loads(run.stdout)
    return out["output_ids"], out["timings"]["prefill_seconds"]


def matched(got, want):
    n = 0
    while n < min(len(got), len(want)) and got[n] == want[n]:
        n += 1
    return n


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=48, help="tokens generated per prompt")
    args = parser.parse_args()
    totals = {"exact": [0, 0], "fast": [0, 0]}
    with tempfile.TemporaryDirectory() as scratch:
        for label, (model, reference_path) in REFERENCES.items():
            if not model.exists():
                print(f"{label}: SKIPPED ({model} not found; scripts/setup fetches it)")
                continue
            reference = json.loads(reference_path.read_text())
            print(f"{label} ({len(reference['prompts'])} prompts, {args.tokens} tokens each):")
            for prompt in reference["prompts"]:
                want = prompt["output_ids"][:args.tokens]
                line = f"  {prompt['name']:<20}"
                for math in ("exact", "fast"):
                    got, _ = generate(model, prompt, args.tokens, math, scratch)
                    n = matched(got, want)
                    totals[math][0] += n == len(want)
                    totals[math][1] += 1
                    line += f" {math}: {n:2d}/{len(want)} tokens match HF"
                print(line)
    for math, (exact, count) in totals.items():
        print(f"--math {math}: {exact}/{count} reference prompts token-exact")


if __name__ == "__main__":
    os.environ.setdefault("XLACEL_VENV", str(ROOT / ".venv"))
    main()
