"""`xlacel serve` spoken to with OpenAI's official client (and raw HTTP for malformed input), on
the default model, loopback only. Greedy outputs are checked against `xlacel generate` (itself
token-exact with transformers) and against each other when batched."""
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
import unittest

import openai

sys.path.insert(0, os.path.dirname(__file__))
from server_process import ServerProcess, xlacel_path  # noqa: E402

XLACEL = xlacel_path()
CONTEXT = 512

# Chats in several scripts, with combining characters and 4-byte characters: the replies echo
# them, so tokens that end inside a UTF-8 character are common.
MULTILINGUAL = [
    "Écris une phrase sur l'été à Noël, s'il te plaît.",
    "请用中文介绍一下长城。",
    "日本の首都はどこですか？",
    "Repeat after me: 😀🎉👍🏽🤖 👩‍👩‍👧 🇫🇷",
    "Расскажи мне о Москве.",
    "Ünïcödé 😀 and \"quotes\" and \\ backslash\nnewline",
    "Τι είναι η Ακρόπολη;",
    "한국의 수도는 어디입니까?",
    "Combining marks: e\u0301 a\u0300 n\u0303 o\u0308 Z\u0351\u0334 and 𝄞 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𐍈",
]

TOPICS = ["the sea", "a robot who learns to paint", "winter in the mountains", "bread",
          "the moon landing", "a lost cat", "quantum computers", "a desert city",
          "friendship", "volcanoes", "the history of tea", "a talking tree",
          "chess", "a rainy day in Paris", "honeybees", "the first computer"]


def generate(*args):
    """`xlacel generate ... --output-format json`, greedy, on the same context size."""
    out = subprocess.run([XLACEL, "generate", "--temp", "0", "--context", str(CONTEXT),
                          "--output-format", "json", *args],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def read_sse(response):
    """The data of each server-sent event of a whole (not cut) response, [DONE] included."""
    body = response.read().decode()  # http.client raises IncompleteRead on a cut chunked body
    events = [e for e in body.split("\n\n") if e and not e.startswith(":")]
    assert all(e.startswith("data: ") for e in events), body
    return [e[len("data: "):] for e in events]


class ServerApiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(XLACEL, "--parallel", "16", "--context", str(CONTEXT))
        cls.client = openai.OpenAI(base_url=cls.server.base_url, api_key="unused",
                                   max_retries=0, timeout=600)
        cls.model = cls.client.models.list().data[0].id

    @classmethod
    def tearDownClass(cls):
        status = cls.server.stop()
        assert status == 0, f"exit status {status}\n{cls.server.log()}"

    def chat(self, content, **kwargs):
        kwargs.setdefault("temperature", 0)
        return self.client.chat.completions.create(
            model=self.model, messages=[{"role": "user", "content": content}], **kwargs)

    def streamed_chat(self, content, **kwargs):
        kwargs.setdefault("temperature", 0)
        return list(self.client.chat.completions.create(
            model=self.model, messages=[{"role": "user", "content": content}], stream=True,
            **kwargs))

    # --- the API surface ---------------------------------------------------------------------

    def test_models_lists_the_served_model(self):
        self.assertEqual(self.model, "SmolLM2-135M-Instruct.Q4_1")

    def test_chat_equals_generate(self):
        question = "What is the capital of France?"
        response = self.chat(question, max_tokens=24)
        expected = generate("--chat", question, "-n", "24")
        choice = response.choices[0]
        self.assertEqual(choice.message.role, "assistant")
        self.assertEqual(choice.message.content, expected["text"])
        self.assertEqual(choice.finish_reason, "stop" if expected["stop"] == "eos" else "length")
        self.assertEqual(response.usage.prompt_tokens, len(expected["prompt_ids"]))
        self.assertEqual(response.usage.completion_tokens, len(expected["output_ids"]))
        self.assertEqual(response.usage.total_tokens,
                         response.usage.prompt_tokens + response.usage.completion_tokens)

    def test_chat_stream_equals_whole_response(self):
        question = "Name three colors."
        whole = self.chat(question, max_completion_tokens=20)
        chunks = self.streamed_chat(question, max_completion_tokens=20,
                                    stream_options={"include_usage": True})
        choice_chunks = [c for c in chunks if c.choices]
        self.assertEqual(choice_chunks[0].choices[0].delta.role, "assistant")
        text = "".join(c.choices[0].delta.content or "" for c in choice_chunks)
        self.assertEqual(text, whole.choices[0].message.content)
        self.assertEqual(choice_chunks[-1].choices[0].finish_reason,
                         whole.choices[0].finish_reason)
        self.assertTrue(all(c.choices[0].finish_reason is None for c in choice_chunks[:-1]))
        self.assertIsNone(choice_chunks[-1].usage)
        self.assertEqual(chunks[-1].choices, [])
        self.assertEqual(chunks[-1].usage.completion_tokens, whole.usage.completion_tokens)
        self.assertEqual(chunks[-1].usage.prompt_tokens, whole.usage.prompt_tokens)
        self.assertEqual(len({c.id for c in chunks}), 1)

    def test_completion_equals_generate(self):
        prompt = "The three primary colors are"
        response = self.client.completions.create(model=self.model, prompt=prompt,
                                                  max_tokens=16, temperature=0)
        expected = generate("-p", prompt, "-n", "16")
        self.assertEqual(response.choices[0].text, expected["text"])
        self.assertEqual(response.usage.prompt_tokens, len(expected["prompt_ids"]))
        streamed = list(self.client.completions.create(model=self.model, prompt=prompt,
                                                       max_tokens=16, temperature=0, stream=True))
        self.assertEqual("".join(c.choices[0].text for c in streamed), expected["text"])
        self.assertEqual(streamed[-1].choices[0].finish_reason, response.choices[0].finish_reason)

    def test_completion_takes_token_ids(self):
        ids = generate("-p", "Hello there", "-n", "4")["prompt_ids"]
        by_ids = self.client.completions.create(model=self.model, prompt=ids, max_tokens=8,
                                                temperature=0)
        by_text = self.client.completions.create(model=self.model, prompt="Hello there",
                                                 max_tokens=8, temperature=0)
        self.assertEqual(by_ids.choices[0].text, by_text.choices[0].text)

    def test_max_tokens_ends_with_length(self):
        response = self.chat("Tell me a long story about dragons.", max_tokens=3)
        self.assertEqual(response.choices[0].finish_reason, "length")
        self.assertEqual(response.usage.completion_tokens, 3)

    def test_stop_string_ends_the_text_before_it(self):
        question = "Write one sentence about the ocean."
        full = self.chat(question, max_tokens=32).choices[0].message.content
        words = full.split()
        self.assertGreater(len(words), 4, full)
        stop = " " + words[3]
        response = self.chat(question, max_tokens=32, stop=[stop])
        self.assertEqual(response.choices[0].message.content, full[:full.index(stop)])
        self.assertEqual(response.choices[0].finish_reason, "stop")

    def test_a_conversation_reuses_its_cached_prefix(self):
        first_turn = [{"role": "user", "content": "Name a famous painter."}]
        first = self.client.chat.completions.create(model=self.model, messages=first_turn,
                                                    max_tokens=16, temperature=0)
        second_turn = first_turn + [
            {"role": "assistant", "content": first.choices[0].message.content},
            {"role": "user", "content": "Tell me more about them."}]
        second = self.client.chat.completions.create(model=self.model, messages=second_turn,
                                                     max_tokens=16, temperature=0)
        cached = second.usage.prompt_tokens_details.cached_tokens
        self.assertGreaterEqual(cached, first.usage.prompt_tokens, second.usage)
        self.assertLess(cached, second.usage.prompt_tokens)

    # --- non-ASCII text ----------------------------------------------------------------------

    def raw_stream(self, path, body):
        """A streamed request read with plain HTTP: the text of its chunks, its finish reasons
        and whether it ended with [DONE]."""
        connection = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=600)
        try:
            connection.request("POST", path, json.dumps(dict(body, stream=True)),
                               {"Content-Type": "application/json"})
            response = connection.getresponse()
            self.assertEqual(response.status, 200)
            events = read_sse(response)
        finally:
            connection.close()
        chunks = [json.loads(e) for e in events if e != "[DONE]"]
        chat = path.endswith("chat/completions")
        text = "".join((c["choices"][0]["delta"].get("content") or "") if chat
                       else c["choices"][0]["text"] for c in chunks)
        reasons = [c["choices"][0]["finish_reason"] for c in chunks]
        return text, reasons, events[-1] == "[DONE]"

    def test_multilingual_streams_equal_whole_replies(self):
        """Streamed chat and completions, read both by the official client and as raw SSE,
        reassemble to exactly the whole reply, with a finish_reason and [DONE]."""
        cases = []  # (label, whole text, whole finish_reason, streamed results)
        errors = []

        def run(content):
            try:
                messages = [{"role": "user", "content": content}]
                chat_body = {"model": self.model, "messages": messages, "max_tokens": 48,
                             "temperature": 0}
                whole = self.client.chat.completions.create(**chat_body)
                streamed = list(self.client.chat.completions.create(**chat_body, stream=True))
                client_text = "".join(c.choices[0].delta.content or "" for c in streamed)
                raw = self.raw_stream("/v1/chat/completions", chat_body)
                cases.append((f"chat {content!r}", whole.choices[0].message.content,
                              whole.choices[0].finish_reason,
                              [(client_text, [c.choices[0].finish_reason for c in streamed],
                                True), raw]))
                completion_body = {"model": self.model, "prompt": content, "max_tokens": 48,
                                   "temperature": 0}
                whole = self.client.completions.create(**completion_body)
                raw = self.raw_stream("/v1/completions", completion_body)
                cases.append((f"completion {content!r}", whole.choices[0].text,
                              whole.choices[0].finish_reason, [raw]))
            except Exception as e:  # reported below, with the others
                errors.append(f"{content!r}: {e!r}")

        threads = [threading.Thread(target=run, args=(c,)) for c in MULTILINGUAL]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(len(cases), 2 * len(MULTILINGUAL))
        non_ascii = 0
        for label, text, reason, streams in cases:
            non_ascii += any(ord(ch) > 127 for ch in text)
            for streamed_text, reasons, done in streams:
                with self.subTest(case=label):
                    self.assertEqual(streamed_text, text)
                    self.assertEqual(reasons[-1], reason)
                    self.assertTrue(all(r is None for r in reasons[:-1]), reasons)
                    self.assertTrue(done)
        # The replies must really be non-ASCII for this to test anything.
        self.assertGreaterEqual(non_ascii, len(MULTILINGUAL), cases)

    def test_a_reply_cut_inside_a_character_streams_as_it_ends_whole(self):
        """max_tokens ending between the bytes of one character: the whole and streamed
        replies both end with U+FFFD for the unfinished character, and nothing else differs."""
        prompt = "Emoji: 😀😃😄😁😆😅😂🤣😊😇🙂🙃😉😌😍🥰😘😗😙😚"
        cut_inside = 0
        for max_tokens in range(1, 9):
            body = {"model": self.model, "prompt": prompt, "max_tokens": max_tokens,
                    "temperature": 0}
            with self.subTest(max_tokens=max_tokens):
                whole = self.client.completions.create(**body).choices[0]
                text, reasons, done = self.raw_stream("/v1/completions", body)
                self.assertEqual(text, whole.text)
                self.assertEqual(reasons[-1], "length")
                self.assertTrue(done)
                cut_inside += whole.text.endswith("\ufffd")
        self.assertGreater(cut_inside, 0, "no max_tokens ended inside a character")

    def test_cli_text_output_equals_its_json_text(self):
        """`generate` and `chat` print in text mode exactly the text their JSON reports."""
        for content in (MULTILINGUAL[1], MULTILINGUAL[3]):  # Chinese; emoji
            with self.subTest(content=content):
                expected = generate("--chat", content, "-n", "32")["text"]
                printed = subprocess.run(
                    [XLACEL, "generate", "--temp", "0", "--context", str(CONTEXT),
                     "--chat", content, "-n", "32"],
                    check=True, capture_output=True).stdout.decode()
                self.assertEqual(printed, expected + "\n")
                chat = subprocess.run(
                    [XLACEL, "chat", "--temp", "0", "--context", str(CONTEXT), "-n", "32"],
                    input=(content + "\n").encode(), check=True,
                    capture_output=True).stdout.decode()
                self.assertEqual(chat, expected + "\n")

    # --- batching ----------------------------------------------------------------------------

    def test_sixteen_concurrent_streams_equal_their_single_runs(self):
        prompts = [f"Write a short poem about {topic}." if i % 2 else f"Describe {topic}."
                   for i, topic in enumerate(TOPICS)]
        alone = [self.chat(p, max_tokens=24).choices[0].message.content for p in prompts]
        together = [None] * len(prompts)
        errors = []

        def stream(i):
            try:
                chunks = self.streamed_chat(prompts[i], max_tokens=24)
                together[i] = "".join(c.choices[0].delta.content or "" for c in chunks)
            except Exception as e:  # reported below, with the others
                errors.append(repr(e))

        threads = [threading.Thread(target=stream, args=(i,)) for i in range(len(prompts))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        for i, prompt in enumerate(prompts):
            self.assertEqual(together[i], alone[i], prompt)

    def test_seeded_sampling_does_not_depend_on_the_batch(self):
        kwargs = dict(temperature=0.9, top_p=0.95, seed=1234, max_tokens=20)
        first = self.chat("Invent a name for a spaceship.", **kwargs).choices[0].message.content
        second = self.chat("Invent a name for a spaceship.", **kwargs).choices[0].message.content
        self.assertEqual(first, second)
        results = {}

        def run(key, content, **extra):
            results[key] = self.chat(content, **extra).choices[0].message.content

        threads = [threading.Thread(target=run, args=("seeded", "Invent a name for a spaceship."),
                                    kwargs=kwargs)]
        threads += [threading.Thread(target=run, args=(i, f"Describe {TOPICS[i]}."),
                                     kwargs=dict(max_tokens=20)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(results["seeded"], first)

    # --- errors ------------------------------------------------------------------------------

    def assert_error(self, path, body, status, param=None, code=None):
        got_status, got = self.server.request("POST", path, body,
                                              headers={"Content-Type": "application/json"})
        self.assertEqual(got_status, status, got)
        self.assertIsInstance(got, dict, got)
        error = got["error"]
        self.assertTrue(error["message"])
        self.assertTrue(error["type"])
        if param is not None:
            self.assertEqual(error["param"], param, error)
        if code is not None:
            self.assertEqual(error["code"], code, error)

    def test_malformed_requests_get_openai_errors(self):
        chat = "/v1/chat/completions"
        user = [{"role": "user", "content": "hi"}]
        m = self.model
        self.assert_error(chat, "{not json", 400, code="invalid_json")
        self.assert_error(chat, [1, 2], 400)
        self.assert_error(chat, {"model": m}, 400, param="messages")
        self.assert_error(chat, {"model": m, "messages": "hi"}, 400, param="messages")
        self.assert_error(chat, {"model": m, "messages": []}, 400, param="messages")
        self.assert_error(chat, {"model": m, "messages": [{"role": "robot", "content": "x"}]},
                          400, param="messages[0].role")
        self.assert_error(chat, {"model": m, "messages": [{"role": "user", "content": 5}]},
                          400, param="messages[0].content")
        self.assert_error(chat, {"messages": user}, 400, param="model")
        for field, value in [("temperature", "hot"), ("temperature", 5), ("top_p", 0),
                             ("top_p", 1.5), ("top_k", -1), ("top_k", 1.5), ("min_p", 2),
                             ("max_tokens", 0), ("max_tokens", "5"),
                             ("max_completion_tokens", -3), ("seed", "x"), ("n", 2),
                             ("frequency_penalty", 0.5), ("presence_penalty", 1),
                             ("stream", "yes"), ("stop", 5), ("stop", ["a"] * 5),
                             ("logprobs", True), ("tools", [{"type": "function"}])]:
            with self.subTest(field=field, value=value):
                self.assert_error(chat, {"model": m, "messages": user, field: value}, 400,
                                  param=field)
        self.assert_error(chat, {"model": "gpt-4", "messages": user}, 404, param="model",
                          code="model_not_found")
        long_text = "word " * (CONTEXT * 2)
        self.assert_error(chat, {"model": m, "messages": [{"role": "user", "content": long_text}]},
                          400, param="messages", code="context_length_exceeded")
        self.assert_error(chat, {"model": m, "messages": user, "max_tokens": CONTEXT}, 400,
                          code="context_length_exceeded")
        completions = "/v1/completions"
        self.assert_error(completions, {"model": m}, 400, param="prompt")
        self.assert_error(completions, {"model": m, "prompt": [999999999]}, 400, param="prompt")
        self.assert_error(completions, {"model": m, "prompt": {"a": 1}}, 400, param="prompt")
        self.assert_error(completions, "x" * (9 << 20), 413, code="request_too_large")
        status, body = self.server.request("GET", "/v1/nothing-here")
        self.assertEqual(status, 404)
        self.assertIn("error", body)
        # The official client raises its typed errors from these bodies.
        with self.assertRaises(openai.BadRequestError) as raised:
            self.chat("hi", temperature=5)
        self.assertEqual(raised.exception.body["param"], "temperature")
        with self.assertRaises(openai.NotFoundError):
            self.client.chat.completions.create(model="no-such-model", messages=user)
        # None of that disturbed the server.
        self.assertTrue(self.chat("Say hi.", max_tokens=4).choices[0].message.content)

    # --- connection handling and metrics -----------------------------------------------------

    def test_client_disconnect_mid_stream_frees_its_slot(self):
        before = self.server.metrics()['xlacel_requests_total{outcome="cancelled"}']
        body = json.dumps({"model": self.model, "stream": True, "max_tokens": 400,
                           "temperature": 0, "messages": [{"role": "user", "content":
                                                           "Tell me a very long story."}]})
        sock = socket.create_connection(("127.0.0.1", self.server.port))
        sock.sendall((f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                      f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                      + body).encode())
        received = b""
        while received.count(b"data: ") < 3:
            received += sock.recv(4096)
        sock.close()
        deadline = time.time() + 30
        while time.time() < deadline:
            metrics = self.server.metrics()
            if (metrics["xlacel_running_requests"] == 0 and
                    metrics['xlacel_requests_total{outcome="cancelled"}'] > before):
                break
            time.sleep(0.2)
        else:
            self.fail(f"the slot was not freed: {metrics}")

    def test_health_and_metrics(self):
        self.assertEqual(self.server.request("GET", "/health"), (200, {"status": "ok"}))
        self.chat("Hello!", max_tokens=2)
        metrics = self.server.metrics()
        for name in ["xlacel_generated_tokens_total", "xlacel_queue_depth",
                     "xlacel_decode_batch_size", "xlacel_decode_step_seconds",
                     "xlacel_running_requests", "process_resident_memory_bytes"]:
            self.assertIn(name, metrics)
        self.assertEqual(metrics["xlacel_slots"], 16)
        self.assertGreater(metrics['xlacel_requests_total{outcome="ok"}'], 0)
        self.assertGreater(metrics["xlacel_decode_steps_total"], 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
