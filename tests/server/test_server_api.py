"""`xlacel serve` spoken to with OpenAI's official client (and raw HTTP for malformed input), on
the default model, loopback only. Greedy outputs are checked against `xlacel generate` (itself
token-exact with transformers) and against each other when batched; logprobs and OpenAI's
penalties and logit_bias against HF transformers' logits with OpenAI's formula applied
(tests/data/session/logprobs_reference.json, from tools/reference/logprobs.py)."""
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
from server_process import ServedModelTest, xlacel_path  # noqa: E402

XLACEL = xlacel_path()
CONTEXT = 512
LOGPROBS_REFERENCE = os.path.join(os.path.dirname(__file__), "../data/session/logprobs_reference.json")
LOGPROB_TOLERANCE = 1e-4

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


def logprobs_text(content, finish_reason):
    """The text chat logprobs entries spell: their bytes joined, without the end-of-sequence
    token that ended a reply (the reply's text leaves special tokens out; logprobs report it)."""
    if finish_reason == "stop" and content and content[-1].token == "<|im_end|>":
        content = content[:-1]
    return b"".join(bytes(e.bytes) for e in content).decode("utf-8", "replace")


class ServerApiTest(ServedModelTest):
    server_args = ("--parallel", "16", "--context", str(CONTEXT))

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
                             ("max_completion_tokens", -3), ("seed", "x"), ("n", 0),
                             ("n", 129), ("n", 1.5), ("n", "2"), ("frequency_penalty", 2.5),
                             ("frequency_penalty", "x"), ("presence_penalty", -2.01),
                             ("presence_penalty", [1]), ("logprobs", 3), ("logprobs", "yes"),
                             ("top_logprobs", 21), ("top_logprobs", -1), ("top_logprobs", 0.5),
                             ("top_logprobs", 3),  # without "logprobs": true
                             ("logit_bias", [1, 2]), ("logit_bias", "x"),
                             ("logit_bias", {"abc": 1}), ("logit_bias", {"-1": 1}),
                             ("logit_bias", {"1.5": 1}), ("logit_bias", {"": 1}),
                             ("logit_bias", {"99999999999": 1}), ("logit_bias", {"49152": 1}),
                             ("logit_bias", {"5": 100.5}), ("logit_bias", {"5": "x"}),
                             ("logit_bias", {"5": None}), ("best_of", 2), ("echo", True),
                             ("stream", "yes"), ("stop", 5), ("stop", ["a"] * 5),
                             ("tools", {"type": "function"}), ("tool_choice", "any")]:
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
        for value in (21, -1, True, "5", 1.5):
            with self.subTest(field="logprobs", value=value):
                self.assert_error(completions, {"model": m, "prompt": "hi", "logprobs": value}, 400,
                                  param="logprobs")
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

    # --- logprobs, penalties, logit_bias (against HF transformers' logits) -------------------

    @staticmethod
    def reference_cases():
        with open(LOGPROBS_REFERENCE, encoding="utf-8") as f:
            return json.load(f)["cases"]

    def reference_options(self, case):
        options = {"temperature": 0, "max_tokens": len(case["steps"])}
        for name in ("frequency_penalty", "presence_penalty", "logit_bias"):
            if case[name]:
                options[name] = case[name]
        return options

    def assert_top_matches(self, got, expected, label):
        """`got`: [(bytes, logprob)] best first; `expected`: the reference's [id, bytes, logprob].
        The values must agree in order; the tokens wherever the reference's order is clear (no
        other value within a few times the tolerance, where HF and xlacel may rank differently)."""
        self.assertEqual(len(got), len(expected), label)
        values = [e[2] for e in expected]
        for i, ((got_bytes, got_logprob), (_, want_bytes, want_logprob)) in enumerate(
                zip(got, expected)):
            self.assertAlmostEqual(got_logprob, want_logprob, delta=LOGPROB_TOLERANCE,
                                   msg=f"{label}: top {i}")
            near = [v for j, v in enumerate(values) if j != i and abs(v - want_logprob) < 4e-4]
            if not near:
                self.assertEqual(got_bytes, want_bytes, f"{label}: top {i}")

    def test_chat_logprobs_equal_hf_log_softmax(self):
        """Chat `logprobs` + `top_logprobs` (20) on every reference case with messages, plain and
        penalized: each token, its bytes and log-probability and its top 20 equal the reference;
        the greedy token is the top entry; the bytes join to the reply's text."""
        cases = [c for c in self.reference_cases() if c["kind"] == "chat"]
        self.assertGreaterEqual(len(cases), 3)
        for case in cases:
            with self.subTest(case=case["name"]):
                response = self.client.chat.completions.create(
                    model=self.model, messages=case["messages"], logprobs=True, top_logprobs=20,
                    **self.reference_options(case))
                self.assertEqual(response.usage.prompt_tokens, len(case["prompt_ids"]))
                content = response.choices[0].logprobs.content
                self.assertEqual(len(content), len(case["steps"]))
                for i, (entry, step) in enumerate(zip(content, case["steps"])):
                    label = f"{case['name']} step {i}"
                    self.assertEqual(entry.bytes, step["bytes"], label)
                    self.assertEqual(entry.token, bytes(step["bytes"]).decode("utf-8", "replace"))
                    self.assertAlmostEqual(entry.logprob, step["logprob"],
                                           delta=LOGPROB_TOLERANCE, msg=label)
                    self.assertEqual(entry.top_logprobs[0].bytes, entry.bytes, label)
                    self.assertEqual(entry.top_logprobs[0].logprob, entry.logprob, label)
                    self.assert_top_matches([(t.bytes, t.logprob) for t in entry.top_logprobs],
                                            step["top"], label)
                self.assertEqual(logprobs_text(content, response.choices[0].finish_reason),
                                 response.choices[0].message.content)

    def test_completion_logprobs_equal_hf_log_softmax(self):
        """Completions' legacy `logprobs` on the raw reference cases (prompts as token ids, the
        penalized ones included): tokens, token_logprobs, top_logprobs and text_offset."""
        cases = [c for c in self.reference_cases() if c["kind"] == "raw"]
        self.assertGreaterEqual(len(cases), 2)
        for case in cases:
            with self.subTest(case=case["name"]):
                response = self.client.completions.create(
                    model=self.model, prompt=case["prompt_ids"], logprobs=5,
                    **self.reference_options(case))
                choice = response.choices[0]
                logprobs = choice.logprobs
                texts = [bytes(s["bytes"]).decode("utf-8", "replace") for s in case["steps"]]
                self.assertEqual(logprobs.tokens, texts)
                self.assertEqual(choice.text, "".join(texts))
                offset = 0
                for i, step in enumerate(case["steps"]):
                    label = f"{case['name']} step {i}"
                    self.assertAlmostEqual(logprobs.token_logprobs[i], step["logprob"],
                                           delta=LOGPROB_TOLERANCE, msg=label)
                    top = logprobs.top_logprobs[i]
                    self.assertEqual(len(top), len({bytes(t[1]) for t in step["top"][:5]}), label)
                    self.assertIn(texts[i], top, label)  # the greedy token is among the top
                    self.assertEqual(max(top.values()), logprobs.token_logprobs[i], label)
                    for token, value in top.items():
                        candidates = [t[2] for t in step["top"]
                                      if bytes(t[1]).decode("utf-8", "replace") == token]
                        self.assertTrue(any(abs(value - c) <= LOGPROB_TOLERANCE
                                            for c in candidates), (label, token, value))
                    self.assertEqual(logprobs.text_offset[i], offset, label)
                    offset += len(texts[i])

    def test_streamed_logprobs_equal_whole_ones(self):
        """Streamed chunks carry the logprobs of their tokens: joined they equal the whole
        response's, also where tokens end inside a character (emoji, Chinese)."""
        for content in (MULTILINGUAL[1], MULTILINGUAL[3], "Say hello."):
            with self.subTest(content=content):
                whole = self.chat(content, max_tokens=24, logprobs=True, top_logprobs=2)
                chunks = self.streamed_chat(content, max_tokens=24, logprobs=True, top_logprobs=2)
                streamed = [e for c in chunks if c.choices and c.choices[0].logprobs
                            for e in c.choices[0].logprobs.content]
                expected = whole.choices[0].logprobs.content
                self.assertEqual([(e.token, e.bytes, e.logprob) for e in streamed],
                                 [(e.token, e.bytes, e.logprob) for e in expected])
                self.assertEqual([[t.bytes for t in e.top_logprobs] for e in streamed],
                                 [[t.bytes for t in e.top_logprobs] for e in expected])
                text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
                self.assertEqual(text, whole.choices[0].message.content)
                completion = self.client.completions.create(
                    model=self.model, prompt=content, max_tokens=24, temperature=0, logprobs=3)
                streamed = list(self.client.completions.create(
                    model=self.model, prompt=content, max_tokens=24, temperature=0, logprobs=3,
                    stream=True))
                tokens = [t for c in streamed if c.choices[0].logprobs
                          for t in c.choices[0].logprobs.tokens]
                offsets = [t for c in streamed if c.choices[0].logprobs
                           for t in c.choices[0].logprobs.text_offset]
                self.assertEqual(tokens, completion.choices[0].logprobs.tokens)
                self.assertEqual(offsets, completion.choices[0].logprobs.text_offset)

    def test_sampled_logprobs_are_of_the_drawn_tokens(self):
        """With temperature, each reported token is the one drawn (the bytes join to the text)
        and its logprob is among or below its top entries."""
        response = self.chat("Invent a name for a spaceship.", temperature=1.2, seed=5,
                             max_tokens=24, logprobs=True, top_logprobs=3)
        content = response.choices[0].logprobs.content
        self.assertEqual(len(content), response.usage.completion_tokens)
        self.assertEqual(logprobs_text(content, response.choices[0].finish_reason),
                         response.choices[0].message.content)
        for entry in content:
            self.assertLessEqual(entry.logprob, entry.top_logprobs[0].logprob)
            if entry.logprob > entry.top_logprobs[-1].logprob:
                self.assertIn(entry.bytes, [t.bytes for t in entry.top_logprobs])

    def test_logit_bias_forces_and_forbids_tokens(self):
        ids = self.server.request("POST", "/tokenize", {"content": " banana"})[1]["tokens"]
        self.assertEqual(len(ids), 1, ids)
        forced = self.chat("Say hi.", max_tokens=3, logit_bias={str(ids[0]): 100})
        self.assertEqual(forced.choices[0].message.content, " banana" * 3)
        plain = self.chat("Say hi.", max_tokens=4, logprobs=True)
        first = plain.choices[0].logprobs.content[0]
        first_id = self.server.request("POST", "/tokenize",
                                       {"content": first.token})[1]["tokens"][0]
        banned = self.chat("Say hi.", max_tokens=4, logprobs=True,
                           logit_bias={str(first_id): -100})
        self.assertNotEqual(banned.choices[0].logprobs.content[0].bytes, first.bytes)

    # --- n choices ---------------------------------------------------------------------------

    def test_n_choices_with_a_seed_equal_separate_requests_with_seed_plus_index(self):
        kwargs = dict(temperature=0.9, top_p=0.95, max_tokens=20)
        question = "Invent a name for a spaceship."
        together = self.chat(question, n=3, seed=1234, **kwargs)
        self.assertEqual([c.index for c in together.choices], [0, 1, 2])
        separate = [self.chat(question, seed=1234 + i, **kwargs) for i in range(3)]
        for i in range(3):
            self.assertEqual(together.choices[i].message.content,
                             separate[i].choices[0].message.content, f"choice {i}")
            self.assertEqual(together.choices[i].finish_reason,
                             separate[i].choices[0].finish_reason)
        self.assertEqual(together.usage.completion_tokens,
                         sum(r.usage.completion_tokens for r in separate))
        self.assertEqual(together.usage.prompt_tokens, separate[0].usage.prompt_tokens)
        self.assertGreater(len({c.message.content for c in together.choices}), 1)

        prompt = "Once upon a time"
        whole = self.client.completions.create(model=self.model, prompt=prompt, n=2, seed=99,
                                               **kwargs)
        alone = self.client.completions.create(model=self.model, prompt=prompt, seed=100,
                                               **kwargs)
        self.assertEqual(whole.choices[1].text, alone.choices[0].text)
        chunks = list(self.client.completions.create(model=self.model, prompt=prompt, n=2,
                                                     seed=99, stream=True,
                                                     stream_options={"include_usage": True},
                                                     **kwargs))
        for i in range(2):
            mine = [c.choices[0] for c in chunks if c.choices and c.choices[0].index == i]
            self.assertEqual("".join(c.text for c in mine), whole.choices[i].text)
            self.assertEqual(mine[-1].finish_reason, whole.choices[i].finish_reason)
            self.assertTrue(all(c.finish_reason is None for c in mine[:-1]))
        self.assertEqual(chunks[-1].usage.completion_tokens, whole.usage.completion_tokens)

    def test_n_choices_prefill_their_prompt_once(self):
        # A prompt no other test sends, so no slot holds a prefix of it.
        question = "Spell the word 'ébullition' backwards, then count its vowels."
        before = self.server.metrics()["xlacel_prefill_tokens_total"]
        together = self.chat(question, n=3, seed=5, temperature=0.8, max_tokens=8)
        prefilled = self.server.metrics()["xlacel_prefill_tokens_total"] - before
        prompt_tokens = together.usage.prompt_tokens
        self.assertLessEqual(prefilled, prompt_tokens)
        self.assertGreater(prefilled, 0)
        separate = [self.chat(question, seed=5 + i, temperature=0.8, max_tokens=8)
                    for i in range(3)]
        for i in range(3):
            self.assertEqual(together.choices[i].message.content,
                             separate[i].choices[0].message.content, f"choice {i}")

    def test_n_greedy_choices_are_equal_and_stream_with_logprobs(self):
        chunks = self.streamed_chat("Name three colors.", n=2, max_tokens=12, logprobs=True)
        texts, logprobs = ["", ""], [[], []]
        for chunk in chunks:
            for choice in chunk.choices:
                texts[choice.index] += choice.delta.content or ""
                if choice.logprobs:
                    logprobs[choice.index] += [e.logprob for e in choice.logprobs.content]
        self.assertEqual(texts[0], texts[1])
        self.assertEqual(len(logprobs[0]), 12)
        self.assertEqual(len(logprobs[1]), 12)
        # Equal up to the noise between a prompt prefilled and one partly reused from a slot.
        for first, second in zip(*logprobs):
            self.assertAlmostEqual(first, second, delta=LOGPROB_TOLERANCE)
        whole = self.chat("Name three colors.", max_tokens=12)
        self.assertEqual(texts[0], whole.choices[0].message.content)

    # --- /tokenize and /detokenize -----------------------------------------------------------

    def test_tokenize_and_detokenize_round_trip(self):
        for text in ["Hello world", *MULTILINGUAL]:
            with self.subTest(text=text):
                for add_special, flag in ((False, ["--no-special"]), (True, [])):
                    status, body = self.server.request(
                        "POST", "/tokenize", {"content": text, "add_special": add_special})
                    self.assertEqual(status, 200, body)
                    expected = subprocess.run([XLACEL, "tokenize", "--ids", *flag, text],
                                              check=True, capture_output=True, text=True)
                    self.assertEqual(body["tokens"], [int(t) for t in expected.stdout.split()])
                status, body = self.server.request("POST", "/detokenize",
                                                   {"tokens": body["tokens"]})
                self.assertEqual((status, body), (200, {"content": text}))
                status, pieces = self.server.request(
                    "POST", "/tokenize", {"content": text, "with_pieces": True})
                joined = b"".join(p["piece"].encode() if isinstance(p["piece"], str)
                                  else bytes(p["piece"]) for p in pieces["tokens"])
                self.assertEqual(joined.decode(), text)
        self.assertEqual(self.server.request("POST", "/detokenize", {"tokens": []}),
                         (200, {"content": ""}))

    def test_malformed_tokenize_requests_get_openai_errors(self):
        for path, body, param in [
                ("/tokenize", "{nope", None), ("/tokenize", [1], None), ("/tokenize", {}, "content"),
                ("/tokenize", {"content": 5}, "content"),
                ("/tokenize", {"content": "x", "add_special": "yes"}, "add_special"),
                ("/tokenize", {"content": "x", "with_pieces": 1}, "with_pieces"),
                ("/detokenize", {}, "tokens"), ("/detokenize", {"tokens": "1 2"}, "tokens"),
                ("/detokenize", {"tokens": [1, -1]}, "tokens"),
                ("/detokenize", {"tokens": [49152]}, "tokens"),
                ("/detokenize", {"tokens": [1.5]}, "tokens"),
                ("/detokenize", {"tokens": ["a"]}, "tokens")]:
            with self.subTest(path=path, body=body):
                self.assert_error(path, body, 400, param=param)

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
