"""Embeddings per second through `xlacel serve` (POST /v1/embeddings, the official client; not
run in CI): a batch of short inputs (RAG chunks' titles: about 10 tokens each) and one of long
inputs (about 200 tokens), each request timed after a warm-up request that compiles the graphs.
With several `--xlacel` programs (e.g. two builds), their servers run one after another per round
and each prints its rates.

  .venv/bin/python tools/serving/embeddings_throughput.py [--xlacel BIN ...] [--rounds 3]
      [-- extra xlacel serve flags]
"""
import argparse
import os
import sys
import time

import openai

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../tests/server"))
from server_process import ServerProcess, xlacel_path  # noqa: E402

SHORT = [f"Section {i}: notes on topic number {i}." for i in range(64)]
LONG = [" ".join(f"Paragraph {i} sentence {j} about the catalogue." for j in range(25))
        for i in range(16)]


def rates(binary, serve_args):
    server = ServerProcess(binary, *serve_args)
    try:
        client = openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0,
                               timeout=3600)
        model = client.models.list().data[0].id
        client.embeddings.create(model=model, input=SHORT[:8] + LONG[:2])  # compiles the graphs
        result = {}
        for name, inputs in (("short", SHORT), ("long", LONG)):
            start = time.perf_counter()
            reply = client.embeddings.create(model=model, input=inputs)
            seconds = time.perf_counter() - start
            result[name] = (len(inputs) / seconds, reply.usage.prompt_tokens / seconds)
        return result
    finally:
        server.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--xlacel", action="append", default=[])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("serve_args", nargs="*")
    args = parser.parse_args()
    binaries = args.xlacel or [xlacel_path()]
    for round_ in range(args.rounds):
        for binary in binaries:
            result = rates(binary, args.serve_args)
            print(f"round {round_} {binary}: " + ", ".join(
                f"{name} {per_second:.1f} inputs/s ({tokens:.0f} tok/s)"
                for name, (per_second, tokens) in result.items()), flush=True)


if __name__ == "__main__":
    main()
