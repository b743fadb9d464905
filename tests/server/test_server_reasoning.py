"""Reasoning models' thinking returned apart through `xlacel serve`: on the tiny random-weight
Qwen 3 model with a template that opens the `<think>` block in the prompt (as DeepSeek-R1
distills' templates do), so that the reply starts as thinking whatever the weights. Checked with
OpenAI's and Anthropic's official clients: Chat Completions gives `message.reasoning_content`
apart from `content`, streamed as `delta.reasoning_content` chunks that join to it; the Messages
API gives the same text as a `thinking` block, streamed as thinking_delta events that the client
accumulates to the whole reply; the Responses API gives it as a reasoning item; a past reply's reasoning_content reaches the template; and
`--reasoning-format none` leaves the same tokens' text inline in `content`. The split itself, in
every cut of the text, is checked in tests/tool_call_test.cpp (ReasoningParser)."""
import json
import os
import shutil
import sys
import tempfile
import unittest

import anthropic
import openai

sys.path.insert(0, os.path.dirname(__file__))
from server_process import ServedModelTest, ServerProcess, xlacel_path  # noqa: E402

XLACEL = xlacel_path()
TINY_QWEN3 = os.path.join(os.path.dirname(__file__), "..", "data", "models", "qwen3")
QUESTION = "Warum ist der Himmel blau? ☁️"
GENERATION_PROMPT = "{{- '<|im_start|>assistant\\n' }}"


def thinking_model(directory):
    """The tiny Qwen 3 whose template opens a <think> block after the assistant's header."""
    for name in os.listdir(TINY_QWEN3):
        shutil.copy(os.path.join(TINY_QWEN3, name), directory)
    path = os.path.join(directory, "tokenizer_config.json")
    with open(path) as f:
        config = json.load(f)
    template = config["chat_template"]
    assert template.count(GENERATION_PROMPT) == 1
    config["chat_template"] = template.replace(
        GENERATION_PROMPT, "{{- '<|im_start|>assistant\\n<think>\\n' }}")
    with open(path, "w") as f:
        json.dump(config, f)
    return directory


class ReasoningTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.directory = tempfile.mkdtemp()
        thinking_model(cls.directory)
        cls.servers = {}
        for mode in ("auto", "none"):
            cls.servers[mode] = ServerProcess(XLACEL, "-m", cls.directory, "--parallel", "2",
                                              "--context", "512", "--reasoning-format", mode)
        cls.openai = {mode: openai.OpenAI(base_url=server.base_url, api_key="unused",
                                          max_retries=0, timeout=600)
                      for mode, server in cls.servers.items()}
        cls.client = anthropic.Anthropic(base_url=f"http://127.0.0.1:{cls.servers['auto'].port}",
                                         api_key="unused", max_retries=0, timeout=600)
        cls.model = cls.openai["auto"].models.list().data[0].id

    @classmethod
    def tearDownClass(cls):
        for server in cls.servers.values():
            status = server.stop()
            assert status == 0, f"exit status {status}\n{server.log()}"
        shutil.rmtree(cls.directory)

    def chat(self, mode="auto", messages=None, **kwargs):
        kwargs.setdefault("max_tokens", 24)
        return self.openai[mode].chat.completions.create(
            model=self.model, temperature=0,
            messages=messages or [{"role": "user", "content": QUESTION}], **kwargs)

    def test_chat_completions_return_the_thinking_apart(self):
        whole = self.chat().choices[0]
        reasoning = whole.message.reasoning_content
        self.assertIsInstance(reasoning, str)
        self.assertTrue(reasoning)
        self.assertEqual(whole.finish_reason, "length")

        chunks = list(self.chat(stream=True))
        streamed_reasoning = "".join(getattr(c.choices[0].delta, "reasoning_content", None) or ""
                                     for c in chunks if c.choices)
        streamed_content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        self.assertEqual(streamed_reasoning, reasoning)
        self.assertEqual(streamed_content, whole.message.content)
        self.assertEqual(chunks[0].choices[0].delta.role, "assistant")

        # The same tokens with --reasoning-format none: their text inline, nothing apart; and so
        # on this server with the request's own reasoning_format.
        inline = self.chat("none").choices[0].message
        self.assertIsNone(getattr(inline, "reasoning_content", None))
        self.assertTrue(inline.content.strip("\n").startswith(reasoning), inline.content)
        asked = self.chat(extra_body={"reasoning_format": "none"}).choices[0].message
        self.assertIsNone(getattr(asked, "reasoning_content", None))
        self.assertEqual(asked.content, inline.content)
        with self.assertRaises(openai.BadRequestError) as caught:
            self.chat(extra_body={"reasoning_format": "deepseek-legacy"})
        self.assertEqual(caught.exception.body["param"], "reasoning_format")

    def test_messages_api_returns_a_thinking_block(self):
        chat = self.chat().choices[0].message
        kwargs = dict(model=self.model, max_tokens=24, extra_body={"temperature": 0},
                      messages=[{"role": "user", "content": QUESTION}])
        whole = self.client.messages.create(**kwargs)
        self.assertEqual(whole.content[0].type, "thinking")
        self.assertEqual(whole.content[0].thinking, chat.reasoning_content)
        text = "".join(b.text for b in whole.content if b.type == "text")
        self.assertEqual(text, chat.content)
        with self.client.messages.stream(**kwargs) as stream:
            types = [event.type for event in stream]
            streamed = stream.get_final_message()
        self.assertIn("thinking", types)  # the client's own event for a thinking_delta
        self.assertEqual([b.model_dump() for b in streamed.content],
                         [b.model_dump() for b in whole.content])
        self.assertEqual(streamed.stop_reason, whole.stop_reason)

    def test_responses_api_returns_a_reasoning_item(self):
        chat = self.chat().choices[0].message
        whole = self.openai["auto"].responses.create(model=self.model, input=QUESTION,
                                                     max_output_tokens=24, temperature=0)
        self.assertEqual(whole.output[0].type, "reasoning")
        self.assertEqual(whole.output[0].content[0].text, chat.reasoning_content)
        self.assertEqual(whole.output_text, chat.content)
        self.assertGreater(whole.usage.output_tokens_details.reasoning_tokens, 0)
        with self.openai["auto"].responses.stream(model=self.model, input=QUESTION,
                                                  max_output_tokens=24,
                                                  temperature=0) as stream:
            events = list(stream)
        deltas = "".join(e.delta for e in events if e.type == "response.reasoning_text.delta")
        self.assertEqual(deltas, chat.reasoning_content)

    def test_past_reasoning_reaches_the_template(self):
        # Qwen 3's template writes the thinking of replies after the last user turn.
        history = [{"role": "user", "content": QUESTION},
                   {"role": "assistant", "content": "Streuung.",
                    "reasoning_content": "Rayleigh scattering, shorter wavelengths."}]
        with_reasoning = self.chat(messages=history, max_tokens=1).usage.prompt_tokens
        history[1].pop("reasoning_content")
        without = self.chat(messages=history, max_tokens=1).usage.prompt_tokens
        self.assertGreater(with_reasoning, without)
        history[1]["reasoning_content"] = 7
        with self.assertRaises(openai.BadRequestError) as caught:
            self.chat(messages=history)
        self.assertEqual(caught.exception.body["param"], "messages[1].reasoning_content")


TINY_GPT_OSS = os.path.join(os.path.dirname(__file__), "..", "data", "models", "gpt_oss")
# A harmony template as gpt-oss's writes turns (its published one also writes today's date): the
# generation prompt opens the analysis channel, so the reply starts as thinking whatever the
# weights, and its special tokens (<|end|>, <|start|>, <|channel|>, <|message|>) reach the split.
HARMONY_TEMPLATE = (
    "{%- for m in messages -%}<|start|>{{ m.role }}<|message|>{{ m.content }}<|end|>"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|start|>assistant<|channel|>analysis<|message|>"
    "{%- endif -%}")


class HarmonyReasoningTest(ServedModelTest):
    """gpt-oss's analysis channel comes apart as reasoning_content (the tiny gpt-oss model)."""

    @classmethod
    def setUpClass(cls):
        cls.directory = tempfile.mkdtemp()
        for name in os.listdir(TINY_GPT_OSS):
            shutil.copy(os.path.join(TINY_GPT_OSS, name), cls.directory)
        path = os.path.join(cls.directory, "tokenizer_config.json")
        with open(path) as f:
            config = json.load(f)
        config["chat_template"] = HARMONY_TEMPLATE
        with open(path, "w") as f:
            json.dump(config, f)
        cls.server_args = ("-m", cls.directory, "--parallel", "1", "--context", "256")
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.directory)
        super().tearDownClass()

    def chat(self, **kwargs):
        return self.client.chat.completions.create(
            model=self.model, temperature=0, max_tokens=24,
            messages=[{"role": "user", "content": QUESTION}], **kwargs).choices[0].message

    def test_the_analysis_channel_is_the_reasoning(self):
        split = self.chat()
        self.assertTrue(split.reasoning_content)
        self.assertNotIn("<|", split.reasoning_content)
        inline = self.chat(extra_body={"reasoning_format": "none"})
        self.assertIsNone(getattr(inline, "reasoning_content", None))
        self.assertTrue(inline.content.strip("\n").startswith(split.reasoning_content),
                        (inline.content, split.reasoning_content))


if __name__ == "__main__":
    unittest.main()
