"""LangChain (langchain-openai) as a real client of `xlacel serve`: starts the server with the
default model (--parallel 2 --context 2048) and checks chat invoke, stream (joins to the invoke
answer), batch (each equals its invoke answer), forced tool calls and the tool result round
trip, structured output (json_schema), embeddings (unit norm, query equals document) and the
Responses API. One PASS/FAIL line per check; exits non-zero if any failed. Not run in CI: it
needs langchain-openai in some venv, e.g.

  python3 -m venv /tmp/lcvenv && /tmp/lcvenv/bin/pip install langchain-openai numpy
  /tmp/lcvenv/bin/python tools/clients/langchain_check.py
"""
import os
import sys

import numpy as np
import openai
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI, OpenAIEmbeddings
from pydantic import BaseModel

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../tests/server"))
from server_process import ServerProcess, xlacel_path  # noqa: E402

PROMPT = "What is the capital of France?"
BATCH_PROMPTS = ["What is the capital of France?", "Name a primary color.",
                 "What is 2 plus 2?"]


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return f"It is sunny and 22 degrees in {city}."


class Person(BaseModel):
    name: str
    age: int


def check_invoke(llm):
    content = llm.invoke(PROMPT).content
    assert content, "empty content"
    return repr(content)


def check_stream(llm):
    chunks = [chunk.content for chunk in llm.stream(PROMPT)]
    expected = llm.invoke(PROMPT).content
    assert len(chunks) > 1, f"{len(chunks)} chunk(s)"
    assert "".join(chunks) == expected, f"stream {''.join(chunks)!r} != invoke {expected!r}"
    return f"{len(chunks)} chunks join to the invoke answer"


def check_batch(llm):
    answers = [message.content for message in llm.batch(BATCH_PROMPTS)]
    assert len(answers) == 3 and all(answers), f"answers {answers!r}"
    for prompt, answer in zip(BATCH_PROMPTS, answers):
        expected = llm.invoke(prompt).content
        assert answer == expected, f"{prompt!r}: batch {answer!r} != invoke {expected!r}"
    return "3 answers, each equal to its invoke answer"


def check_tools(llm):
    question = HumanMessage("What is the weather in Paris?")
    ai = llm.bind_tools([get_weather], tool_choice="get_weather").invoke([question])
    assert ai.tool_calls, f"no tool_calls: {ai!r}"
    call = ai.tool_calls[0]
    assert call["name"] == "get_weather" and "city" in call["args"], f"tool call {call!r}"
    result = ToolMessage(get_weather.invoke(call["args"]), tool_call_id=call["id"])
    final = llm.bind_tools([get_weather]).invoke([question, ai, result])
    return (f"called get_weather({call['args']}); after the result, content {final.content!r}"
            f" and {len(final.tool_calls)} tool call(s)")


def check_structured(llm):
    person = llm.with_structured_output(Person, method="json_schema").invoke(
        "Make up a person: give a name and an age.")
    assert isinstance(person, Person), f"got {person!r}"
    assert isinstance(person.name, str) and isinstance(person.age, int), f"got {person!r}"
    return repr(person)


def check_embeddings(llm):
    embeddings = OpenAIEmbeddings(base_url=llm.openai_api_base, api_key="unused",
                                  model=llm.model_name, check_embedding_ctx_length=False)
    vectors = np.array(embeddings.embed_documents(["hello", "Ünïcödé 😀"]))
    assert vectors.shape == (2, 576), f"shape {vectors.shape}"
    norms = np.linalg.norm(vectors, axis=1)
    assert np.allclose(norms, 1, atol=1e-4), f"norms {norms}"
    query = np.array(embeddings.embed_query("hello"))
    document = np.array(embeddings.embed_documents(["hello"])[0])
    difference = np.abs(query - document).max()
    assert difference <= 1e-6, f"embed_query differs from embed_documents by {difference}"
    return f"2 x {vectors.shape[1]}, norms {norms.round(6).tolist()}, query == document"


def check_responses(llm):
    responses = ChatOpenAI(base_url=llm.openai_api_base, api_key="unused", model=llm.model_name,
                           temperature=0, max_tokens=32, use_responses_api=True)
    text = responses.invoke("Say hello").text
    assert text, "empty text"
    return repr(text)


CHECKS = [("invoke", check_invoke), ("stream", check_stream), ("batch", check_batch),
          ("tools", check_tools), ("structured output", check_structured),
          ("embeddings", check_embeddings), ("responses API", check_responses)]


def main():
    server = ServerProcess(xlacel_path(), "--parallel", "2", "--context", "2048")
    try:
        model = openai.OpenAI(base_url=server.base_url, api_key="unused").models.list().data[0].id
        llm = ChatOpenAI(base_url=server.base_url, api_key="unused", model=model, temperature=0,
                         max_tokens=32)
        failed = 0
        for name, check in CHECKS:
            try:
                print(f"PASS {name}: {check(llm)}", flush=True)
            except Exception as error:  # noqa: BLE001 - any failure is this check's FAIL line
                failed += 1
                print(f"FAIL {name}: {type(error).__name__}: {error}", flush=True)
        print(f"{len(CHECKS) - failed} passed, {failed} failed")
    finally:
        server.stop()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
