"""`response_format` (OpenAI's Structured Outputs) on `xlacel serve`, through the official client:
a set of JSON schemas on the default model, whole and streamed, on both endpoints (whenever a
reply ends with finish_reason "stop" it parses and validates with `jsonschema`); a tiny
random-weight model (tests/data/models/qwen3: its vocabulary is 256 byte tokens) whose output is
noise without the grammar and valid JSON with it (the grammar, not the model, makes it valid);
malformed `response_format` values are 400s naming the field; and `xlacel generate
--json-schema`."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import jsonschema
import openai

sys.path.insert(0, os.path.dirname(__file__))
from server_process import ServerProcess, xlacel_path  # noqa: E402

XLACEL = xlacel_path()
TINY_QWEN3 = os.path.join(os.path.dirname(__file__), "../data/models/qwen3")

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "email": {"type": "string"},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}

# Each: (name, schema, what to ask for). Nested objects, arrays, enums, numbers, booleans,
# strings with non-ASCII text, required and optional properties, $defs and anyOf.
SCHEMAS = [
    ("person", PERSON, "Describe a fictional person named Zoë who lives in Zürich."),
    ("city", {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "country": {"enum": ["France", "Deutschland", "日本", "España"]},
            "population_millions": {"type": "number", "minimum": 0},
            "is_capital": {"type": "boolean"},
        },
        "required": ["city", "country", "population_millions", "is_capital"],
        "additionalProperties": False,
    }, "Tell me about the capital of Japan."),
    ("recipe", {
        "type": "object",
        "properties": {
            "title": {"type": "string", "maxLength": 60},
            "ingredients": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"item": {"type": "string"},
                                   "grams": {"type": "integer", "minimum": 1}},
                    "required": ["item", "grams"],
                    "additionalProperties": False,
                },
                "minItems": 1, "maxItems": 5,
            },
            "vegetarian": {"type": "boolean"},
        },
        "required": ["title", "ingredients"],
        "additionalProperties": False,
    }, "Give me a simple crêpe recipe."),
    ("order", {
        "$defs": {"line": {"type": "object",
                           "properties": {"sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{3}$"},
                                          "qty": {"type": "integer", "minimum": 1, "maximum": 9}},
                           "required": ["sku", "qty"], "additionalProperties": False}},
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "status": {"enum": ["open", "shipped", "cancelled"]},
            "lines": {"type": "array", "items": {"$ref": "#/$defs/line"}, "maxItems": 3},
            "note": {"anyOf": [{"type": "string", "maxLength": 40}, {"type": "null"}]},
        },
        "required": ["id", "status", "lines", "note"],
        "additionalProperties": False,
    }, "Make up an order of two items."),
    ("tags", {"type": "array", "items": {"type": "string", "maxLength": 20},
              "minItems": 2, "maxItems": 4},
     "List a few tags for a blog post about Tōkyō ramen."),
]


def response_format(name, schema):
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


class StructuredOutputTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(XLACEL, "--parallel", "4", "--context", "1024")
        cls.client = openai.OpenAI(base_url=cls.server.base_url, api_key="unused",
                                   max_retries=0, timeout=600)
        cls.model = cls.client.models.list().data[0].id

    @classmethod
    def tearDownClass(cls):
        status = cls.server.stop()
        if status != 0:
            print(cls.server.log(), file=sys.stderr)

    def chat(self, content, **kwargs):
        return self.client.chat.completions.create(
            model=self.model, messages=[{"role": "user", "content": content}], **kwargs)

    def assert_valid(self, text, schema, finish_reason, label):
        if finish_reason != "stop":
            self.assertEqual(finish_reason, "length", label)
            return
        value = json.loads(text)
        jsonschema.validate(value, schema)

    def test_every_schema_gives_valid_json_greedy_and_sampled(self):
        stops = 0
        for name, schema, prompt in SCHEMAS:
            for temperature, seed in [(0, None), (0.8, 7)]:
                with self.subTest(schema=name, temperature=temperature):
                    reply = self.chat(prompt, temperature=temperature, seed=seed, max_tokens=200,
                                      response_format=response_format(name, schema))
                    choice = reply.choices[0]
                    self.assert_valid(choice.message.content, schema, choice.finish_reason, name)
                    stops += choice.finish_reason == "stop"
        self.assertGreaterEqual(stops, len(SCHEMAS))  # most replies complete within 200 tokens

    def test_streamed_equals_whole_on_both_endpoints(self):
        name, schema, prompt = SCHEMAS[1]
        whole = self.chat(prompt, temperature=0, max_tokens=200,
                          response_format=response_format(name, schema))
        stream = self.chat(prompt, temperature=0, max_tokens=200, stream=True,
                           response_format=response_format(name, schema))
        text, finish = "", None
        for chunk in stream:
            if chunk.choices:
                text += chunk.choices[0].delta.content or ""
                finish = chunk.choices[0].finish_reason or finish
        self.assertEqual(text, whole.choices[0].message.content)
        self.assertEqual(finish, whole.choices[0].finish_reason)
        self.assert_valid(text, schema, finish, name)

        completion = self.client.completions.create(
            model=self.model, prompt="A person, as JSON:", temperature=0, max_tokens=120,
            extra_body={"response_format": response_format("person", PERSON)})
        streamed = "".join(
            c.choices[0].text for c in self.client.completions.create(
                model=self.model, prompt="A person, as JSON:", temperature=0, max_tokens=120,
                stream=True, extra_body={"response_format": response_format("person", PERSON)})
            if c.choices)
        choice = completion.choices[0]
        self.assertEqual(streamed, choice.text)
        self.assert_valid(choice.text, PERSON, choice.finish_reason, "completions")

    def test_json_object(self):
        reply = self.chat("Give me a JSON object describing a cat.", temperature=0, max_tokens=150,
                          response_format={"type": "json_object"})
        choice = reply.choices[0]
        if choice.finish_reason == "stop":
            self.assertIsInstance(json.loads(choice.message.content), dict)

    def test_constrained_and_free_requests_batched_keep_their_own_tokens(self):
        """A constrained greedy request batched with unconstrained ones: each gives what it
        gives alone (the mask applies to its own row only)."""
        name, schema, prompt = SCHEMAS[0]
        free_alone = self.chat("What is the capital of France?", temperature=0, max_tokens=30)
        constrained_alone = self.chat(prompt, temperature=0, max_tokens=120,
                                      response_format=response_format(name, schema))
        import concurrent.futures
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            free = [pool.submit(self.chat, "What is the capital of France?", temperature=0,
                                max_tokens=30) for _ in range(2)]
            constrained = [pool.submit(self.chat, prompt, temperature=0, max_tokens=120,
                                       response_format=response_format(name, schema))
                           for _ in range(2)]
            for future in free:
                self.assertEqual(future.result().choices[0].message.content,
                                 free_alone.choices[0].message.content)
            for future in constrained:
                self.assertEqual(future.result().choices[0].message.content,
                                 constrained_alone.choices[0].message.content)

    def assert_error(self, body, param, path="/v1/chat/completions", message_part=None):
        status, got = self.server.request("POST", path, body,
                                          headers={"Content-Type": "application/json"})
        self.assertEqual(status, 400, got)
        error = got["error"]
        self.assertEqual(error["param"], param, error)
        if message_part is not None:
            self.assertIn(message_part, error["message"])

    def test_malformed_response_format_is_a_400_naming_the_field(self):
        user = [{"role": "user", "content": "hi"}]
        base = {"model": self.model, "messages": user}
        schema_field = "response_format.json_schema.schema"
        for value, param in [
            ("json", "response_format"),
            ([{"type": "json_object"}], "response_format"),
            ({}, "response_format.type"),
            ({"type": "xml"}, "response_format.type"),
            ({"type": 5}, "response_format.type"),
            ({"type": "json_schema"}, "response_format.json_schema"),
            ({"type": "json_schema", "json_schema": "x"}, "response_format.json_schema"),
            ({"type": "json_schema", "json_schema": {"schema": PERSON}},
             "response_format.json_schema.name"),
            ({"type": "json_schema", "json_schema": {"name": "a b", "schema": PERSON}},
             "response_format.json_schema.name"),
            ({"type": "json_schema", "json_schema": {"name": "p", "schema": PERSON,
                                                     "strict": "yes"}},
             "response_format.json_schema.strict"),
            ({"type": "json_schema", "json_schema": {"name": "p"}}, schema_field),
            ({"type": "json_schema", "json_schema": {"name": "p", "schema": [1]}}, schema_field),
            ({"type": "json_schema", "json_schema": {"name": "p", "schema": {"type": "strin"}}},
             schema_field),
        ]:
            with self.subTest(value=value):
                self.assert_error({**base, "response_format": value}, param)
                self.assert_error({"model": self.model, "prompt": "hi", "response_format": value},
                                  param, path="/v1/completions")
        # Keywords the grammar cannot enforce are named, with where they are.
        for schema, part in [
            ({"type": "array", "uniqueItems": True}, "'uniqueItems' at the root"),
            ({"type": "object", "properties": {"a": {"not": {"type": "null"}}}},
             "'not' at /properties/a"),
            ({"type": "object", "properties": {"x": {"type": "number", "multipleOf": 0.1}}},
             "'multipleOf' at /properties/x"),
            ({"if": {"type": "string"}, "then": {"maxLength": 3}}, "'if' at the root"),
        ]:
            with self.subTest(schema=schema):
                self.assert_error({**base, "response_format": response_format("s", schema)},
                                  schema_field, message_part=part)
        with self.assertRaises(openai.BadRequestError) as raised:
            self.chat("hi", response_format={"type": "json_schema",
                                             "json_schema": {"name": "p", "schema": {
                                                 "type": "array", "contains": {"type": "string"}}}})
        self.assertEqual(raised.exception.body["param"], schema_field)
        # None of that disturbed the server.
        self.assertTrue(self.chat("Say hi.", max_tokens=4).choices[0].message.content)

    def test_cli_json_schema(self):
        name, schema, prompt = SCHEMAS[1]
        with tempfile.TemporaryDirectory() as scratch:
            path = os.path.join(scratch, "schema.json")
            with open(path, "w") as f:
                json.dump(schema, f)
            out = subprocess.run([XLACEL, "generate", "--chat", prompt, "--json-schema", path,
                                  "-n", "200", "--output-format", "json"],
                                 check=True, capture_output=True, text=True)
            result = json.loads(out.stdout)
            self.assertEqual(result["stop"], "eos", result)
            jsonschema.validate(json.loads(result["text"]), schema)
            # The server's greedy reply is the same text.
            reply = self.chat(prompt, temperature=0, max_tokens=200,
                              response_format=response_format(name, schema))
            self.assertEqual(reply.choices[0].message.content, result["text"])
            with open(path, "w") as f:
                json.dump({"type": "array", "uniqueItems": True}, f)
            bad = subprocess.run([XLACEL, "generate", "-p", "x", "--json-schema", path],
                                 capture_output=True, text=True)
            self.assertEqual(bad.returncode, 1)
            self.assertEqual(bad.stderr.strip().splitlines()[-1],
                             f"xlacel: {path}: the keyword 'uniqueItems' at the root is not "
                             "supported by constrained decoding")
            obj = subprocess.run([XLACEL, "generate", "-p", "A cat as JSON:", "--grammar-json",
                                  "-n", "100", "--output-format", "json"],
                                 check=True, capture_output=True, text=True)
            result = json.loads(obj.stdout)
            if result["stop"] == "eos":
                self.assertIsInstance(json.loads(result["text"]), dict)


# Bounded schemas (enums, bounded integers and lengths, few items), so that even noise completes
# them within the token budget: every reply must then end with "stop" and validate.
TINY_SCHEMAS = [
    {"type": "object",
     "properties": {"ok": {"type": "boolean"}, "n": {"type": "integer", "minimum": -50,
                                                      "maximum": 50},
                    "mood": {"enum": ["happy", "sad", "ÿ-ß"]}},
     "required": ["ok", "n", "mood"], "additionalProperties": False},
    {"type": "array", "items": {"type": "string", "maxLength": 8}, "minItems": 1, "maxItems": 3},
    {"type": "object",
     "properties": {"inner": {"type": "object",
                              "properties": {"x": {"type": "integer", "minimum": 0,
                                                   "maximum": 9}},
                              "required": ["x"], "additionalProperties": False},
                    "label": {"type": "string", "maxLength": 6}},
     "required": ["inner"], "additionalProperties": False},
]


class TinyRandomModelTest(unittest.TestCase):
    """Random weights and a 256-byte vocabulary: the model alone writes noise."""

    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(XLACEL, "-m", TINY_QWEN3, "--parallel", "4", "--context", "512")
        cls.client = openai.OpenAI(base_url=cls.server.base_url, api_key="unused",
                                   max_retries=0, timeout=600)
        cls.model = cls.client.models.list().data[0].id

    @classmethod
    def tearDownClass(cls):
        if cls.server.stop() != 0:
            print(cls.server.log(), file=sys.stderr)

    def test_noise_becomes_valid_json_under_a_schema(self):
        free = self.client.completions.create(model=self.model, prompt="Hello", max_tokens=40,
                                              temperature=1, seed=1)
        with self.assertRaises(ValueError):
            json.loads(free.choices[0].text)
        for index, schema in enumerate(TINY_SCHEMAS):
            for seed in range(4):
                with self.subTest(schema=index, seed=seed):
                    reply = self.client.completions.create(
                        model=self.model, prompt="Hello", max_tokens=400, temperature=1,
                        seed=seed, extra_body={"response_format": response_format("s", schema)})
                    choice = reply.choices[0]
                    self.assertEqual(choice.finish_reason, "stop", choice.text)
                    jsonschema.validate(json.loads(choice.text), schema)
        reply = self.client.chat.completions.create(
            model=self.model, messages=[{"role": "user", "content": "hi"}], max_tokens=400,
            temperature=1, seed=3, response_format={"type": "json_object"})
        if reply.choices[0].finish_reason == "stop":
            self.assertIsInstance(json.loads(reply.choices[0].message.content), dict)


if __name__ == "__main__":
    unittest.main(verbosity=2)
