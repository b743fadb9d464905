"""Tool calling through `xlacel serve`, spoken to with OpenAI's official client: on the default
model (SmolLM2, whose template takes no tools: the generic fallback describes them in a system
message) and on tiny random-weight families whose real templates render tools (Qwen 3: Hermes
<tool_call>; Granite: <|tool_call|>; the Llama 3.2 and Mistral v0.3 templates on the tiny Qwen 3
weights). Checked: tools reach the prompt (and `tool_choice: none` keeps them out), replies are
well-formed (tool_calls with ids, names of the tools and JSON-object arguments, finish_reason
tool_calls; or text), `tool_choice: required` and a named function always give calls (the
grammar makes the model write the family's call syntax) whose arguments validate against the
tool's parameters, streamed replies reassemble (the client's own accumulator) to the
non-streamed ones, conversations with tool_calls and tool results render, and every malformed
tools / tool_choice / message value is a 400 naming the field. Grammar-constrained calls stream
their arguments in fragments as they are generated. The parsing of each family's
calls is also checked on recorded replies in tests/tool_call_test.cpp."""
import json
import os
import shutil
import sys
import tempfile
import unittest

import jsonschema
import openai
from openai.lib.streaming.chat import ChatCompletionStreamState

sys.path.insert(0, os.path.dirname(__file__))
from server_process import ServerProcess, xlacel_path  # noqa: E402

XLACEL = xlacel_path()
DATA = os.path.join(os.path.dirname(__file__), "..", "data")
with open(os.path.join(DATA, "chat", "tools.json")) as tools_file:
    TOOLS = json.load(tools_file)
QUESTION = "What is the weather like in Paris today? Use the get_weather tool."
# A tool whose calls are short whatever the weights: random tiny models write them in full.
SWITCH = {"type": "function", "function": {
    "name": "switch_light", "description": "Turn the light on or off.",
    "parameters": {"type": "object", "properties": {"state": {"enum": ["on", "off"]}},
                   "required": ["state"], "additionalProperties": False}}}

# A finished exchange as clients send it back: the call's arguments as a string of JSON, the
# result as a tool message. Ids of 9 letters and digits (Mistral's templates require them).
HISTORY = [
    {"role": "user", "content": "What's the weather in Zürich?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call12345", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\": \"Zürich\"}"}}]},
    {"role": "tool", "tool_call_id": "call12345", "content": "{\"temperature\": 18}"},
    {"role": "assistant", "content": "It is 18 °C in Zürich."},
    {"role": "user", "content": "And in Paris?"},
]


def template_model(directory, template_file):
    """A copy of the tiny Qwen 3 model whose chat template is `template_file`."""
    source = os.path.join(DATA, "models", "qwen3")
    for name in os.listdir(source):
        shutil.copy(os.path.join(source, name), directory)
    config_path = os.path.join(directory, "tokenizer_config.json")
    with open(config_path) as f:
        config = json.load(f)
    with open(os.path.join(DATA, "chat", "templates", template_file)) as f:
        config["chat_template"] = f.read()
    with open(config_path, "w") as f:
        json.dump(config, f)
    return directory


class ToolServerTest:
    """Checks every model gets; subclasses start the server (MODEL_ARGS)."""
    MODEL_ARGS = []
    MAX_TOKENS = 24
    CALL_TOKENS = 64  # enough for any call to switch_light in every family's syntax
    CONTEXT = 1024
    TOOLS = TOOLS

    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(XLACEL, *cls.model_args(), "--parallel", "4", "--context",
                                   str(cls.CONTEXT))
        cls.client = openai.OpenAI(base_url=cls.server.base_url, api_key="unused",
                                   max_retries=0, timeout=600)
        cls.model = cls.client.models.list().data[0].id

    @classmethod
    def model_args(cls):
        return cls.MODEL_ARGS

    @classmethod
    def tearDownClass(cls):
        status = cls.server.stop()
        assert status == 0, f"exit status {status}\n{cls.server.log()}"

    def create(self, messages=None, **kwargs):
        kwargs.setdefault("temperature", 0)
        kwargs.setdefault("max_tokens", self.MAX_TOKENS)
        return self.client.chat.completions.create(
            model=self.model, messages=messages or [{"role": "user", "content": QUESTION}],
            **kwargs)

    def reassembled(self, messages=None, **kwargs):
        """A streamed reply put back together by the client's own accumulator (what
        `client.chat.completions.stream()` builds)."""
        kwargs.setdefault("temperature", 0)
        kwargs.setdefault("max_tokens", self.MAX_TOKENS)
        state = ChatCompletionStreamState()
        chunks = self.client.chat.completions.create(
            model=self.model, messages=messages or [{"role": "user", "content": QUESTION}],
            stream=True, **kwargs)
        for chunk in chunks:
            state.handle_chunk(chunk)
        return state.current_completion_snapshot

    def assert_well_formed(self, choice, tools=None):
        names = {t["function"]["name"] for t in tools or self.TOOLS}
        if choice.message.tool_calls:
            # Cut off by max_tokens (grammar-constrained calls only): the last call's arguments
            # as far as they were written.
            cut = choice.finish_reason == "length"
            self.assertEqual(choice.finish_reason, "length" if cut else "tool_calls")
            for i, call in enumerate(choice.message.tool_calls):
                self.assertEqual(call.type, "function")
                self.assertRegex(call.id, r"^[A-Za-z0-9]{9}$")
                self.assertIn(call.function.name, names)
                if cut and i + 1 == len(choice.message.tool_calls):
                    self.assertTrue(call.function.arguments.startswith("{"))
                else:
                    self.assertIsInstance(json.loads(call.function.arguments), dict)
        else:
            self.assertIsInstance(choice.message.content, str)
            self.assertIn(choice.finish_reason, ("stop", "length"))

    def assert_same_reply(self, whole, streamed):
        a, b = whole.choices[0], streamed.choices[0]
        self.assertEqual(a.finish_reason, b.finish_reason)
        self.assertEqual(a.message.content or "", b.message.content or "")
        calls = lambda m: [(c.function.name, c.function.arguments) for c in m.tool_calls or []]
        self.assertEqual(calls(a.message), calls(b.message))

    # --- the tests ----------------------------------------------------------------------------

    def test_tools_reach_the_prompt_unless_tool_choice_is_none(self):
        plain = self.create(max_tokens=1).usage.prompt_tokens
        with_tools = self.create(tools=self.TOOLS, max_tokens=1).usage.prompt_tokens
        named = self.create(tools=self.TOOLS, max_tokens=1, tool_choice={
            "type": "function", "function": {"name": self.TOOLS[0]["function"]["name"]}}
        ).usage.prompt_tokens
        none = self.create(tools=self.TOOLS, tool_choice="none", max_tokens=1).usage.prompt_tokens
        self.assertGreater(with_tools, plain + 40)  # the tools' schemas are in the prompt
        self.assertGreaterEqual(named, with_tools)
        self.assertEqual(none, plain)

    def test_replies_are_well_formed_and_stream_the_same(self):
        for kwargs in ({}, {"tool_choice": "required"}, {"parallel_tool_calls": False},
                       {"tool_choice": {"type": "function",
                                        "function": {"name": self.TOOLS[0]["function"]["name"]}}}):
            with self.subTest(**kwargs):
                whole = self.create(tools=self.TOOLS, **kwargs)
                self.assert_well_formed(whole.choices[0])
                self.assert_same_reply(whole, self.reassembled(tools=self.TOOLS, **kwargs))

    def test_required_and_named_calls_are_always_made(self):
        tools = self.TOOLS + [SWITCH] if SWITCH not in self.TOOLS else self.TOOLS
        schemas = {t["function"]["name"]: t["function"].get("parameters", {}) for t in tools}
        named = {"type": "function", "function": {"name": "switch_light"}}
        # parallel_tool_calls false: the grammar ends the reply after the call, so it fits.
        for kwargs in ({"tool_choice": named, "parallel_tool_calls": False},
                       {"tool_choice": "required", "parallel_tool_calls": False}):
            with self.subTest(**kwargs):
                whole = self.create(tools=tools, max_tokens=self.CALL_TOKENS, **kwargs)
                choice = whole.choices[0]
                self.assertEqual(choice.finish_reason, "tool_calls", choice.message)
                calls = choice.message.tool_calls
                self.assertEqual(len(calls), 1)
                for call in calls:
                    if kwargs["tool_choice"] == named:
                        self.assertEqual(call.function.name, "switch_light")
                    jsonschema.validate(json.loads(call.function.arguments),
                                        schemas[call.function.name])
                self.assert_well_formed(choice, tools)
                self.assert_same_reply(whole, self.reassembled(
                    tools=tools, max_tokens=self.CALL_TOKENS, **kwargs))

    def test_constrained_call_arguments_stream_in_fragments(self):
        tools = self.TOOLS + [SWITCH] if SWITCH not in self.TOOLS else self.TOOLS
        kwargs = {"tools": tools, "max_tokens": self.CALL_TOKENS, "parallel_tool_calls": False,
                  "tool_choice": {"type": "function", "function": {"name": "switch_light"}}}
        whole = self.create(**kwargs)
        fragments = []
        state = ChatCompletionStreamState()
        for chunk in self.client.chat.completions.create(
                model=self.model, messages=[{"role": "user", "content": QUESTION}], stream=True,
                temperature=0, **kwargs):
            state.handle_chunk(chunk)
            for choice in chunk.choices:
                for call in choice.delta.tool_calls or []:
                    if call.function and call.function.arguments:
                        fragments.append(call.function.arguments)
        # '{"state": "on"}' is several tokens: each adds to the arguments as it is generated.
        self.assertGreater(len(fragments), 1, fragments)
        self.assert_same_reply(whole, state.current_completion_snapshot)
        (call,) = whole.choices[0].message.tool_calls
        self.assertEqual("".join(fragments), call.function.arguments)

    def test_a_conversation_with_calls_and_results_renders(self):
        whole = self.create(HISTORY, tools=self.TOOLS)
        self.assert_well_formed(whole.choices[0])
        longer = self.create(HISTORY, tools=self.TOOLS, max_tokens=1).usage.prompt_tokens
        shorter = self.create(HISTORY[-1:], tools=self.TOOLS, max_tokens=1).usage.prompt_tokens
        self.assertGreater(longer, shorter)
        self.assert_same_reply(whole, self.reassembled(HISTORY, tools=self.TOOLS))

    def test_malformed_values_are_400s_naming_the_field(self):
        weather = self.TOOLS[0]
        cases = [
            ({"tools": {"type": "function"}}, "tools"),
            ({"tools": [{"type": "function", "function": {"description": "no name"}}]},
             "tools[0].function.name"),
            ({"tools": [{"type": "function", "function": {"name": "f", "parameters": []}}]},
             "tools[0].function.parameters"),
            ({"tools": [{"type": "web_search"}]}, "tools[0].type"),
            ({"tools": [weather, weather]}, "tools[1].function.name"),
            ({"tools": self.TOOLS, "tool_choice": "always"}, "tool_choice"),
            ({"tools": self.TOOLS, "tool_choice": {"type": "function", "function": {"name": "nope"}}},
             "tool_choice.function.name"),
            ({"tool_choice": "required"}, "tool_choice"),
            ({"tools": self.TOOLS, "parallel_tool_calls": "no"}, "parallel_tool_calls"),
        ]
        for extra, param in cases:
            with self.subTest(param=param, body=extra):
                with self.assertRaises(openai.BadRequestError) as raised:
                    self.client.chat.completions.create(
                        model=self.model, messages=[{"role": "user", "content": "hi"}],
                        max_tokens=1, **extra)
                self.assertEqual(raised.exception.body["param"], param)
        with self.assertRaises(openai.BadRequestError) as raised:
            self.create([{"role": "tool", "content": "18"}], tools=self.TOOLS, max_tokens=1)
        self.assertEqual(raised.exception.body["param"], "messages[0].tool_call_id")
        # A schema keyword the grammar cannot enforce: refused where calls are required, the
        # call left unconstrained under "auto".
        tags = {"type": "function", "function": {"name": "tag", "parameters": {
            "type": "object", "properties": {"tags": {"type": "array", "uniqueItems": True}}}}}
        with self.assertRaises(openai.BadRequestError) as raised:
            self.create(tools=[tags], tool_choice="required", max_tokens=1)
        self.assertEqual(raised.exception.body["param"], "tools[0].function.parameters")
        self.assertIn("uniqueItems", raised.exception.body["message"])
        self.assert_well_formed(self.create(tools=[tags], max_tokens=1).choices[0], [tags])


class DefaultModelTools(ToolServerTest, unittest.TestCase):
    """SmolLM2: no tools in its template, so the generic fallback."""
    MAX_TOKENS = 48

    def test_a_real_model_fills_in_the_call_it_must_make(self):
        # Greedy SmolLM2 answers this question in text when free ("auto"); made to call a tool,
        # it picks get_weather and fills in the city from the question.
        messages = [{"role": "user", "content": "What is the weather like in Paris today?"}]
        choice = self.create(messages, tools=TOOLS, tool_choice="required").choices[0]
        self.assertEqual(choice.finish_reason, "tool_calls")
        self.assertIsNone(choice.message.content)
        (call,) = choice.message.tool_calls
        self.assertEqual(call.function.name, "get_weather")
        self.assertEqual(json.loads(call.function.arguments)["city"], "Paris")


class TinyModelTools(ToolServerTest):
    CONTEXT = 2048  # the tiny models' max_position_embeddings
    # Their byte-level vocabularies spend a token per byte: one short tool.
    TOOLS = [SWITCH]
    CALL_TOKENS = 120


class Qwen3Tools(TinyModelTools, unittest.TestCase):
    MODEL_ARGS = ["-m", os.path.join(DATA, "models", "qwen3")]


class GraniteTools(TinyModelTools, unittest.TestCase):
    MODEL_ARGS = ["-m", os.path.join(DATA, "models", "granite")]



class TemplateOnTinyQwen(TinyModelTools):
    TEMPLATE = None

    @classmethod
    def model_args(cls):
        cls.directory = tempfile.mkdtemp(prefix="xlacel-tools-")
        return ["-m", template_model(cls.directory, cls.TEMPLATE)]

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.directory, ignore_errors=True)


class Llama32TemplateTools(TemplateOnTinyQwen, unittest.TestCase):
    TEMPLATE = "llama-3.2-instruct.jinja"


class MistralTemplateTools(TemplateOnTinyQwen, unittest.TestCase):
    TEMPLATE = "mistral-7b-instruct-v0.3.jinja"


if __name__ == "__main__":
    unittest.main(verbosity=2)
