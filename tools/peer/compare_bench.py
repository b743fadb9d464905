"""xlacel bench against llama.cpp's llama-bench on the same GGUF and threads: prompt processing
(pp) and generation (tg), in alternating rounds, one table with the ratios. Generation is
measured as llama-bench measures it, from an empty context (xlacel: after a 1-token prompt);
xlacel's generation right after the pp prompt, in a longer context, is given beside it.

  .venv/bin/python tools/peer/compare_bench.py [--threads 2] [--rounds 3] [--pp 128] [--tg 64]
      [--model GGUF] [--backend iree] [--avx2] [-- extra xlacel bench flags, e.g. --weights f32]

--avx2 compares what a CPU without AVX-512 runs, on any x86-64 machine: xlacel held to AVX2
(XLACEL_CPU_ISA=avx2) against llama.cpp built for AVX2 only (build_llama_cpp --avx2).

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


def xlacel_report(args, prompt_tokens=None, repetitions=None):
    """`xlacel bench --output-format json` on args.model (pp, tg, threads, backend, bench_args);
    prompt_tokens replaces args.pp (1: generation from an empty context, as llama-bench's tg);
    repetitions replaces bench's default number of timed runs."""
    command = [os.path.join(root, "build", "xlacel"), "bench", "-m", args.model, "--backend", args.backend,
               "--threads", str(args.threads), "--prompt-tokens", str(prompt_tokens or args.pp),
               "--gen-tokens", str(args.tg), "--no-cold-compile", "--output-format", "json", *args.bench_args]
    if repetitions is not None:
        command += ["-r", str(repetitions)]
    env = dict(os.environ, XLACEL_CPU_ISA="avx2") if args.avx2 else None
    out = subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out)


def xlacel_reports(args):
    """The report after the pp prompt, and the report of generation from an empty context."""
    return xlacel_report(args), xlacel_report(args, prompt_tokens=1)


def xlacel_rates(args):
    """pp, tg from an empty context, and tg after the pp prompt."""
    report, fresh = xlacel_reports(args)
    return (report["prompt_tokens_per_second"]["mean"], fresh["generation_tokens_per_second"]["mean"],
            report["generation_tokens_per_second"]["mean"])


def peer_bin_dir(avx2=False):
    """llama.cpp's bin directory (built once from the pinned sdist by build_llama_cpp; for AVX2
    only with avx2)."""
    command = [os.path.join(here, "build_llama_cpp")] + (["--avx2"] if avx2 else [])
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip()


def peer_build_flags(bin_dir):
    """The instruction-set options llama.cpp was configured with (its CMakeCache), e.g.
    "GGML_NATIVE" or "GGML_AVX GGML_AVX2 GGML_FMA GGML_F16C GGML_BMI2"."""
    cache = os.path.join(bin_dir, "..", "CMakeCache.txt")
    names = ("NATIVE", "AVX", "AVX2", "AVX_VNNI", "FMA", "F16C", "BMI2", "AVX512", "AVX512_VBMI",
             "AVX512_VNNI", "AVX512_BF16")
    on = []
    with open(cache) as lines:
        for line in lines:
            name, _, value = line.strip().partition("=")
            if name.split(":")[0] in {f"GGML_{n}" for n in names} and value.upper() == "ON":
                on.append(name.split(":")[0])
    return " ".join(sorted(on, key=lambda n: names.index(n[len("GGML_"):]))) or "none"


def engines_isa(bin_dir, avx2=False):
    """One line naming what each engine ran: xlacel's CPU kernels (`xlacel --version`) and
    llama.cpp's build options."""
    env = dict(os.environ, XLACEL_CPU_ISA="avx2") if avx2 else None
    version = subprocess.run([os.path.join(root, "build", "xlacel"), "--version"], check=True,
                             capture_output=True, text=True, env=env).stdout
    kernels = next((line.split("CPU kernels: ", 1)[1] for line in version.splitlines()
                    if "CPU kernels: " in line), "unknown")
    return f"xlacel CPU kernels: {kernels}; llama.cpp built with {peer_build_flags(bin_dir)}"


def llama_bench_rows(args, bin_dir, flags):
    """llama-bench's JSON rows on args.model with args.threads threads and `flags`."""
    command = [os.path.join(bin_dir, "llama-bench"), "-m", args.model, "-t", str(args.threads),
               "-o", "json", *flags]
    return json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)


def llama_rates(args, bin_dir):
    rows = llama_bench_rows(args, bin_dir, ["-p", str(args.pp), "-n", str(args.tg), "-r", "3"])
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
    parser.add_argument("--avx2", action="store_true",
                        help="both engines held to AVX2 (XLACEL_CPU_ISA=avx2, llama.cpp built so)")
    parser.add_argument("bench_args", nargs="*", help="extra xlacel bench flags (after --)")
    args = parser.parse_args()

    bin_dir = peer_bin_dir(args.avx2)
    xlacel_rates(args)  # warm the compile cache
    rates = {"xlacel": ([], [], []), "llama.cpp": ([], [])}
    for round_index in range(args.rounds):
        pp, tg, after = xlacel_rates(args)
        for values, value in zip(rates["xlacel"], (pp, tg, after)):
            values.append(value)
        print(f"round {round_index + 1} xlacel    pp{args.pp} {pp:8.1f} tok/s  tg{args.tg} {tg:7.2f} tok/s"
              f"  (after pp{args.pp}: {after:.2f})", flush=True)
        pp, tg = llama_rates(args, bin_dir)
        rates["llama.cpp"][0].append(pp)
        rates["llama.cpp"][1].append(tg)
        print(f"round {round_index + 1} llama.cpp pp{args.pp} {pp:8.1f} tok/s  tg{args.tg} {tg:7.2f} tok/s", flush=True)
    flags = " ".join(args.bench_args)
    isa = ", AVX2 only" if args.avx2 else ""
    print(f"\n{os.path.basename(args.model)}, {args.threads} threads{isa}, xlacel --backend {args.backend} {flags}".rstrip())
    print(engines_isa(bin_dir, args.avx2))
    print(f"| engine | pp{args.pp} tok/s | tg{args.tg} tok/s | tg{args.tg} after pp{args.pp} |")
    print("|---|---|---|---|")
    medians = {name: [statistics.median(values) for values in columns] for name, columns in rates.items()}
    for name, m in medians.items():
        after = f"{m[2]:.2f}" if len(m) > 2 else "-"
        print(f"| {name} | {m[0]:.1f} | {m[1]:.2f} | {after} |")
    ratio_pp = medians["xlacel"][0] / medians["llama.cpp"][0]
    ratio_tg = medians["xlacel"][1] / medians["llama.cpp"][1]
    print(f"| xlacel / llama.cpp | {ratio_pp:.2f}x | {ratio_tg:.2f}x | |")


if __name__ == "__main__":
    sys.exit(main())
