"""OpenAI's Responses API through `xlacel serve` (POST /v1/responses, GET and DELETE
/v1/responses/{id}), spoken to with OpenAI's official client and run by the OpenAI Agents SDK, on
the tiny random-weight Qwen 3 model (whose real template renders tools, <tool_call>). Checked: a
Responses request gives the same greedy tokens as the same conversation through Chat Completions
(instructions, function_call and function_call_output items translated as the chat side has
them); the stream's typed events come in order with consecutive sequence numbers and end with
the whole response; tool_choice required gives function_call items whose arguments validate;
previous_response_id continues a stored conversation (a 404 naming it when unknown, not stored
or deleted); text.format holds the reply to a JSON schema; an agent with a function tool runs to
completion; every malformed request is a 400 naming the field, and the server stays healthy."""
import json
import os
import sys
import unittest
from typing import Literal

import jsonschema
import openai

sys.path.insert(0, os.path.dirname(__file__))
from server_process import ServerProcess, xlacel_path  # noqa: E402

XLACEL = xlacel_path()
TINY_QWEN3 = os.path.join(os.path.dirname(__file__), "..", "data", "models", "qwen3")
QUESTION = "Wie ist das Wetter in Zürich? ☀️"
SWITCH = {"type": "function", "name": "switch_light", "description": "Turn the light on or off.",
          "parameters": {"type": "object", "properties": {"state": {"enum": ["on", "off"]}},
                         "required": ["state"], "additionalProperties": False}}
# Enough for any call to switch_light from the random tiny model, which writes it slowly.
CALL_TOKENS = 160


def chat_tool(tool):
    return {"type": "function", "function": {k: v for k, v in tool.items() if k != "type"}}


class ResponsesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(XLACEL, "-m", TINY_QWEN3, "--parallel", "4", "--context",
                                   "1024")
        cls.client = openai.OpenAI(base_url=cls.server.base_url, api_key="unused", max_retries=0,
                                   timeout=600)
        cls.model = cls.client.models.list().data[0].id

    @classmethod
    def tearDownClass(cls):
        status = cls.server.stop()
        assert status == 0, f"exit status {status}\n{cls.server.log()}"

    def create(self, **kwargs):
        kwargs.setdefault("max_output_tokens", 24)
        kwargs.setdefault("input", QUESTION)
        return self.client.responses.create(model=self.model, temperature=0, **kwargs)

    def events(self, **kwargs):
        kwargs.setdefault("max_output_tokens", 24)
        kwargs.setdefault("input", QUESTION)
        with self.client.responses.stream(model=self.model, temperature=0, **kwargs) as stream:
            return list(stream)

    def test_text_reply_matches_chat_completions_and_its_stream(self):
        whole = self.create(instructions="Antworte kurz.")
        self.assertEqual(whole.object, "response")
        self.assertTrue(whole.id.startswith("resp_"))
        self.assertEqual((whole.status, whole.incomplete_details.reason),
                         ("incomplete", "max_output_tokens"))
        self.assertEqual([item.type for item in whole.output], ["message"])
        self.assertEqual(whole.usage.output_tokens, 24)
        chat = self.client.chat.completions.create(
            model=self.model, max_tokens=24, temperature=0,
            messages=[{"role": "system", "content": "Antworte kurz."},
                      {"role": "user", "content": QUESTION}])
        self.assertEqual(whole.output_text, chat.choices[0].message.content)
        self.assertEqual(whole.usage.input_tokens, chat.usage.prompt_tokens)
        self.assertEqual(whole.instructions, "Antworte kurz.")
        self.assertEqual(whole.max_output_tokens, 24)

        events = self.events(instructions="Antworte kurz.")
        types = [e.type for e in events]
        self.assertEqual(types[:4], ["response.created", "response.in_progress",
                                     "response.output_item.added", "response.content_part.added"])
        self.assertEqual(types[-4:], ["response.output_text.done", "response.content_part.done",
                                      "response.output_item.done", "response.incomplete"])
        self.assertEqual([e.sequence_number for e in events], list(range(len(events))))
        deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
        self.assertEqual(deltas, whole.output_text)
        self.assertEqual(events[-1].response.output_text, whole.output_text)
        self.assertEqual(events[-1].response.usage.output_tokens, 24)

    def test_tool_choice_required_gives_function_calls_streamed_alike(self):
        kwargs = dict(input="Light on, please.", tools=[SWITCH], tool_choice="required",
                      parallel_tool_calls=False, max_output_tokens=CALL_TOKENS)
        whole = self.create(**kwargs)
        self.assertEqual(whole.status, "completed", whole)
        calls = [item for item in whole.output if item.type == "function_call"]
        self.assertEqual(len(calls), 1, whole.output)
        self.assertEqual(calls[0].name, "switch_light")
        self.assertRegex(calls[0].call_id, r"^[A-Za-z0-9]{9}$")
        jsonschema.validate(json.loads(calls[0].arguments), SWITCH["parameters"])
        with self.client.responses.stream(model=self.model, temperature=0, **kwargs) as stream:
            types = [event.type for event in stream]
            streamed = stream.get_final_response()
        self.assertIn("response.function_call_arguments.delta", types)
        self.assertIn("response.function_call_arguments.done", types)
        self.assertEqual([(c.name, c.arguments) for c in streamed.output
                          if c.type == "function_call"],
                         [(c.name, c.arguments) for c in calls])

    def test_previous_response_id_continues_the_conversation(self):
        first = self.create(input="Light on, please.", instructions="You switch lights.",
                            tools=[SWITCH], tool_choice="required", parallel_tool_calls=False,
                            max_output_tokens=CALL_TOKENS)
        call = next(item for item in first.output if item.type == "function_call")
        result = {"type": "function_call_output", "call_id": call.call_id,
                  "output": "{\"light\": \"on\"}"}
        second = self.create(previous_response_id=first.id, input=[result], tools=[SWITCH],
                             instructions="You switch lights.")
        self.assertEqual(second.previous_response_id, first.id)
        # The same conversation sent whole, and through Chat Completions.
        items = [{"role": "user", "content": "Light on, please."},
                 {"type": "function_call", "call_id": call.call_id, "name": call.name,
                  "arguments": call.arguments}, result]
        again = self.create(input=items, tools=[SWITCH], instructions="You switch lights.")
        chat = self.client.chat.completions.create(
            model=self.model, max_tokens=24, temperature=0, tools=[chat_tool(SWITCH)],
            messages=[{"role": "system", "content": "You switch lights."},
                      {"role": "user", "content": "Light on, please."},
                      {"role": "assistant", "content": None, "tool_calls": [
                          {"id": call.call_id, "type": "function",
                           "function": {"name": call.name, "arguments": call.arguments}}]},
                      {"role": "tool", "tool_call_id": call.call_id,
                       "content": "{\"light\": \"on\"}"}])
        self.assertEqual(second.usage.input_tokens, chat.usage.prompt_tokens)
        self.assertEqual(again.usage.input_tokens, chat.usage.prompt_tokens)
        self.assertEqual(second.output_text, chat.choices[0].message.content or "")
        self.assertEqual(again.output_text, second.output_text)

    def test_stored_responses_are_kept_retrieved_and_deleted(self):
        kept = self.create(max_output_tokens=2)
        self.assertEqual(self.client.responses.retrieve(kept.id).output_text, kept.output_text)
        self.client.responses.delete(kept.id)
        for call in (lambda: self.client.responses.retrieve(kept.id),
                     lambda: self.client.responses.delete(kept.id),
                     lambda: self.create(previous_response_id=kept.id)):
            with self.assertRaises(openai.NotFoundError) as caught:
                call()
            self.assertIn(kept.id, caught.exception.body["message"])
        unstored = self.create(max_output_tokens=2, store=False)
        with self.assertRaises(openai.NotFoundError) as caught:
            self.create(previous_response_id=unstored.id)
        self.assertEqual(caught.exception.body["param"], "previous_response_id")
        self.assertEqual(caught.exception.body["code"], "previous_response_not_found")

    def test_text_format_holds_the_reply_to_the_schema(self):
        schema = {"type": "object", "properties": {"ok": {"type": "boolean"}},
                  "required": ["ok"], "additionalProperties": False}
        whole = self.create(max_output_tokens=100, text={"format": {
            "type": "json_schema", "name": "verdict", "schema": schema, "strict": True}})
        self.assertEqual(whole.status, "completed")
        jsonschema.validate(json.loads(whole.output_text), schema)

    def test_an_agent_with_a_function_tool_runs_to_completion(self):
        from agents import (Agent, ModelSettings, OpenAIResponsesModel, Runner, function_tool,
                            set_tracing_disabled)
        set_tracing_disabled(True)
        switched = []

        @function_tool
        def switch_light(state: Literal["on", "off"]) -> str:
            """Turn the light on or off."""
            switched.append(state)
            return f"the light is {state}"

        client = openai.AsyncOpenAI(base_url=self.server.base_url, api_key="unused",
                                    max_retries=0)
        agent = Agent(
            name="lights", instructions="You switch lights.", tools=[switch_light],
            model=OpenAIResponsesModel(model=self.model, openai_client=client),
            model_settings=ModelSettings(tool_choice="required", parallel_tool_calls=False,
                                         temperature=0, max_tokens=CALL_TOKENS),
            tool_use_behavior="stop_on_first_tool")
        result = Runner.run_sync(agent, "Turn the light on.", max_turns=2)
        self.assertEqual(len(switched), 1)
        self.assertEqual(result.final_output, f"the light is {switched[0]}")

    def test_malformed_requests_are_400_naming_the_field(self):
        good = {"model": self.model, "input": "hi", "max_output_tokens": 2}
        cases = [
            ({k: v for k, v in good.items() if k != "input"}, "input"),
            ({**good, "input": 5}, "input"),
            ({**good, "input": []}, "input"),
            ({**good, "input": [{"type": "shell_call"}]}, "input[0].type"),
            ({**good, "input": [{"role": "tool", "content": "x"}]}, "input[0].role"),
            ({**good, "input": [{"role": "user", "content": [
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}]}]},
             "input[0].content[0]"),
            ({**good, "input": [{"type": "function_call", "name": "f", "arguments": "{}"}]},
             "input[0].call_id"),
            ({**good, "input": [{"type": "function_call_output", "call_id": "c"}]},
             "input[0].output"),
            ({**good, "tools": [{"type": "web_search"}]}, "tools[0].type"),
            ({**good, "tools": [{"type": "function", "name": "bad name"}]}, "tools[0].name"),
            ({**good, "tool_choice": {"type": "function", "name": "f"}}, "tool_choice.name"),
            ({**good, "tool_choice": "sometimes"}, "tool_choice"),
            ({**good, "text": {"format": {"type": "xml"}}}, "text.format.type"),
            ({**good, "text": {"format": {"type": "json_schema", "schema": {}}}},
             "text.format.name"),
            ({**good, "max_output_tokens": 0}, "max_output_tokens"),
            ({**good, "temperature": 3}, "temperature"),
            ({**good, "background": True}, "background"),
            ({**good, "truncation": "auto"}, "truncation"),
            ({**good, "previous_response_id": 5}, "previous_response_id"),
        ]
        for body, param in cases:
            with self.subTest(body=body):
                status, reply = self.server.request("POST", "/v1/responses", body)
                self.assertEqual(status, 400, reply)
                self.assertEqual(reply["error"]["type"], "invalid_request_error")
                self.assertEqual(reply["error"]["param"], param, reply)
        status, reply = self.server.request("POST", "/v1/responses", {**good, "model": "gpt-5"})
        self.assertEqual((status, reply["error"]["param"]), (404, "model"))
        self.assertEqual(self.server.request("GET", "/health")[0], 200)
        self.assertEqual(self.create(max_output_tokens=2).usage.output_tokens, 2)


if __name__ == "__main__":
    unittest.main()
