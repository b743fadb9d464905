"""Time to first token of an agent's call whose long prompt (a system prompt and tools, about
2000 tokens) lost its slot to other requests, with and without the host prompt cache
(`xlacel serve --cache-ram`; not run in CI). Per server: the agent's first call (cold), two
other long prompts that take both slots, then the agent's next call; its time to first token
(streamed, measured by the client) against the cold one, and its tokens against a cold run's.

  .venv/bin/python tools/serving/prompt_cache_ttft.py [--cache-ram 4096] [--rounds 3]
      [--threads 2] [-- extra xlacel serve flags]
"""
import argparse
import os
import sys
import time

import openai

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../tests/server"))
from server_process import ServerProcess, xlacel_path  # noqa: E402

TOOLS = [{"type": "function", "function": {
    "name": f"tool_{i}", "description": f"Tool number {i}: looks up record {i} of the catalogue "
                                        "and returns its fields as JSON.",
    "parameters": {"type": "object", "properties": {"id": {"type": "string"},
                                                    "verbose": {"type": "boolean"}},
                   "required": ["id"]}}} for i in range(12)]
SYSTEM = ("You are an agent that helps engineers maintain a large codebase. Follow the style "
          "guide, explain your reasoning briefly, and call tools when you need facts. ") * 40


def ttft(client, model, messages, max_tokens=16):
    """Seconds to the first streamed chunk (it comes with the first token, text or not: a reply
    that opens a tool call withholds its text), and the whole reply's text and calls."""
    start = time.perf_counter()
    first = None
    text = ""
    for chunk in client.chat.completions.create(model=model, messages=messages, tools=TOOLS,
                                                 max_tokens=max_tokens, temperature=0,
                                                 stream=True):
        if chunk.choices:
            first = first or time.perf_counter() - start
            delta = chunk.choices[0].delta
            text += (delta.content or "") + str(delta.tool_calls or "")
    return first, text


def measure(cache_ram, args):
    server = ServerProcess(xlacel_path(), "--parallel", "2", "--context", "4096", "--threads",
                           str(args.threads), "--cache-ram", str(cache_ram), *args.serve_args)
    try:
        client = openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0,
                               timeout=600)
        model = client.models.list().data[0].id
        ttft(client, model, [{"role": "user", "content": "warm up"}], 2)
        rows = []
        for round_ in range(args.rounds):
            # Each round its own system prompt, so that its first call is cold.
            question = [{"role": "system", "content": f"Round {round_}. {SYSTEM}"},
                        {"role": "user", "content": f"Question {round_}: what does tool_3 do?"}]
            cold, cold_text = ttft(client, model, question)
            for other in range(2):  # two long prompts of their own take the slots
                ttft(client, model, [{"role": "system", "content": f"Other {round_}.{other} " +
                                      SYSTEM[::-1]}, {"role": "user", "content": "Hi"}], 2)
            again, again_text = ttft(client, model, question)
            rows.append((cold, again, again_text == cold_text))
        return rows, server.metrics()
    finally:
        server.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-ram", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("serve_args", nargs="*")
    args = parser.parse_args()
    for cache_ram in (0, args.cache_ram):
        rows, metrics = measure(cache_ram, args)
        print(f"--cache-ram {cache_ram}: hits {metrics.get('xlacel_prompt_cache_hits_total', 0):.0f}")
        for cold, again, same in rows:
            print(f"  cold {cold:.3f} s, after its slots were taken {again:.3f} s "
                  f"({again / cold:.2f}x), tokens {'unchanged' if same else 'DIFFER'}")


if __name__ == "__main__":
    main()
