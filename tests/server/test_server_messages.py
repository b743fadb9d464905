"""Anthropic's Messages API through `xlacel serve` (POST /v1/messages, /v1/messages/count_tokens),
spoken to with Anthropic's official client, on the tiny random-weight Qwen 3 model (whose real
template renders tools, <tool_call>, and switches thinking). Checked: a Messages request gives the
same greedy tokens as the same conversation through Chat Completions (system prompt, tool_use and
tool_result blocks translated as the OpenAI side has them); streamed and whole replies agree
(text, non-ASCII included, tool_use blocks, stop reason, usage); stop_sequences stop and are named;
tool_choice any and tool give tool_use blocks whose input validates against the input_schema;
output_config.format holds the reply to a JSON schema; thinking disabled reaches the template;
count_tokens counts what the request prefills; x-api-key works as the key; and every malformed
request is a 4xx in Anthropic's error shape while the server stays healthy. Sampling fields
(temperature, top_k, top_p) are sent as the client's extra_body: the client no longer types them."""
import json
import os
import sys
import unittest

import anthropic
import jsonschema
import openai

sys.path.insert(0, os.path.dirname(__file__))
from server_process import ServerProcess, xlacel_path  # noqa: E402

XLACEL = xlacel_path()
TINY_QWEN3 = os.path.join(os.path.dirname(__file__), "..", "data", "models", "qwen3")
GREEDY = {"temperature": 0}
SWITCH = {"name": "switch_light", "description": "Turn the light on or off.",
          "input_schema": {"type": "object", "properties": {"state": {"enum": ["on", "off"]}},
                           "required": ["state"], "additionalProperties": False}}
WEATHER = {"name": "get_weather", "description": "The weather in a city.",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                            "required": ["city"]}}
QUESTION = "Wie ist das Wetter in Zürich? ☀️"
# Enough for any call to switch_light from the random tiny model, which writes it slowly.
CALL_TOKENS = 160


def openai_tool(tool):
    return {"type": "function", "function": {"name": tool["name"],
                                             "description": tool["description"],
                                             "parameters": tool["input_schema"]}}


class MessagesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(XLACEL, "-m", TINY_QWEN3, "--parallel", "4", "--context",
                                   "1024")
        base = f"http://127.0.0.1:{cls.server.port}"
        cls.client = anthropic.Anthropic(base_url=base, api_key="unused", max_retries=0,
                                         timeout=600)
        cls.openai = openai.OpenAI(base_url=cls.server.base_url, api_key="unused", max_retries=0,
                                   timeout=600)
        cls.model = cls.openai.models.list().data[0].id

    @classmethod
    def tearDownClass(cls):
        status = cls.server.stop()
        assert status == 0, f"exit status {status}\n{cls.server.log()}"

    def create(self, **kwargs):
        kwargs.setdefault("max_tokens", 24)
        kwargs.setdefault("messages", [{"role": "user", "content": QUESTION}])
        return self.client.messages.create(model=self.model, extra_body=GREEDY, **kwargs)

    def streamed(self, **kwargs):
        """The client's own accumulation of the stream, and the event types in order."""
        kwargs.setdefault("max_tokens", 24)
        kwargs.setdefault("messages", [{"role": "user", "content": QUESTION}])
        with self.client.messages.stream(model=self.model, extra_body=GREEDY, **kwargs) as stream:
            types = [event.type for event in stream]
            return stream.get_final_message(), types

    def assert_same_message(self, whole, streamed):
        self.assertEqual(whole.stop_reason, streamed.stop_reason)
        self.assertEqual(whole.stop_sequence, streamed.stop_sequence)
        self.assertEqual(whole.usage.output_tokens, streamed.usage.output_tokens)
        shape = lambda m: [(b.type, b.text) if b.type == "text" else (b.type, b.name, b.input)
                           for b in m.content]
        self.assertEqual(shape(whole), shape(streamed))

    def raw(self, body, path="/v1/messages", headers=None):
        return self.server.request("POST", path, body, headers)

    # --- replies ------------------------------------------------------------------------------

    def test_text_reply_matches_chat_completions_and_its_stream(self):
        whole = self.create(system="Antworte kurz.")
        self.assertEqual(whole.type, "message")
        self.assertEqual(whole.role, "assistant")
        self.assertTrue(whole.id.startswith("msg_"))
        self.assertEqual(whole.stop_reason, "max_tokens")
        self.assertEqual(whole.usage.output_tokens, 24)
        self.assertEqual([b.type for b in whole.content], ["text"])
        chat = self.openai.chat.completions.create(
            model=self.model, max_tokens=24, temperature=0,
            messages=[{"role": "system", "content": "Antworte kurz."},
                      {"role": "user", "content": QUESTION}])
        self.assertEqual(whole.content[0].text, chat.choices[0].message.content)
        self.assertEqual(whole.usage.input_tokens + whole.usage.cache_read_input_tokens,
                         chat.usage.prompt_tokens)

        streamed, types = self.streamed(system="Antworte kurz.")
        self.assert_same_message(whole, streamed)
        self.assertEqual(types[0], "message_start")
        self.assertEqual(types[-3:], ["content_block_stop", "message_delta", "message_stop"])

    def test_stop_sequences_stop_and_are_named(self):
        text = self.create(max_tokens=32).content[0].text
        printable = [i for i in range(4, len(text) - 2) if text[i:i + 2].isprintable()
                     and text[i:i + 2].strip() == text[i:i + 2]]
        self.assertTrue(printable, f"no printable pair to stop at in {text!r}")
        stop = text[printable[0]:printable[0] + 2]
        whole = self.create(max_tokens=32, stop_sequences=["\u2603never", stop])
        self.assertEqual(whole.stop_reason, "stop_sequence")
        self.assertEqual(whole.stop_sequence, stop)
        self.assertEqual(whole.content[0].text, text[:text.index(stop)])
        streamed, _ = self.streamed(max_tokens=32, stop_sequences=["\u2603never", stop])
        self.assert_same_message(whole, streamed)

    def test_tool_choice_any_and_tool_give_valid_tool_use(self):
        # The random weights write a city's name without end: get_weather is offered only
        # where the choice names switch_light.
        for tools, choice in (([SWITCH], {"type": "any"}),
                              ([WEATHER, SWITCH], {"type": "tool", "name": "switch_light"})):
            with self.subTest(tool_choice=choice):
                kwargs = dict(max_tokens=CALL_TOKENS, tools=tools, tool_choice=choice,
                              messages=[{"role": "user", "content": "Light on, please."}])
                whole = self.create(**kwargs)
                # The random weights may go on writing after the call until max_tokens.
                self.assertIn(whole.stop_reason, ("tool_use", "max_tokens"), whole)
                calls = [b for b in whole.content if b.type == "tool_use"]
                self.assertTrue(calls, whole)
                for call in calls:
                    self.assertRegex(call.id, r"^[A-Za-z0-9]{9}$")
                    tool = {"get_weather": WEATHER, "switch_light": SWITCH}[call.name]
                    if choice["type"] == "tool":
                        self.assertEqual(call.name, "switch_light")
                    jsonschema.validate(call.input, tool["input_schema"])
                streamed, types = self.streamed(**kwargs)
                self.assert_same_message(whole, streamed)
                self.assertIn("content_block_start", types)

    def test_tool_round_trip_renders_as_chat_completions_does(self):
        history = [
            {"role": "user", "content": [{"type": "text", "text": "Weather in Zürich?"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "call12345", "name": "get_weather",
                 "input": {"city": "Zürich"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call12345",
                 "content": [{"type": "text", "text": "{\"temperature\": 18}"}]},
                {"type": "text", "text": "And in Paris?"}]},
        ]
        whole = self.create(tools=[WEATHER], messages=history)
        chat = self.openai.chat.completions.create(
            model=self.model, max_tokens=24, temperature=0, tools=[openai_tool(WEATHER)],
            messages=[
                {"role": "user", "content": "Weather in Zürich?"},
                {"role": "assistant", "content": "Let me look.", "tool_calls": [
                    {"id": "call12345", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"city\": \"Zürich\"}"}}]},
                {"role": "tool", "tool_call_id": "call12345",
                 "content": "{\"temperature\": 18}"},
                {"role": "user", "content": "And in Paris?"}])
        self.assertEqual(whole.usage.input_tokens + whole.usage.cache_read_input_tokens,
                         chat.usage.prompt_tokens)
        text = "".join(b.text for b in whole.content if b.type == "text")
        self.assertEqual(text, chat.choices[0].message.content or "")
        counted = self.client.messages.count_tokens(model=self.model, tools=[WEATHER],
                                                    messages=history)
        self.assertEqual(counted.input_tokens, chat.usage.prompt_tokens)

    def test_output_config_format_holds_the_reply_to_the_schema(self):
        schema = {"type": "object", "properties": {"ok": {"type": "boolean"}},
                  "required": ["ok"], "additionalProperties": False}
        whole = self.create(max_tokens=100,
                            output_config={"format": {"type": "json_schema", "schema": schema}})
        self.assertEqual(whole.stop_reason, "end_turn")
        jsonschema.validate(json.loads(whole.content[0].text), schema)

    def test_count_tokens_tools_and_thinking(self):
        count = lambda **kw: self.client.messages.count_tokens(
            model=self.model, messages=[{"role": "user", "content": QUESTION}], **kw).input_tokens
        plain = count()
        usage = self.create(max_tokens=1).usage
        self.assertEqual(plain, usage.input_tokens + usage.cache_read_input_tokens)
        self.assertGreater(count(tools=[SWITCH]), plain)
        self.assertEqual(count(tools=[SWITCH], tool_choice={"type": "none"}), plain)
        self.assertGreater(count(system="Be brief."), plain)
        # Qwen 3's template closes an empty <think> block when thinking is off.
        self.assertGreater(count(thinking={"type": "disabled"}), plain)
        self.assertEqual(count(thinking={"type": "enabled", "budget_tokens": 1024}), plain)
        # The same switch through Chat Completions: chat_template_kwargs.
        chat = lambda **kw: self.openai.chat.completions.create(
            model=self.model, max_tokens=1, messages=[{"role": "user", "content": QUESTION}],
            **kw).usage.prompt_tokens
        self.assertEqual(chat(), plain)
        self.assertEqual(chat(extra_body={"chat_template_kwargs": {"enable_thinking": False}}),
                         count(thinking={"type": "disabled"}))
        with self.assertRaises(openai.BadRequestError) as caught:
            chat(extra_body={"chat_template_kwargs": ["enable_thinking"]})
        self.assertEqual(caught.exception.body["param"], "chat_template_kwargs")
        # A reasoning effort of "none" switches thinking off there too, in all three APIs.
        self.assertEqual(chat(extra_body={"reasoning_effort": "none"}),
                         count(thinking={"type": "disabled"}))
        self.assertEqual(chat(extra_body={"reasoning_effort": "high"}), plain)
        self.assertEqual(count(output_config={"effort": "none"}),
                         count(thinking={"type": "disabled"}))
        self.assertEqual(self.openai.responses.create(
            model=self.model, input=QUESTION, max_output_tokens=1,
            reasoning={"effort": "none"}).usage.input_tokens, count(thinking={"type": "disabled"}))
        with self.assertRaises(openai.BadRequestError) as caught:
            chat(extra_body={"reasoning_effort": "extreme"})
        self.assertEqual(caught.exception.body["param"], "reasoning_effort")

    # --- bad requests -------------------------------------------------------------------------

    def test_malformed_requests_are_4xx_in_anthropic_shape(self):
        user = [{"role": "user", "content": "hi"}]
        good = {"model": self.model, "max_tokens": 4, "messages": user}
        cases = [
            ({k: v for k, v in good.items() if k != "max_tokens"}, 400, "max_tokens"),
            ({**good, "max_tokens": 0}, 400, "max_tokens"),
            ({**good, "messages": []}, 400, "messages"),
            ({**good, "messages": [{"role": "system", "content": "x"}]}, 400, "messages.0.role"),
            ({**good, "messages": [{"role": "user", "content": 5}]}, 400, "messages.0.content"),
            ({**good, "messages": [{"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                             "data": "iVBORw0KGgo="}}]}]},
             400, "messages.0.content.0"),
            ({**good, "messages": [{"role": "user", "content": [
                {"type": "tool_use", "id": "a", "name": "f", "input": {}}]}]},
             400, "messages.0.content.0"),
            ({**good, "messages": [{"role": "assistant", "content": [
                {"type": "tool_use", "id": "a", "name": "f", "input": "x"}]}]},
             400, "messages.0.content.0.input"),
            ({**good, "temperature": 1.5}, 400, "temperature"),
            ({**good, "stop_sequences": "x"}, 400, "stop_sequences"),
            ({**good, "stop_sequences": [""]}, 400, "stop_sequences.0"),
            ({**good, "tools": [{"name": "f"}]}, 400, "tools.0.input_schema"),
            ({**good, "tools": [{"name": "bad name", "input_schema": {}}]}, 400, "tools.0.name"),
            ({**good, "tools": [{"type": "web_search_20250305", "name": "web_search"}]},
             400, "tools.0.type"),
            ({**good, "tool_choice": {"type": "tool", "name": "f"}}, 400, "tool_choice.name"),
            ({**good, "tool_choice": {"type": "sometimes"}}, 400, "tool_choice.type"),
            ({**good, "thinking": {"type": "always"}}, 400, "thinking.type"),
            ({**good, "output_config": {"format": {"type": "xml"}}}, 400,
             "output_config.format.type"),
            ({**good, "system": [{"type": "image"}]}, 400, "system.0"),
            ({**good, "model": "claude-sonnet-4-5"}, 404, "claude-sonnet-4-5"),
            ("{not json", 400, "JSON"),
        ]
        for body, status, named in cases:
            with self.subTest(body=body):
                got, reply = self.raw(body)
                self.assertEqual(got, status, reply)
                self.assertEqual(reply["type"], "error")
                self.assertIn(reply["error"]["type"], ("invalid_request_error", "not_found_error"))
                self.assertIn(named, reply["error"]["message"])
        got, reply = self.raw({"model": self.model}, "/v1/messages/count_tokens")
        self.assertEqual((got, reply["error"]["type"]), (400, "invalid_request_error"))
        got, reply = self.raw(good, "/v1/messages/batches")
        self.assertEqual((got, reply["type"], reply["error"]["type"]),
                         (404, "error", "not_found_error"))
        # The client maps them to its exceptions.
        with self.assertRaises(anthropic.BadRequestError):
            self.client.messages.create(model=self.model, max_tokens=0, messages=user)
        with self.assertRaises(anthropic.NotFoundError):
            self.client.messages.create(model="claude-haiku", max_tokens=4, messages=user)
        self.assertEqual(self.server.request("GET", "/health")[0], 200)
        self.assertEqual(self.create(max_tokens=2).usage.output_tokens, 2)


class MessagesApiKeyTest(unittest.TestCase):
    def test_x_api_key_is_the_key(self):
        server = ServerProcess(XLACEL, "-m", TINY_QWEN3, "--parallel", "1", "--context", "256",
                               "--api-key", "sekret")
        try:
            base = f"http://127.0.0.1:{server.port}"
            model = "qwen3"
            user = [{"role": "user", "content": "hi"}]
            right = anthropic.Anthropic(base_url=base, api_key="sekret", max_retries=0)
            self.assertGreater(right.messages.count_tokens(model=model, messages=user)
                               .input_tokens, 0)
            wrong = anthropic.Anthropic(base_url=base, api_key="guess", max_retries=0)
            with self.assertRaises(anthropic.AuthenticationError) as caught:
                wrong.messages.create(model=model, max_tokens=2, messages=user)
            self.assertEqual(caught.exception.body["error"]["type"], "authentication_error")
            bearer = openai.OpenAI(base_url=base + "/v1", api_key="sekret", max_retries=0)
            self.assertEqual(bearer.models.list().data[0].id, model)
        finally:
            self.assertEqual(server.stop(), 0, server.log())


if __name__ == "__main__":
    unittest.main()
