"""Images over HTTP: `xlacel serve` on the tiny SmolVLM (tests/data/models/smolvlm_tiny), spoken
to with OpenAI's and Anthropic's official clients. Each case of the model's reference.json
(transformers' prompt ids and greedy tokens for images from tests/data/images) sent as
Chat Completions image_url parts with data: URLs gives HF's tokens (compared through the bytes of
each token's logprobs entry) and counts the image tokens as prompt tokens; streamed the same;
two requests at once the same; a text-only request still works; the Responses API's input_image
parts and Anthropic's base64 image blocks give the same replies. Bad images (not an image,
truncated, 0x0, 50000x50000, malformed base64, too many, remote URLs) are 400s in each API's
error shape naming the part, and a text-only model refuses images with a 400."""
import base64
import concurrent.futures
import json
import os
import sys
import unittest

import anthropic
import openai
from tokenizers import Tokenizer

sys.path.insert(0, os.path.dirname(__file__))
from server_process import ServerProcess, xlacel_path  # noqa: E402

XLACEL = xlacel_path()
DATA = os.path.join(os.path.dirname(__file__), "..", "data")
SMOLVLM = os.path.join(DATA, "models", "smolvlm_tiny")
TEXT_ONLY = os.path.join(DATA, "models", "qwen3")
IMAGES = os.path.join(DATA, "images")
CONTEXT = 512
REFERENCE = json.load(open(os.path.join(SMOLVLM, "reference.json")))
CASES = {case["name"]: case for case in REFERENCE["cases"]}
CHAT = "/v1/chat/completions"
JSON_HEADERS = {"Content-Type": "application/json"}


def image_bytes(name):
    with open(os.path.join(IMAGES, name), "rb") as f:
        return f.read()


def data_url(name, media_type="image/png"):
    return f"data:{media_type};base64," + base64.b64encode(image_bytes(name)).decode()


def byte_decoder():
    """GPT-2's byte-level alphabet back to bytes (what ByteLevel BPE vocabularies spell)."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) +
          list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


TOKENIZER = Tokenizer.from_file(os.path.join(SMOLVLM, "tokenizer.json"))
SPECIAL = {token.content for token in TOKENIZER.get_added_tokens_decoder().values()}
BYTES = byte_decoder()


def token_bytes(token_id):
    """A token's bytes as a logprobs entry gives them: a special token's text, else its bytes."""
    piece = TOKENIZER.id_to_token(token_id)
    if piece in SPECIAL:
        return list(piece.encode())
    return [BYTES[c] for c in piece]


def openai_messages(case):
    """The case's messages with each {"type": "image"} as an image_url part of its file."""
    files = iter(case["images"])
    messages = []
    for message in case["messages"]:
        content = []
        for part in message["content"]:
            if part["type"] == "image":
                content.append({"type": "image_url",
                                "image_url": {"url": data_url(next(files)), "detail": "auto"}})
            else:
                content.append(part)
        messages.append({"role": message["role"], "content": content})
    return messages


def one_image_request(url, model, **extra):
    return {"model": model, "max_tokens": 4,
            "messages": [{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": url}},
                {"type": "text", "text": "What is this?"}]}], **extra}


class ServerImagesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(XLACEL, "-m", SMOLVLM, "--parallel", "4", "--context",
                                   str(CONTEXT))
        cls.client = openai.OpenAI(base_url=cls.server.base_url, api_key="unused",
                                   max_retries=0, timeout=600)
        cls.anthropic = anthropic.Anthropic(base_url=f"http://127.0.0.1:{cls.server.port}",
                                            api_key="unused", max_retries=0, timeout=600)
        cls.model = cls.client.models.list().data[0].id

    @classmethod
    def tearDownClass(cls):
        status = cls.server.stop()
        assert status == 0, f"exit status {status}\n{cls.server.log()}"

    def chat(self, case, **kwargs):
        return self.client.chat.completions.create(
            model=self.model, messages=openai_messages(case), max_tokens=12, temperature=0,
            logprobs=True, **kwargs)

    def assert_hf_tokens(self, case, entries, usage, choices=1):
        self.assertEqual([entry.bytes for entry in entries],
                         [token_bytes(i) for i in case["output_ids"]], case["name"])
        self.assertEqual(usage.prompt_tokens, len(case["prompt_ids"]), case["name"])
        self.assertEqual(usage.completion_tokens, choices * len(case["output_ids"]), case["name"])

    def test_chat_gives_hf_tokens(self):
        for name, case in CASES.items():
            with self.subTest(case=name):
                reply = self.chat(case)
                self.assert_hf_tokens(case, reply.choices[0].logprobs.content, reply.usage)
                self.assertEqual(reply.choices[0].finish_reason, "length")

    def test_streamed_chat_gives_hf_tokens(self):
        for name, case in CASES.items():
            with self.subTest(case=name):
                chunks = list(self.chat(case, stream=True,
                                        stream_options={"include_usage": True}))
                entries = [entry for chunk in chunks for choice in chunk.choices
                           if choice.logprobs for entry in choice.logprobs.content]
                self.assert_hf_tokens(case, entries, chunks[-1].usage)

    def test_requests_at_once_give_their_own_tokens(self):
        cases = [CASES["two_images"], CASES["one_image"], CASES["small_image"],
                 CASES["two_images"]]
        with concurrent.futures.ThreadPoolExecutor(len(cases)) as pool:
            replies = list(pool.map(self.chat, cases))
        for case, reply in zip(cases, replies):
            self.assert_hf_tokens(case, reply.choices[0].logprobs.content, reply.usage)

    def test_n_choices_share_the_images(self):
        case = CASES["one_image"]
        reply = self.chat(case, n=2)
        for choice in reply.choices:
            self.assert_hf_tokens(case, choice.logprobs.content, reply.usage, choices=2)

    def test_text_only_request_still_works(self):
        reply = self.client.chat.completions.create(
            model=self.model, messages=[{"role": "user", "content": "Hello there"}], max_tokens=5,
            temperature=0)
        self.assertEqual(reply.usage.completion_tokens, 5)
        # The template reads only parts: a string is given as one text part, so it is rendered.
        parts = self.client.chat.completions.create(
            model=self.model, max_tokens=5, temperature=0,
            messages=[{"role": "user", "content": [{"type": "text", "text": "Hello there"}]}])
        self.assertEqual(reply.usage.prompt_tokens, parts.usage.prompt_tokens)
        self.assertEqual(reply.choices[0].message.content, parts.choices[0].message.content)

    def test_responses_input_image(self):
        case = CASES["one_image"]
        chat = self.chat(case)
        response = self.client.responses.create(
            model=self.model, max_output_tokens=12, temperature=0, store=False,
            input=[{"role": "user", "content": [
                {"type": "input_image", "image_url": data_url(case["images"][0]),
                 "detail": "auto"},
                {"type": "input_text", "text": case["messages"][0]["content"][1]["text"]}]}])
        self.assertEqual(response.output_text, chat.choices[0].message.content)
        self.assertEqual(response.usage.input_tokens, len(case["prompt_ids"]))
        self.assertEqual(response.usage.output_tokens, len(case["output_ids"]))

    def test_responses_continue_a_conversation_with_its_images(self):
        case = CASES["small_image"]
        first = self.client.responses.create(
            model=self.model, max_output_tokens=3, temperature=0,
            input=[{"role": "user", "content": [
                {"type": "input_image", "image_url": data_url(case["images"][0])},
                {"type": "input_text", "text": "Describe it."}]}])
        second = self.client.responses.create(
            model=self.model, max_output_tokens=3, temperature=0, previous_response_id=first.id,
            input="And now?")
        self.assertGreater(second.usage.input_tokens, first.usage.input_tokens)

    def test_anthropic_base64_image(self):
        case = CASES["two_images"]
        chat = self.chat(case)
        blocks = [{"type": "image", "source": {
            "type": "base64", "media_type": "image/jpeg" if name.endswith(".jpg") else "image/png",
            "data": base64.b64encode(image_bytes(name)).decode()}} for name in case["images"]]
        messages = [{"role": "user", "content": [
            *blocks, {"type": "text", "text": case["messages"][0]["content"][2]["text"]}]}]
        message = self.anthropic.messages.create(model=self.model, max_tokens=12,
                                                 messages=messages, extra_body={"temperature": 0})
        self.assertEqual("".join(block.text for block in message.content),
                         chat.choices[0].message.content)
        # input_tokens leave out what the slot's cache gave (up to the first image token).
        self.assertEqual(message.usage.input_tokens + (message.usage.cache_read_input_tokens or 0),
                         len(case["prompt_ids"]))
        self.assertEqual(message.usage.output_tokens, len(case["output_ids"]))
        counted = self.anthropic.messages.count_tokens(model=self.model, messages=messages)
        self.assertEqual(counted.input_tokens, len(case["prompt_ids"]))

    # --- refusals -------------------------------------------------------------------------

    def assert_openai_error(self, path, body, param, words, code=None):
        status, got = self.server.request("POST", path, body, headers=JSON_HEADERS)
        self.assertEqual(status, 400, got)
        error = got["error"]
        self.assertEqual(error["type"], "invalid_request_error", error)
        self.assertEqual(error["param"], param, error)
        if param != "messages":
            self.assertIn(param, error["message"])
        self.assertIn(words, error["message"])
        if code is not None:
            self.assertEqual(error["code"], code, error)
        return error["message"]

    def assert_anthropic_error(self, body, where, words):
        status, got = self.server.request("POST", "/v1/messages", body, headers=JSON_HEADERS)
        self.assertEqual(status, 400, got)
        self.assertEqual(got["type"], "error", got)
        self.assertEqual(got["error"]["type"], "invalid_request_error", got)
        self.assertIn(where, got["error"]["message"])
        self.assertIn(words, got["error"]["message"])

    def test_bad_images_are_400s_naming_the_part(self):
        part = "messages[0].content[0]"
        bad = {
            "not an image": data_url("random.bin"),
            "truncated": data_url("truncated.png"),
            "zero by zero": data_url("zero_0x0.png"),
            "huge header": data_url("huge_50000x50000.png"),
            "empty file": data_url("empty.png"),
        }
        for label, url in bad.items():
            with self.subTest(label):
                message = self.assert_openai_error(CHAT, one_image_request(url, self.model), part,
                                                   "")
                print(f"{label}: {message}", file=sys.stderr)
        for url, words in [("data:image/png;base64,iVBOR#w0KGgo=", "base64"),
                           ("data:image/png,rawbytes", "base64"),
                           ("https://example.com/cat.png", "remote images are not fetched"),
                           ("/etc/passwd", "data: URL")]:
            with self.subTest(url):
                self.assert_openai_error(CHAT, one_image_request(url, self.model), part, words)
        too_many = one_image_request(data_url("rgb_1x1.png"), self.model)
        too_many["messages"][0]["content"] = [
            {"type": "image_url", "image_url": {"url": data_url("rgb_1x1.png")}}] * 9
        self.assert_openai_error(CHAT, too_many, "messages[0].content[8]", "too many images")
        system = one_image_request(data_url("rgb_1x1.png"), self.model)
        system["messages"][0]["role"] = "system"
        self.assert_openai_error(CHAT, system, part, "user messages")
        # The prompt with its image tokens and max_tokens past the context: the usual error.
        case = CASES["two_images"]
        long = {"model": self.model, "messages": openai_messages(case),
                "max_tokens": CONTEXT - len(case["prompt_ids"]) + 1}
        message = self.assert_openai_error(CHAT, long, "messages", "does not fit the context",
                                           code="context_length_exceeded")
        self.assertIn(f"({len(case['prompt_ids'])} tokens)", message)
        self.assertEqual(self.server.request("GET", "/health")[0], 200)

    def test_responses_and_anthropic_refusals_in_their_shapes(self):
        def responses(url):
            return {"model": self.model, "input": [{"role": "user", "content": [
                {"type": "input_text", "text": "hi"}, {"type": "input_image", "image_url": url}]}]}

        self.assert_openai_error("/v1/responses", responses("http://example.com/a.png"),
                                 "input[0].content[1]", "remote images are not fetched")
        self.assert_openai_error("/v1/responses", responses(data_url("truncated.jpg")),
                                 "input[0].content[1]", "input[0].content[1]")

        def anthropic_body(source):
            return {"model": self.model, "max_tokens": 4, "messages": [{"role": "user", "content": [
                {"type": "text", "text": "hi"}, {"type": "image", "source": source}]}]}

        self.assert_anthropic_error(
            anthropic_body({"type": "url", "url": "https://example.com/a.png"}),
            "messages.0.content.1", "remote images are not fetched")
        self.assert_anthropic_error(
            anthropic_body({"type": "base64", "media_type": "image/png", "data": "!!!"}),
            "messages.0.content.1", "base64")
        self.assert_anthropic_error(
            anthropic_body({"type": "base64", "media_type": "image/png",
                            "data": base64.b64encode(image_bytes("random.bin")).decode()}),
            "messages.0.content.1", "messages.0.content.1")
        with self.assertRaises(anthropic.BadRequestError) as raised:
            self.anthropic.messages.create(model=self.model, max_tokens=4, messages=[
                {"role": "user", "content": [{"type": "image", "source": {
                    "type": "url", "url": "https://example.com/a.png"}}]}])
        self.assertIn("messages.0.content.0", str(raised.exception))


class TextOnlyModelImagesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(XLACEL, "-m", TEXT_ONLY, "--parallel", "1", "--context", "256")

    @classmethod
    def tearDownClass(cls):
        status = cls.server.stop()
        assert status == 0, f"exit status {status}\n{cls.server.log()}"

    def test_images_are_refused(self):
        model = self.server.request("GET", "/v1/models")[1]["data"][0]["id"]
        status, got = self.server.request("POST", CHAT,
                                          one_image_request(data_url("rgb_1x1.png"), model),
                                          headers=JSON_HEADERS)
        self.assertEqual(status, 400, got)
        self.assertEqual(got["error"]["param"], "messages[0].content[0]")
        self.assertIn("takes no images", got["error"]["message"])
        body = {"model": model, "max_tokens": 4, "messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": base64.b64encode(image_bytes("rgb_1x1.png"))
                                         .decode()}}]}]}
        status, got = self.server.request("POST", "/v1/messages", body, headers=JSON_HEADERS)
        self.assertEqual(status, 400, got)
        self.assertEqual(got["type"], "error")
        self.assertIn("messages.0.content.0", got["error"]["message"])
        self.assertIn("takes no images", got["error"]["message"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
