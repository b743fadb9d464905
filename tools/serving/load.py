"""Concurrent streaming clients against an OpenAI-compatible server (xlacel serve, or the peer's
llama-server), with OpenAI's official client; what soak.py and compare_servers.py measure with.

Each client sends chat requests one after another (streamed, greedy by default) until a
deadline or a request count, and records time to first token, completion tokens and errors."""
import itertools
import random
import statistics
import threading
import time
from dataclasses import dataclass, field

import openai

PROMPTS = [
    "Write a short story about a lighthouse keeper.",
    "Explain how bread rises.",
    "Describe a walk through a forest in autumn.",
    "What makes a good friend?",
    "Tell me about the history of the bicycle.",
    "Write a poem about the sea.",
    "How do bees make honey?",
    "Describe the city of the future.",
]


@dataclass
class LoadResult:
    requests: int = 0
    errors: list = field(default_factory=list)
    ttft: list = field(default_factory=list)  # seconds, one per successful request
    completion_tokens: int = 0
    wall_seconds: float = 0

    def tokens_per_second(self):
        return self.completion_tokens / self.wall_seconds if self.wall_seconds else 0

    def percentile(self, p):
        if not self.ttft:
            return float("nan")
        ordered = sorted(self.ttft)
        return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]

    def summary(self):
        return (f"{self.requests} requests, {len(self.errors)} errors, "
                f"{self.completion_tokens} tokens in {self.wall_seconds:.1f} s = "
                f"{self.tokens_per_second():.1f} tok/s, ttft p50 {self.percentile(50):.3f} s "
                f"p99 {self.percentile(99):.3f} s")


def one_request(client, model, prompt, max_tokens, result, lock):
    start = time.perf_counter()
    first = None
    tokens = None
    chunks = 0
    stream = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": prompt}], max_tokens=max_tokens,
        temperature=0, stream=True, stream_options={"include_usage": True})
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            chunks += 1
            if first is None:
                first = time.perf_counter() - start
        if chunk.usage is not None:
            tokens = chunk.usage.completion_tokens
    with lock:
        result.requests += 1
        result.completion_tokens += tokens if tokens is not None else chunks
        if first is not None:
            result.ttft.append(first)


def run_load(base_url, model, clients, max_tokens=128, seconds=None, requests_per_client=None,
             api_key="unused", fresh_prompts=False):
    """Runs `clients` concurrent clients for `seconds`, or `requests_per_client` each.
    fresh_prompts: every request's message starts with a number of its own, so no server can
    reuse an earlier request's prompt beyond the chat template's fixed start."""
    result = LoadResult()
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds if seconds else None
    fresh = itertools.count(random.randrange(10**6, 10**7))  # next() is atomic in CPython

    def client_loop(index):
        client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=600)
        n = 0
        while True:
            if deadline is not None and time.perf_counter() >= deadline:
                return
            if requests_per_client is not None and n >= requests_per_client:
                return
            prompt = PROMPTS[(index + n) % len(PROMPTS)]
            if fresh_prompts:
                prompt = f"{next(fresh)}. {prompt}"
            n += 1
            try:
                one_request(client, model, prompt, max_tokens, result, lock)
            except Exception as e:  # counted, and the client goes on
                with lock:
                    result.errors.append(repr(e))

    start = time.perf_counter()
    threads = [threading.Thread(target=client_loop, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    result.wall_seconds = time.perf_counter() - start
    return result


def median(values):
    return statistics.median(values) if values else float("nan")
