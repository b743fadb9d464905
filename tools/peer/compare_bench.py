"""xlacel bench against llama.cpp's llama-bench on the same GGUF and threads: prompt processing
(pp) and generation (tg), in alternating rounds, one table with the ratios.

  .venv/bin/python tools/peer/compare_bench.py [--threads 2] [--rounds 3] [--pp 128] [--tg 64]
      [--model GGUF] [--backend iree] [-- extra xlacel bench flags, e.g. --weights f32]

llama-bench comes from tools/peer/build_llama_cpp (built from the pinned llama-cpp-python sdist,
cached). Each round runs each engine once (3 repetitions inside); the table gives the median of
the rounds, so both engines see the same machine load on average."""
import argparse
import json
import os
import statistics
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.normpath(os.path.join(here, "../.."))


def xlacel_report(args):
    """`xlacel bench --output-format json` on args.model (pp, tg, threads, backend, bench_args)."""
    command = [os.path.join(root, "build", "xlacel"), "bench", "-m", args.model, "--backend", args.backend,
               "--threads", str(args.threads), "--prompt-tokens", str(args.pp), "--gen-tokens", str(args.tg),
               "--no-cold-compile", "--output-format", "json", *args.bench_args]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def xlacel_rates(args):
    report = xlacel_report(args)
    return report["prompt_tokens_per_second"]["mean"], report["generation_tokens_per_second"]["mean"]


def peer_bin_dir():
    """llama.cpp's bin directory (built once from the pinned sdist by build_llama_cpp)."""
    return subprocess.run([os.path.join(here, "build_llama_cpp")], check=True, capture_output=True,
                          text=True).stdout.strip()


def llama_rates(args, bin_dir):
    command = [os.path.join(bin_dir, "llama-bench"), "-m", args.model, "-t", str(args.threads),
               "-p", str(args.pp), "-n", str(args.tg), "-r", "3", "-o", "json"]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    rows = json.loads(out)
    pp = next(r["avg_ts"] for r in rows if r["n_prompt"] == args.pp and r["n_gen"] == 0)
    tg = next(r["avg_ts"] for r in rows if r["n_gen"] == args.tg and r["n_prompt"] == 0)
    return pp, tg


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pp", type=int, default=128)
    parser.add_argument("--tg", type=int, default=64)
    parser.add_argument("--backend", default="iree")
    parser.add_argument("--model", default=os.path.expanduser(
        "~/.cache/xlacel/models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    parser.add_argument("bench_args", nargs="*", help="extra xlacel bench flags (after --)")
    args = parser.parse_args()

    bin_dir = peer_bin_dir()
    xlacel_rates(args)  # warm the compile cache
    rates = {"xlacel": ([], []), "llama.cpp": ([], [])}
    for round_index in range(args.rounds):
        for name, measure in (("xlacel", lambda: xlacel_rates(args)), ("llama.cpp", lambda: llama_rates(args, bin_dir))):
            pp, tg = measure()
            rates[name][0].append(pp)
            rates[name][1].append(tg)
            print(f"round {round_index + 1} {name:9s} pp{args.pp} {pp:8.1f} tok/s  tg{args.tg} {tg:7.2f} tok/s",
                  flush=True)
    flags = " ".join(args.bench_args)
    print(f"\n{os.path.basename(args.model)}, {args.threads} threads, xlacel --backend {args.backend} {flags}".rstrip())
    print("| engine | pp{0} tok/s | tg{1} tok/s |".format(args.pp, args.tg))
    print("|---|---|---|")
    medians = {}
    for name, (pp, tg) in rates.items():
        medians[name] = (statistics.median(pp), statistics.median(tg))
        print(f"| {name} | {medians[name][0]:.1f} | {medians[name][1]:.2f} |")
    ratio_pp = medians["xlacel"][0] / medians["llama.cpp"][0]
    ratio_tg = medians["xlacel"][1] / medians["llama.cpp"][1]
    print(f"| xlacel / llama.cpp | {ratio_pp:.2f}x | {ratio_tg:.2f}x |")


if __name__ == "__main__":
    sys.exit(main())
