"""`xlacel serve` from start to stop: 503 while loading, the API key, the bounded queue (429),
and SIGTERM with streams in flight (they end, the process exits 0); and the host prompt cache
(--cache-ram) across requests that take each other's slot."""
import os
import sys
import threading
import time
import unittest

import openai

sys.path.insert(0, os.path.dirname(__file__))
from server_process import ServerProcess, xlacel_path  # noqa: E402

KEY = "test-key-123"
TINY_QWEN3 = os.path.join(os.path.dirname(__file__), "..", "data", "models", "qwen3")


class PromptCacheTest(unittest.TestCase):
    def test_a_prompt_whose_slot_was_taken_comes_back_from_the_host(self):
        server = ServerProcess(xlacel_path(), "-m", TINY_QWEN3, "--parallel", "1", "--context",
                               "512", "--cache-ram", "64")
        try:
            client = openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0)
            agent = [{"role": "system", "content": "You are a helpful agent. " * 8},
                     {"role": "user", "content": "Hallo ☃"}]
            other = [{"role": "user", "content": "Something else entirely, about trains. " * 3}]

            def ask(messages):
                return client.chat.completions.create(model="qwen3", messages=messages,
                                                      max_tokens=8, temperature=0)
            first = ask(agent)
            ask(other)  # takes the one slot: the agent's prompt goes to the host first
            again = ask(agent)
            self.assertEqual(again.choices[0].message.content, first.choices[0].message.content)
            self.assertEqual(again.usage.prompt_tokens_details.cached_tokens,
                             first.usage.prompt_tokens - 1)
            metrics = server.metrics()
            self.assertEqual(metrics["xlacel_prompt_cache_hits_total"], 1)
            self.assertEqual(metrics["xlacel_prompt_cache_entries"], 2)
            self.assertGreater(metrics["xlacel_prompt_cache_bytes"], 0)
        finally:
            self.assertEqual(server.stop(), 0, server.log())


class ServerLifecycleTest(unittest.TestCase):
    def test_lifecycle(self):
        # No grace after SIGTERM: SmolLM2 decodes the running stream's 400 tokens in ~1.5 s on
        # 2 cores, within any grace long enough to matter, and the test needs it cut.
        server = ServerProcess(xlacel_path(), "--parallel", "1", "--queue", "1", "--context",
                               "512", "--api-key", KEY, "--shutdown-grace", "0")
        self.server = server
        try:
            self.check_loading_answers(server)
            self.check_api_key(server)
            self.check_queue_and_shutdown(server)
        finally:
            if server.process.poll() is None:
                server.process.kill()

    def check_loading_answers(self, server):
        # Every /health answer before ready was 503 with an OpenAI-shaped error.
        for status, body in server.health_statuses[:-1]:
            self.assertEqual(status, 503, body)
            self.assertIn("message", body["error"])
        self.assertEqual(server.health_statuses[-1][0], 200)

    def client(self, key=KEY):
        return openai.OpenAI(base_url=self.server.base_url, api_key=key, max_retries=0,
                             timeout=600)

    def check_api_key(self, server):
        with self.assertRaises(openai.AuthenticationError):
            self.client("wrong").models.list()
        status, body = server.request("POST", "/v1/completions", {"model": "x", "prompt": "a"})
        self.assertEqual(status, 401)
        self.assertEqual(body["error"]["code"], "invalid_api_key")
        self.assertEqual(server.request("GET", "/health")[0], 200)  # open without a key
        model = self.client().models.list().data[0].id
        out = self.client().completions.create(model=model, prompt="Hi", max_tokens=2,
                                               temperature=0)
        self.assertEqual(out.usage.completion_tokens, 2)

    def check_queue_and_shutdown(self, server):
        client = self.client()
        model = client.models.list().data[0].id
        messages = [{"role": "user", "content": "Tell me a very long story about a castle."}]
        # One stream runs in the only slot, one request waits in the queue of one ...
        running = client.chat.completions.create(model=model, messages=messages,
                                                 max_tokens=400, temperature=0, stream=True)
        first = next(iter(running))
        self.assertEqual(first.choices[0].delta.role, "assistant")
        waiting_outcome = {}

        def wait_in_queue():
            try:
                out = client.chat.completions.create(model=model, messages=messages,
                                                     max_tokens=400, temperature=0)
                waiting_outcome["finish"] = out.choices[0].finish_reason
            except openai.APIStatusError as e:
                waiting_outcome["status"] = e.status_code

        waiter = threading.Thread(target=wait_in_queue)
        waiter.start()
        deadline = time.time() + 30
        while server.metrics()["xlacel_queue_depth"] < 1 and time.time() < deadline:
            time.sleep(0.1)
        self.assertEqual(server.metrics()["xlacel_queue_depth"], 1)
        # ... so a third is refused.
        with self.assertRaises(openai.RateLimitError):
            client.chat.completions.create(model=model, messages=messages, max_tokens=4)

        # SIGTERM with both in flight: they get up to --shutdown-grace (0 here), then are
        # cancelled; the stream ends with an error event, the waiting request with 503, and the
        # process exits 0.
        server.signal()
        stream_error = None
        received = 0
        try:
            for _ in running:
                received += 1
        except openai.APIError as e:
            stream_error = e
        waiter.join(60)
        self.assertFalse(waiter.is_alive())
        status = server.stop(timeout=60)
        self.assertEqual(status, 0, server.log())
        self.assertIsNotNone(stream_error, f"the stream ran to its end ({received} chunks)")
        self.assertIn("shutting down", str(stream_error))
        self.assertEqual(waiting_outcome.get("status"), 503, waiting_outcome)
        self.assertIn("stopped", server.log())


if __name__ == "__main__":
    unittest.main(verbosity=2)
