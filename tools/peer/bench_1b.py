"""The 1B benchmark: Llama-3.2-1B-shaped GGUF files made as a new user would make them, each
measured against llama.cpp on the same file and threads, in alternating rounds.

  .venv/bin/python tools/peer/bench_1b.py [--formats Q4_K_M,Q4_0,Q8_0,BF16] [--pp 512] [--tg 128]
      [--rounds 3] [--threads 2] [--backend iree] [--math exact] [--check-exact]

The files (cached in ~/.cache/xlacel/bench-1b): tools/gpu/make_random_llama.py --preset
llama-3.2-1b writes an HF directory of seeded random weights in bf16; llama.cpp's own
convert_hf_to_gguf.py turns it into a BF16 GGUF and its llama-quantize into the other formats
(both from the pinned llama-cpp-python sdist, tools/peer/build_llama_cpp). Per file, one table
row: prompt (pp) and generation (tg) tok/s of both engines (median of the rounds) and their
ratio, generation from an empty context as llama-bench measures it (xlacel's after the pp
prompt beside it); resident MiB against the file's MiB; the bytes a decode step reads and the
fraction of the measured read-bandwidth limit that decode reaches (from an empty context); prefill's FLOP rate against numpy's f32
GEMM (OpenBLAS) on the same threads, at the shape of the model's products; and model load, each
engine's server from start to ready.

--check-exact also compares xlacel's greedy tokens with HF transformers' on 2 prompts x 16
tokens for the Q4_K_M file (transformers dequantizes the GGUF; it is given the HF directory's
config, since its GGUF loader drops Llama 3's RoPE frequency factors, which xlacel applies).
--math fast runs xlacel (bench and the check) with int8 prefill products: not exact."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import compare_bench
import compare_servers

here = compare_bench.here
root = compare_bench.root
cache = os.path.join(os.environ.get("XLACEL_CACHE", os.path.expanduser("~/.cache/xlacel")), "bench-1b")
python = os.path.join(root, ".venv", "bin", "python")
MiB = 1024 * 1024


def run(command, **kwargs):
    print("+", " ".join(command), flush=True)
    subprocess.run(command, check=True, **kwargs)


def llama_cpp_sources(bin_dir):
    return os.path.normpath(os.path.join(bin_dir, "..", "..", "vendor", "llama.cpp"))


def make_files(formats, bin_dir):
    """The GGUF file of each format, made once."""
    hf = os.path.join(cache, "hf")
    if not os.path.exists(os.path.join(hf, "model.safetensors")):
        run([python, os.path.join(root, "tools", "gpu", "make_random_llama.py"), hf, "--preset", "llama-3.2-1b"])
    llama_cpp = llama_cpp_sources(bin_dir)
    bf16 = os.path.join(cache, "llama-1b-BF16.gguf")
    if not os.path.exists(bf16):
        # The converter's own gguf package (gguf-py) comes first on its path; it needs torch and
        # transformers, which the venv has for the HF oracle.
        run([python, os.path.join(llama_cpp, "convert_hf_to_gguf.py"), hf, "--outtype", "bf16",
             "--outfile", bf16 + ".part"])
        os.replace(bf16 + ".part", bf16)
    files = {}
    for name in formats:
        path = os.path.join(cache, f"llama-1b-{name}.gguf")
        if name != "BF16" and not os.path.exists(path):
            run([os.path.join(bin_dir, "llama-quantize"), bf16, path + ".part", name],
                stdout=subprocess.DEVNULL)
            os.replace(path + ".part", path)
        files[name] = path
    return hf, files


def product_flops_per_token(hf):
    """2 x the weights of a layer's products x layers: the FLOPs a prompt token costs in products
    (the lm_head runs for the last token only; attention's are left out)."""
    with open(os.path.join(hf, "config.json")) as f:
        c = json.load(f)
    h, i = c["hidden_size"], c["intermediate_size"]
    head_dim = c.get("head_dim", h // c["num_attention_heads"])
    q = c["num_attention_heads"] * head_dim
    kv = c["num_key_value_heads"] * head_dim
    per_layer = h * q + 2 * h * kv + q * h + 3 * h * i
    return 2 * per_layer * c["num_hidden_layers"]


def gemm_rate(threads, rows, hf):
    """numpy's f32 GEMM (OpenBLAS) on `threads` threads: rows x hidden times hidden x intermediate,
    the shape of the model's largest products; best of 5, FLOP/s."""
    with open(os.path.join(hf, "config.json")) as f:
        c = json.load(f)
    code = f"""
import time, numpy as np
a = np.random.rand({rows}, {c["hidden_size"]}).astype(np.float32)
b = np.random.rand({c["hidden_size"]}, {c["intermediate_size"]}).astype(np.float32)
best = 1e9
for _ in range(5):
    t = time.perf_counter(); a @ b; best = min(best, time.perf_counter() - t)
print(2 * a.shape[0] * a.shape[1] * b.shape[1] / best)
"""
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    return float(subprocess.run([python, "-c", code], check=True, capture_output=True, text=True,
                                env=env).stdout)


LOAD_POLL_SECONDS = 0.01  # both engines' /health polled alike: a coarser poll adds to the figure
LOAD_ROUNDS = 3


def load_seconds(path, bin_dir, threads):
    """Start to ready of each engine's server on the file (its graphs already compiled and the
    file in the page cache, as on a machine that has run it before): /health answering 200,
    polled every LOAD_POLL_SECONDS for both; the median of LOAD_ROUNDS alternating starts,
    after one start of each that is not counted."""
    def xlacel_start():
        started = time.perf_counter()
        server = compare_servers.ServerProcess(compare_servers.xlacel_path(), "-m", path,
                                               "--threads", str(threads), "--context", "512",
                                               poll_seconds=LOAD_POLL_SECONDS)
        seconds = time.perf_counter() - started
        server.stop()
        return seconds

    def peer_start():
        port = compare_servers.free_port()
        started = time.perf_counter()
        peer = subprocess.Popen([os.path.join(bin_dir, "llama-server"), "-m", path, "--host",
                                 "127.0.0.1", "--port", str(port), "-t", str(threads), "-c", "512"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            compare_servers.wait_healthy(port, peer, poll_seconds=LOAD_POLL_SECONDS)
            return time.perf_counter() - started
        finally:
            peer.terminate()
            peer.wait(30)

    xlacel_start(), peer_start()  # the first compiles xlacel's server graphs
    ours, theirs = [], []
    for _ in range(LOAD_ROUNDS):
        ours.append(xlacel_start())
        theirs.append(peer_start())
    return statistics.median(ours), statistics.median(theirs)


def check_exact(hf, path, llama_cpp, math):
    """xlacel's greedy tokens against transformers' on the GGUF file (tools/gpu/hf_gguf_greedy.py:
    2 prompts x 16 tokens)."""
    env = dict(os.environ, PYTHONPATH=os.path.join(llama_cpp, "gguf-py"))  # transformers reads GGUF through it
    oracle = subprocess.run([python, os.path.join(root, "tools", "gpu", "hf_gguf_greedy.py"), hf, path],
                            check=True, capture_output=True, text=True, env=env).stdout
    cases = [json.loads(line) for line in oracle.splitlines() if line.strip()]
    same = 0
    for case in cases:
        ids, want = case["prompt_ids"], case["output_ids"]
        out = subprocess.run([os.path.join(root, "build", "xlacel"), "generate", "-m", path, "--prompt-ids",
                              " ".join(map(str, ids)), "-n", str(len(want)), "--ignore-eos", "--output-format",
                              "json", "--math", math], check=True, capture_output=True, text=True).stdout
        got = json.loads(out)["output_ids"]
        print(f"prompt {ids}: HF {' '.join(map(str, want))}\n{'':>{len(str(ids)) + 8}}xlacel "
              f"{' '.join(map(str, got))}")
        same += got == want
    return same, len(cases)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--formats", default="Q4_K_M,Q4_0,Q8_0,BF16")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pp", type=int, default=512)
    parser.add_argument("--tg", type=int, default=128)
    parser.add_argument("--backend", default="iree")
    parser.add_argument("--math", default="exact", choices=["exact", "fast"])
    parser.add_argument("--check-exact", action="store_true")
    args = parser.parse_args()
    args.bench_args = ["--math", args.math]

    bin_dir = compare_bench.peer_bin_dir()
    hf, files = make_files(args.formats.split(","), bin_dir)
    gemm = gemm_rate(args.threads, args.pp, hf)
    flops = product_flops_per_token(hf)
    rows = []
    for name, path in files.items():
        args.model = path
        compare_bench.xlacel_report(args)  # warm the compile cache
        pp = {"xlacel": [], "llama.cpp": []}
        tg = {"xlacel": [], "llama.cpp": []}
        after = []
        report = fresh = None
        for round_index in range(args.rounds):
            report, fresh = compare_bench.xlacel_reports(args)
            pp["xlacel"].append(report["prompt_tokens_per_second"]["mean"])
            tg["xlacel"].append(fresh["generation_tokens_per_second"]["mean"])
            after.append(report["generation_tokens_per_second"]["mean"])
            peer_pp, peer_tg = compare_bench.llama_rates(args, bin_dir)
            pp["llama.cpp"].append(peer_pp)
            tg["llama.cpp"].append(peer_tg)
            print(f"{name} round {round_index + 1}: xlacel pp {pp['xlacel'][-1]:.1f} tg {tg['xlacel'][-1]:.2f}"
                  f" (after pp {after[-1]:.2f}) | llama.cpp pp {peer_pp:.1f} tg {peer_tg:.2f}", flush=True)
        median = {engine: (statistics.median(pp[engine]), statistics.median(tg[engine])) for engine in pp}
        read = sum(fresh["decode_bytes_per_token"].values())
        load = load_seconds(path, bin_dir, args.threads)
        rows.append((name, os.path.getsize(path) / MiB, report["weight_bytes"] / MiB, median,
                     statistics.median(after), read / MiB, fresh["decode_fraction_of_limit"],
                     median["xlacel"][0] * flops / gemm, load))
    print(f"\nLlama-3.2-1B shape, random weights, {args.threads} threads, xlacel --backend {args.backend} --math {args.math}, "
          f"pp{args.pp} / tg{args.tg}, median of {args.rounds} alternating rounds; "
          f"numpy f32 GEMM {gemm / 1e9:.1f} GFLOP/s; load: server start to ready, compiled and cached, "
          f"median of {LOAD_ROUNDS} alternating starts")
    print(compare_bench.engines_isa(bin_dir))
    print("| file | file MiB | resident MiB | resident/file | xlacel pp | llama.cpp pp | pp ratio | pp / f32 GEMM "
          f"| xlacel tg | llama.cpp tg | tg ratio | xlacel tg after pp{args.pp} | MiB read/token | tg / bandwidth limit "
          "| load s xlacel / llama.cpp |")
    print("|" + "---|" * 15)
    for name, file_mib, resident_mib, m, after, read_mib, fraction, of_gemm, load in rows:
        x, peer = m["xlacel"], m["llama.cpp"]
        print(f"| {name} | {file_mib:.0f} | {resident_mib:.0f} | {resident_mib / file_mib:.2f} | {x[0]:.1f} "
              f"| {peer[0]:.1f} | {x[0] / peer[0]:.2f}x | {of_gemm:.2f} | {x[1]:.2f} | {peer[1]:.2f} "
              f"| {x[1] / peer[1]:.2f}x | {after:.2f} | {read_mib:.0f} | {fraction:.2f} | {load[0]:.1f} / {load[1]:.1f} |")
    if args.check_exact and "Q4_K_M" in files:
        same, total = check_exact(hf, files["Q4_K_M"], llama_cpp_sources(bin_dir), args.math)
        print(f"Q4_K_M greedy vs HF (--math {args.math}): {same}/{total} prompts token-exact")


if __name__ == "__main__":
    sys.exit(main())
