"""xlacel serve against llama.cpp's llama-server on the same GGUF, threads and parallel slots,
measured by the same client script (tools/serving/load.py) in alternating rounds.

  .venv/bin/python tools/peer/compare_servers.py [--parallel 8] [--threads 2] [--rounds 3]
      [--requests 2] [--max-tokens 64] [--fresh-prompts] [--model GGUF]
      [-- extra xlacel serve flags]

llama-server comes from tools/peer/build_llama_cpp (built from the pinned llama-cpp-python
sdist, cached)."""
import argparse
import http.client
import os
import socket
import statistics
import subprocess
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "../../tests/server"))
sys.path.insert(0, os.path.join(here, "../serving"))
from load import run_load  # noqa: E402
from server_process import ServerProcess, xlacel_path  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(port, process, timeout=600, poll_seconds=0.5):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if process.poll() is not None:
            raise RuntimeError("llama-server exited while loading")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/health")
            if connection.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(poll_seconds)
    raise RuntimeError("llama-server was not ready in time")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--context", type=int, default=512, help="positions per slot")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=2, help="requests per client per round")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--fresh-prompts", action="store_true",
                        help="a prompt of its own per request (no reuse of earlier prompts): "
                             "the time to first token then includes the prompt's prefill")
    parser.add_argument("--model", default=os.path.expanduser(
        "~/.cache/xlacel/models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    parser.add_argument("serve_args", nargs="*")
    args = parser.parse_args()

    bin_dir = subprocess.run([os.path.join(here, "build_llama_cpp")], check=True,
                             capture_output=True, text=True).stdout.strip()
    port = free_port()
    peer = subprocess.Popen(
        [os.path.join(bin_dir, "llama-server"), "-m", args.model, "--host", "127.0.0.1",
         "--port", str(port), "-t", str(args.threads), "-tb", str(args.threads),
         "-np", str(args.parallel), "-c", str(args.parallel * args.context)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ours = None
    try:
        wait_healthy(port, peer)
        ours = ServerProcess(xlacel_path(), "-m", args.model, "--parallel", str(args.parallel),
                             "--threads", str(args.threads), "--context", str(args.context),
                             *args.serve_args)
        model = ours.request("GET", "/v1/models")[1]["data"][0]["id"]
        servers = {"xlacel": (ours.base_url, model),
                   "llama.cpp": (f"http://127.0.0.1:{port}/v1", "peer")}
        for name, (url, model_name) in servers.items():  # warm-up
            run_load(url, model_name, clients=args.parallel, max_tokens=8, requests_per_client=1)
        rates = {name: [] for name in servers}
        for round_index in range(args.rounds):
            for name, (url, model_name) in servers.items():
                result = run_load(url, model_name, clients=args.parallel,
                                  max_tokens=args.max_tokens,
                                  requests_per_client=args.requests,
                                  fresh_prompts=args.fresh_prompts)
                rates[name].append(result.tokens_per_second())
                print(f"round {round_index + 1} {name:9s} {result.summary()}", flush=True)
        print(f"\n{args.parallel} concurrent streams, {args.threads} threads, "
              f"max_tokens {args.max_tokens}, {os.path.basename(args.model)}")
        print("| server | aggregate tok/s (median) | rounds |")
        print("|---|---|---|")
        for name, values in rates.items():
            print(f"| {name} | {statistics.median(values):.1f} | "
                  f"{', '.join(f'{v:.1f}' for v in values)} |")
        ratio = statistics.median(rates["xlacel"]) / statistics.median(rates["llama.cpp"])
        print(f"xlacel / llama.cpp = {ratio:.2f}x")
    finally:
        peer.terminate()
        peer.wait(30)
        if ours is not None:
            ours.stop()


if __name__ == "__main__":
    main()
