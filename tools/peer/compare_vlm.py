#!/usr/bin/env python3
"""xlacel against llama.cpp's llama-mtmd-cli on the same vision-language files (a GGUF text model
and its mmproj), the same image and prompt, 2 threads, alternating rounds in one run.

Per round and engine: the image encode time per tile (xlacel: timings.image_seconds /
images_encoded; llama.cpp: its "mtmd batch encoding done in N ms" lines), the time to the first
token (xlacel: timings.time_to_first_token_seconds; llama.cpp: from its first image encode to
the end of a run with -n 1, which is the image's encodes and the prompt's prefill), and decode
speed (xlacel: timings.generation_tokens_per_second over -n tokens; llama.cpp: llama-bench tg on
the text model, as mtmd-cli prints no decode timing).

  tools/peer/compare_vlm.py DIR [--rounds 2] [--tokens 32] [--image FILE] [--prompt TEXT]
DIR holds model.*.gguf, mmproj*.gguf and image.jpg (tools/peer/vlm_files.py writes them).
"""
import argparse
import glob
import json
import os
import pathlib
import re
import statistics
import subprocess
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
PEER = pathlib.Path(os.environ.get("XLACEL_CACHE", pathlib.Path.home() / ".cache/xlacel")) / "peer"


def peer_bin(name):
    found = glob.glob(str(PEER / "*" / "build" / "bin" / name))
    if not found:
        raise SystemExit(f"{name} not found under {PEER}: run tools/peer/build_llama_cpp")
    return found[0]


def xlacel(model, mmproj, image, prompt, tokens):
    out = subprocess.run([str(ROOT / "build" / "xlacel"), "generate", "-m", model, "--mmproj", mmproj,
                          "--image", image, "--chat", prompt, "-n", str(tokens), "--ignore-eos",
                          "--speculative", "off", "--threads", "2", "--output-format", "json"],
                         check=True, capture_output=True, text=True).stdout
    timings = json.loads(out)["timings"]
    return {"encode_ms_per_tile": 1000 * timings["image_seconds"] / max(1, timings["images_encoded"]),
            "tiles": timings["images_encoded"], "ttft_s": timings["time_to_first_token_seconds"],
            "decode_tok_s": timings["generation_tokens_per_second"]}


def llama(model, mmproj, image, prompt):
    start = time.monotonic()
    run = subprocess.run([peer_bin("llama-mtmd-cli"), "-m", model, "--mmproj", mmproj, "--image", image,
                          "-p", prompt, "-n", "1", "-t", "2", "--temp", "0", "--log-timestamps"],
                         check=True, capture_output=True, text=True)
    wall = time.monotonic() - start
    log = run.stderr
    encodes = [int(ms) for ms in re.findall(r"mtmd batch encoding done in (\d+) ms", log)]
    stamps = re.findall(r"^(\d+)\.(\d+)\.(\d+)\.(\d+) I encoding mtmd batch", log, re.MULTILINE)
    if not stamps:
        raise SystemExit("llama-mtmd-cli printed no encode timestamps:\n" + log[-2000:])
    m, s, ms, us = (int(x) for x in stamps[0])
    first_encode = 60 * m + s + ms / 1e3 + us / 1e6
    return {"encode_ms_per_tile": statistics.mean(encodes), "tiles": len(encodes),
            "ttft_s": wall - first_encode}


def llama_decode(model, tokens):
    out = subprocess.run([peer_bin("llama-bench"), "-m", model, "-t", "2", "-p", "0", "-n", str(tokens),
                          "-r", "3", "-o", "json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)[0]["avg_ts"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--image")
    parser.add_argument("--prompt", default="Describe this image.")
    args = parser.parse_args()
    d = pathlib.Path(args.dir)
    model = str(sorted(p for p in d.glob("model*.gguf"))[0])
    mmproj = str(sorted(d.glob("mmproj*.gguf"))[0])
    image = args.image or str(d / "image.jpg")
    rows = {"xlacel": [], "llama.cpp": []}
    for r in range(args.rounds):
        rows["xlacel"].append(xlacel(model, mmproj, image, args.prompt, args.tokens))
        entry = llama(model, mmproj, image, args.prompt)
        entry["decode_tok_s"] = llama_decode(model, args.tokens)
        rows["llama.cpp"].append(entry)
        print(f"round {r + 1}: xlacel {rows['xlacel'][-1]}\n         llama.cpp {rows['llama.cpp'][-1]}", flush=True)
    print(f"\n{pathlib.Path(model).name} + {pathlib.Path(mmproj).name}, {pathlib.Path(image).name}, 2 threads, "
          f"medians of {args.rounds} rounds")
    print("| | encode ms / tile | tiles | time to first token s | decode tok/s |\n|---|---|---|---|---|")
    for name, entries in rows.items():
        med = {k: statistics.median(e[k] for e in entries) for k in entries[0]}
        print(f"| {name} | {med['encode_ms_per_tile']:.0f} | {med['tiles']:.0f} | {med['ttft_s']:.2f} | "
              f"{med['decode_tok_s']:.1f} |")


if __name__ == "__main__":
    main()
