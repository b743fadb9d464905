"""Long context against llama.cpp: prompt processing of a D-token prompt and generation after it,
at each depth D, on the same GGUF and threads, in alternating rounds, one table with the ratios
and the fraction of the decode limit (weights plus the KV rows read) xlacel reaches.

  .venv/bin/python tools/peer/bench_depth.py [--model GGUF] [--depths 0,1024,4096,16384,32768]
      [--tg 32] [--rounds 2] [--threads 2] [--backend iree] [--avx2] [-- extra xlacel bench flags]

xlacel: `xlacel bench --prompt-tokens D --gen-tokens TG` (its context the smallest power of two
from 512 that holds both), so pp is the D-token prompt from an empty cache and tg the generation
right after it, at depth D; depth 0 is a 1-token prompt. llama.cpp: `llama-bench -p D -n 0` (pp)
and `llama-bench -p 0 -n TG -d D` (tg at depth D), each with flash attention on and off, the
better of the two taken (its default, auto, picks one). --avx2 holds both engines to AVX2
(XLACEL_CPU_ISA=avx2, llama.cpp from build_llama_cpp --avx2). Each round runs each engine once
per depth (xlacel 1 repetition, llama-bench 2); the table gives the median of the rounds."""
import argparse
import os
import statistics
import sys

import compare_bench


def xlacel_rates(args, depth):
    """pp of a `depth`-token prompt, tg after it, and the fraction of the decode limit reached."""
    report = compare_bench.xlacel_report(args, prompt_tokens=max(depth, 1), repetitions=1)
    pp = report["prompt_tokens_per_second"]["mean"] if depth > 0 else None
    read = sum(report["decode_bytes_per_token"].values())
    return pp, report["generation_tokens_per_second"]["mean"], report["decode_fraction_of_limit"], read


def llama_bench(args, bin_dir, flags):
    """llama-bench's rows for `flags`, once with flash attention on and once off."""
    rows = []
    for fa in ("on", "off"):
        rows += compare_bench.llama_bench_rows(args, bin_dir, ["-r", "2", "-fa", fa, *flags])
    return rows


def llama_rates(args, bin_dir, depth):
    """pp of a `depth`-token prompt (None at depth 0) and tg at that depth: the better of flash
    attention on and off."""
    pp = None
    if depth > 0:
        pp = max(r["avg_ts"] for r in llama_bench(args, bin_dir, ["-p", str(depth), "-n", "0"]))
    tg = max(r["avg_ts"] for r in llama_bench(args, bin_dir, ["-p", "0", "-n", str(args.tg), "-d", str(depth)]))
    return pp, tg


def cell(value, digits=1):
    return "-" if value is None else f"{value:.{digits}f}"


def ratio(a, b):
    return "-" if a is None or b is None else f"{a / b:.2f}x"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=os.path.expanduser(
        "~/.cache/xlacel/models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    parser.add_argument("--depths", default="0,1024,4096")
    parser.add_argument("--tg", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--backend", default="iree")
    parser.add_argument("--avx2", action="store_true",
                        help="both engines held to AVX2 (XLACEL_CPU_ISA=avx2, llama.cpp built so)")
    parser.add_argument("bench_args", nargs="*", help="extra xlacel bench flags (after --)")
    args = parser.parse_args()
    try:
        depths = [int(d) for d in args.depths.split(",")]
    except ValueError:
        parser.error(f"--depths: a comma-separated list of token counts, not '{args.depths}'")
    if any(d < 0 for d in depths):
        parser.error("--depths: each depth must be 0 or more")

    bin_dir = compare_bench.peer_bin_dir(args.avx2)
    results = {d: {"xlacel": [], "llama.cpp": []} for d in depths}
    for depth in depths:
        xlacel_rates(args, depth)  # warm the compile cache for this depth's graphs
    for round_index in range(args.rounds):
        for depth in depths:
            ours = xlacel_rates(args, depth)
            peer = llama_rates(args, bin_dir, depth)
            results[depth]["xlacel"].append(ours)
            results[depth]["llama.cpp"].append(peer)
            print(f"round {round_index + 1} depth {depth}: xlacel pp {cell(ours[0])} tg {ours[1]:.2f}"
                  f" ({ours[2] * 100:.0f}% of limit) | llama.cpp pp {cell(peer[0])} tg {peer[1]:.2f}",
                  flush=True)

    def median(values):
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else None

    isa = ", AVX2 only" if args.avx2 else ""
    flags = " ".join(args.bench_args)
    print(f"\n{os.path.basename(args.model)}, {args.threads} threads{isa}, xlacel --backend {args.backend}"
          f" {flags}".rstrip())
    print(compare_bench.engines_isa(bin_dir, args.avx2))
    print(f"| depth | pp xlacel | pp llama.cpp | pp ratio | tg{args.tg} xlacel | tg{args.tg} llama.cpp"
          f" | tg ratio | xlacel MiB read per token | xlacel % of limit |")
    print("|---|---|---|---|---|---|---|---|---|")
    for depth in depths:
        ours, peer = results[depth]["xlacel"], results[depth]["llama.cpp"]
        pp = median([r[0] for r in ours]), median([r[0] for r in peer])
        tg = median([r[1] for r in ours]), median([r[1] for r in peer])
        limit = median([r[2] for r in ours])
        read = median([r[3] for r in ours]) / (1024 * 1024)
        print(f"| {depth} | {cell(pp[0])} | {cell(pp[1])} | {ratio(*pp)} | {tg[0]:.2f} | {tg[1]:.2f}"
              f" | {ratio(*tg)} | {read:.1f} | {limit * 100:.0f}% |")


if __name__ == "__main__":
    sys.exit(main())
