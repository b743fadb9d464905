"""Soak test for `xlacel serve` (not run in CI): starts the server, runs 64 concurrent
streaming clients for 10 minutes (by default), and reports requests served, errors, p50/p99
time to first token, aggregate tok/s and the server's RSS at start and end.

  .venv/bin/python tools/serving/soak.py [--minutes 10] [--clients 64] [--parallel 8]
      [--threads 2] [--max-tokens 64] [-- extra xlacel serve flags]
"""
import argparse
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../tests/server"))
sys.path.insert(0, os.path.dirname(__file__))
from load import run_load  # noqa: E402
from server_process import ServerProcess, xlacel_path  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--context", type=int, default=512)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("serve_args", nargs="*")
    args = parser.parse_args()

    server = ServerProcess(xlacel_path(), "--parallel", str(args.parallel), "--threads",
                           str(args.threads), "--context", str(args.context), "--queue",
                           str(args.clients), *args.serve_args)
    try:
        model = server.request("GET", "/v1/models")[1]["data"][0]["id"]
        # Warm-up (first-touch allocations), then the RSS baseline.
        run_load(server.base_url, model, clients=args.parallel, max_tokens=8,
                 requests_per_client=1)
        rss_start = server.rss_bytes()
        samples = []
        stop = threading.Event()

        def sample_rss():
            while not stop.wait(30):
                samples.append(server.rss_bytes())

        sampler = threading.Thread(target=sample_rss, daemon=True)
        sampler.start()
        result = run_load(server.base_url, model, clients=args.clients,
                          max_tokens=args.max_tokens, seconds=args.minutes * 60)
        stop.set()
        rss_end = server.rss_bytes()
        print(f"soak: {args.clients} clients x {args.minutes:g} min, --parallel {args.parallel}, "
              f"--threads {args.threads}, max_tokens {args.max_tokens}")
        print(f"served:     {result.summary()}")
        print(f"rss:        start {rss_start / 2**20:.1f} MiB, end {rss_end / 2**20:.1f} MiB "
              f"({(rss_end - rss_start) / rss_start * 100:+.2f}%), max seen "
              f"{max(samples + [rss_end]) / 2**20:.1f} MiB")
        for error in result.errors[:5]:
            print(f"error:      {error}")
    finally:
        status = server.stop()
        print(f"server exit status {status}")
    return 1 if result.errors else 0


if __name__ == "__main__":
    sys.exit(main())
