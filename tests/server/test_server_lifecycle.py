"""`xlacel serve` from start to stop: 503 while loading, the API key, the bounded queue (429),
and SIGTERM with streams in flight (they end, the process exits 0); the host prompt cache
(--cache-ram) across requests that take each other's slot; and slots saved to files and restored
(POST /slots/{id}?action=save|restore|erase, --slot-save-path), across a restart too."""
import os
import shutil
import sys
import tempfile
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
            # Without --slot-save-path the slot actions are off.
            status, body = server.request("POST", "/slots/0?action=save", {"filename": "a.bin"})
            self.assertEqual(status, 501, body)
            self.assertIn("--slot-save-path", body["error"]["message"])
        finally:
            self.assertEqual(server.stop(), 0, server.log())


AGENT = [{"role": "system", "content": "You are a helpful agent. " * 8},
         {"role": "user", "content": "Hallo ☃"}]
OTHER = [{"role": "user", "content": "Something else entirely, about trains. " * 3}]


class SlotFilesTest(unittest.TestCase):
    """A slot saved to a file and restored after another request took it, and in a new server
    process, gives the prompt back without prefilling it, with the same reply."""

    def setUp(self):
        self.directory = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.directory, ignore_errors=True)

    def serve(self, context="512"):
        return ServerProcess(xlacel_path(), "-m", TINY_QWEN3, "--parallel", "1", "--context",
                             context, "--slot-save-path", self.directory, "--api-key", KEY)

    @staticmethod
    def ask(server, messages):
        client = openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0)
        return client.chat.completions.create(model="qwen3", messages=messages, max_tokens=8,
                                              temperature=0)

    @staticmethod
    def slots(server, query, body=None, key=KEY):
        return server.request("POST", f"/slots/{query}", body,
                              {"Authorization": f"Bearer {key}"} if key else {})

    def test_a_slot_saved_to_a_file_comes_back_in_this_server_and_the_next(self):
        server = self.serve()
        try:
            first = self.ask(server, AGENT)
            status, saved = self.slots(server, "0?action=save", {"filename": "agent.bin"})
            self.assertEqual(status, 200, saved)
            # The prompt and the replies fed back (all but the last token).
            self.assertEqual(saved["n_saved"], first.usage.total_tokens - 1)
            self.assertEqual(saved["n_written"],
                             os.path.getsize(os.path.join(self.directory, "agent.bin")))
            self.assertEqual(saved["id_slot"], 0)
            self.assertIn("save_ms", saved["timings"])
            self.ask(server, OTHER)  # takes the one slot
            status, restored = self.slots(server, "0?action=restore", {"filename": "agent.bin"})
            self.assertEqual(status, 200, restored)
            self.assertEqual(restored["n_restored"], saved["n_saved"])
            self.assertEqual(restored["n_read"], saved["n_written"])
            again = self.ask(server, AGENT)
            self.assertEqual(again.choices[0].message.content, first.choices[0].message.content)
            self.assertEqual(again.usage.prompt_tokens_details.cached_tokens,
                             first.usage.prompt_tokens - 1)
            status, erased = self.slots(server, "0?action=erase")
            self.assertEqual((status, erased["n_erased"]), (200, again.usage.total_tokens - 1))

            for query, body, want, field in [
                    ("0?action=save", {"filename": "../escape.bin"}, 400, "filename"),
                    ("0?action=save", {"filename": ".hidden"}, 400, "filename"),
                    ("0?action=save", {"filename": "a/b.bin"}, 400, "filename"),
                    ("0?action=save", {"filename": "x\u0001"}, 400, "filename"),
                    ("0?action=save", {"filename": ""}, 400, "filename"),
                    ("0?action=save", {}, 400, "filename"),
                    ("0?action=save", {"filename": 7}, 400, "filename"),
                    ("0?action=restore", {"filename": "absent.bin"}, 404, "filename"),
                    ("0?action=reset", {"filename": "agent.bin"}, 400, "action"),
                    ("0", {"filename": "agent.bin"}, 400, "action"),
                    ("3?action=erase", None, 404, "id_slot")]:
                status, body = self.slots(server, query, body)
                self.assertEqual(status, want, (query, body))
                self.assertEqual(body["error"]["param"], field, (query, body))
            status, body = self.slots(server, "0?action=save", {"filename": "a.bin"}, key=None)
            self.assertEqual(status, 401, body)
            self.assertEqual(sorted(os.listdir(self.directory)), ["agent.bin"])
        finally:
            self.assertEqual(server.stop(), 0, server.log())

        server = self.serve()  # a new process: the file still restores
        try:
            status, restored = self.slots(server, "0?action=restore", {"filename": "agent.bin"})
            self.assertEqual(status, 200, restored)
            again = self.ask(server, AGENT)
            self.assertEqual(again.choices[0].message.content, first.choices[0].message.content)
            self.assertEqual(again.usage.prompt_tokens_details.cached_tokens,
                             first.usage.prompt_tokens - 1)
        finally:
            self.assertEqual(server.stop(), 0, server.log())

        server = self.serve(context="256")  # slots of another shape refuse it
        try:
            status, body = self.slots(server, "0?action=restore", {"filename": "agent.bin"})
            self.assertEqual(status, 400, body)
            self.assertIn("512 positions", body["error"]["message"])
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
