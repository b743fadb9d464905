#!/usr/bin/env python3
"""How many reference prompts stay token-exact under `--math fast`.

For each model's reference (tests/data/models/*_reference.json: transformers' greedy tokens),
runs every prompt through `xlacel generate` with `--math exact` and with `--math fast`, and
prints per prompt how many of the reference's tokens each reproduces before its first
difference, then how many prompts each reproduces whole. `--math fast` multiplies quantized
weights by activations rounded to 8 bits in prefill (products of 512 columns and 8 rows or
more); decode stays exact. --llama-cpp adds llama.cpp's own greedy tokens for the same prompt ids (its
llama-server, built by tools/peer/build_llama_cpp), which rounds activations to 8 bits in
prefill and decode alike: what the same trade gives in the engine it comes from.

  .venv/bin/python tools/reference/fast_math_agreement.py [--tokens 48] [--llama-cpp]
"""

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools/peer"))
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


@contextlib.contextmanager
def llama_server(model):
    """A llama-server on `model` (2 threads, one slot), yielding its /completion URL."""
    import compare_bench
    import compare_servers
    port = compare_servers.free_port()
    server = subprocess.Popen(
        [os.path.join(compare_bench.peer_bin_dir(), "llama-server"), "-m", str(model), "--host",
         "127.0.0.1", "--port", str(port), "-t", "2", "-tb", "2", "-np", "1", "-c", "1024"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        compare_servers.wait_healthy(port, server)
        yield f"http://127.0.0.1:{port}/completion"
    finally:
        server.terminate()
        server.wait()


def llama_cpp_generate(url, prompt, tokens):
    """llama.cpp's greedy tokens after the reference's own prompt ids."""
    body = {"prompt": prompt["prompt_ids"], "n_predict": tokens, "temperature": 0, "top_k": 1,
            "samplers": ["top_k"], "ignore_eos": True, "cache_prompt": False,
            "return_tokens": True}
    request = urllib.request.Request(url, json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as response:
        return json.loads(response.read())["tokens"]


def matched(got, want):
    n = 0
    while n < min(len(got), len(want)) and got[n] == want[n]:
        n += 1
    return n


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=48, help="tokens generated per prompt")
    parser.add_argument("--llama-cpp", action="store_true",
                        help="also llama.cpp's greedy tokens (llama-server)")
    args = parser.parse_args()
    totals = {"exact": [0, 0], "fast": [0, 0]}
    if args.llama_cpp:
        totals["llama.cpp"] = [0, 0]
    with tempfile.TemporaryDirectory() as scratch:
        for label, (model, reference_path) in REFERENCES.items():
            if not model.exists():
                print(f"{label}: SKIPPED ({model} not found; scripts/setup fetches it)")
                continue
            reference = json.loads(reference_path.read_text())
            print(f"{label} ({len(reference['prompts'])} prompts, {args.tokens} tokens each):")
            with llama_server(model) if args.llama_cpp else contextlib.nullcontext() as url:
                for prompt in reference["prompts"]:
                    want = prompt["output_ids"][:args.tokens]
                    line = f"  {prompt['name']:<20}"
                    for engine in totals:
                        if engine == "llama.cpp":
                            got = llama_cpp_generate(url, prompt, args.tokens)
                        else:
                            got, _ = generate(model, prompt, args.tokens, engine, scratch)
                        n = matched(got, want)
                        totals[engine][0] += n == len(want)
                        totals[engine][1] += 1
                        line += f" {engine}: {n:2d}/{len(want)}"
                    print(line + " tokens match HF")
    for engine, (exact, count) in totals.items():
        name = engine if engine == "llama.cpp" else f"--math {engine}"
        print(f"{name}: {exact}/{count} reference prompts token-exact")


if __name__ == "__main__":
    os.environ.setdefault("XLACEL_VENV", str(ROOT / ".venv"))
    main()
