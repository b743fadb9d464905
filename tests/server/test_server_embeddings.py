"""POST /v1/embeddings through `xlacel serve`, spoken to with OpenAI's official client (which asks
for base64 unless told otherwise) and raw HTTP for malformed input. The model is the tiny Qwen 3
laid out as a sentence-transformers directory whose Pooling module reads the last token (as
Qwen3-Embedding's does), so the pooling comes from the model's files; the vectors are checked
against HF transformers' base model pooled so and normalized
(tests/data/models/embeddings_reference.json, from tools/reference/embeddings.py). More inputs
than the server's slots and queue hold go through in turns; bad requests get a 400 in OpenAI's
shape naming the field, and the server stays healthy."""
import base64
import json
import os
import shutil
import sys
import tempfile
import unittest

import numpy as np
import openai

sys.path.insert(0, os.path.dirname(__file__))
from server_process import ServedModelTest  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "models")
TOLERANCE = 1e-5


def sentence_transformers_model(directory):
    """The tiny Qwen 3 with modules.json and a Pooling module set to the last token."""
    source = os.path.join(DATA, "qwen3")
    for name in os.listdir(source):
        shutil.copy(os.path.join(source, name), directory)
    with open(os.path.join(directory, "modules.json"), "w") as f:
        json.dump([{"idx": 0, "name": "0", "path": "",
                    "type": "sentence_transformers.models.Transformer"},
                   {"idx": 1, "name": "1", "path": "1_Pooling",
                    "type": "sentence_transformers.models.Pooling"}], f)
    os.makedirs(os.path.join(directory, "1_Pooling"))
    with open(os.path.join(directory, "1_Pooling", "config.json"), "w") as f:
        json.dump({"word_embedding_dimension": 64, "pooling_mode_mean_tokens": False,
                   "pooling_mode_lasttoken": True}, f)


class EmbeddingsTest(ServedModelTest):
    @classmethod
    def setUpClass(cls):
        with open(os.path.join(DATA, "embeddings_reference.json")) as f:
            models = json.load(f)["models"]
        cls.reference = next(m for m in models if m["model"] == "qwen3")["prompts"]
        cls.directory = tempfile.mkdtemp()
        sentence_transformers_model(cls.directory)
        # Two slots and room for two waiting: a request of more inputs goes through in turns.
        cls.server_args = ("-m", cls.directory, "--parallel", "2", "--queue", "2", "--context",
                           "256")
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.directory, ignore_errors=True)
        super().tearDownClass()

    def assert_close(self, got, want, label=""):
        got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
        self.assertEqual(got.shape, want.shape, label)
        self.assertLessEqual(float(np.abs(got - want).max()), TOLERANCE, label)

    def post(self, body):
        return self.server.request("POST", "/v1/embeddings", body,
                                   {"Content-Type": "application/json"})

    def test_token_id_inputs_equal_hf_last_token_pooling(self):
        inputs = [prompt["ids"] for prompt in self.reference]  # 5, 17, 70, 150 tokens
        for encoding in ("float", "base64"):
            reply = self.client.embeddings.create(model=self.model, input=inputs,
                                                  encoding_format=encoding)
            self.assertEqual([d.index for d in reply.data], list(range(len(inputs))))
            for prompt, data in zip(self.reference, reply.data):
                vector = data.embedding
                if encoding == "base64":  # asked for, the client hands the text back as is
                    vector = np.frombuffer(base64.b64decode(vector), dtype="<f4")
                self.assert_close(vector, prompt["last"], f"{encoding} {len(prompt['ids'])}")
            self.assertEqual(reply.usage.prompt_tokens, sum(len(i) for i in inputs))
            self.assertEqual(reply.usage.total_tokens, reply.usage.prompt_tokens)
        # Without encoding_format the client asks for base64 and decodes it to floats.
        default = self.client.embeddings.create(model=self.model, input=inputs[0])
        self.assert_close(default.data[0].embedding, self.reference[0]["last"])

    def test_dimensions_keep_the_first_values_renormalized(self):
        prompt = self.reference[1]
        reply = self.client.embeddings.create(model=self.model, input=prompt["ids"],
                                              dimensions=16, encoding_format="float")
        head = np.asarray(prompt["last"][:16])
        self.assert_close(reply.data[0].embedding, head / np.linalg.norm(head))

    def test_text_inputs_embed_their_tokens_with_special_tokens(self):
        texts = ["Ünïcödé 😀 and 日本語 text", "hello world", "Ünïcödé 😀 and 日本語 text"]
        reply = self.client.embeddings.create(model=self.model, input=texts,
                                              encoding_format="float")
        for text, data in zip(texts, reply.data):
            status, tokens = self.server.request("POST", "/tokenize",
                                                 {"content": text, "add_special": True})
            self.assertEqual(status, 200)
            by_ids = self.client.embeddings.create(model=self.model, input=tokens["tokens"],
                                                   encoding_format="float")
            self.assertEqual(data.embedding, by_ids.data[0].embedding, text)
            self.assertAlmostEqual(float(np.linalg.norm(data.embedding)), 1.0, places=5)
        self.assertEqual(reply.data[0].embedding, reply.data[2].embedding)
        self.assertNotEqual(reply.data[0].embedding, reply.data[1].embedding)

    def test_more_inputs_than_slots_and_queue_go_through_in_turns(self):
        inputs = [prompt["ids"] for prompt in self.reference] * 5  # 20 > 2 slots + 2 waiting
        reply = self.client.embeddings.create(model=self.model, input=inputs,
                                              encoding_format="float")
        self.assertEqual(len(reply.data), 20)
        for i, data in enumerate(reply.data):
            self.assertEqual(data.index, i)
            self.assert_close(data.embedding, self.reference[i % 4]["last"], f"input {i}")

    def test_bad_requests_get_a_400_naming_the_field(self):
        cases = [
            ({"model": self.model}, "input"),
            ({"model": self.model, "input": ""}, "input"),
            ({"model": self.model, "input": []}, "input"),
            ({"model": self.model, "input": [[]]}, "input"),
            ({"model": self.model, "input": ["ok", ""]}, "input"),
            ({"model": self.model, "input": ["ok", 3]}, "input"),
            ({"model": self.model, "input": [1, "two"]}, "input"),
            ({"model": self.model, "input": {"text": "x"}}, "input"),
            ({"model": self.model, "input": [-1]}, "input"),
            ({"model": self.model, "input": [1000000]}, "input"),
            ({"model": self.model, "input": [1] * 300}, "input"),  # past the 256 positions
            ({"model": self.model, "input": ["x"] * 2049}, "input"),
            ({"model": self.model, "input": "x", "encoding_format": "int8"}, "encoding_format"),
            ({"model": self.model, "input": "x", "dimensions": 0}, "dimensions"),
            ({"model": self.model, "input": "x", "dimensions": 65}, "dimensions"),
            ({"model": self.model, "input": "x", "dimensions": "8"}, "dimensions"),
            ({"model": self.model, "input": "x", "user": 5}, "user"),
            ({"input": "x"}, "model"),
        ]
        for body, field in cases:
            status, reply = self.post(body)
            self.assertEqual(status, 400, (body, reply))
            self.assertEqual(reply["error"]["param"], field, (body, reply))
            self.assertEqual(reply["error"]["type"], "invalid_request_error")
        status, reply = self.post({"model": "other", "input": "x"})
        self.assertEqual(status, 404, reply)
        status, reply = self.post("{not json")
        self.assertEqual(status, 400, reply)
        with self.assertRaises(openai.BadRequestError):
            self.client.embeddings.create(model=self.model, input="")
        status, _ = self.server.request("GET", "/health")
        self.assertEqual(status, 200)
        reply = self.client.embeddings.create(model=self.model, input=self.reference[0]["ids"])
        self.assert_close(reply.data[0].embedding, self.reference[0]["last"])

    def test_embeddings_and_generation_share_the_server(self):
        # A chat while embeddings run: both answered; the metrics count the embeddings' prompts.
        before = self.server.metrics()
        chat = self.client.chat.completions.create(
            model=self.model, messages=[{"role": "user", "content": "Hi"}], max_tokens=4,
            temperature=0)
        self.assertTrue(chat.choices[0].message.content is not None)
        self.client.embeddings.create(model=self.model, input=self.reference[2]["ids"])
        after = self.server.metrics()
        key = "xlacel_prompt_tokens_total"
        self.assertGreaterEqual(after[key] - before[key], 70)


if __name__ == "__main__":
    unittest.main(verbosity=2)
