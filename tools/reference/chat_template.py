#!/usr/bin/env python3
"""Reference renderings for the chat-template engine (src/chat/).

Renders every template in tests/data/chat/templates/ against the conversations in
tests/data/chat/conversations.json with transformers' own rendering function
(transformers.utils.chat_template_utils.render_jinja_template, which apply_chat_template uses),
and writes tests/data/chat/expected.json.

The C++ side receives its inputs as xlacel::Json (nlohmann::json), which orders object keys
alphabetically, so every input dict is key-sorted here too before rendering.

Run: /work/main/.venv/bin/python tools/reference/chat_template.py
"""
import json
import pathlib
import sys

import datetime

import jinja2
import transformers.utils.chat_template_utils as chat_template_utils
from transformers.utils.chat_template_utils import render_jinja_template

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "chat"

DATE = {"date_string": "26 Jul 2024"}  # Llama 3.x would otherwise print today's date
# strftime_now's day for templates that print it unasked (gpt-oss's "Current date:"); the C++
# test puts this day where its own rendering printed today's.
FIXED_DAY = datetime.datetime(2024, 7, 26, 12, 0, 0)


class FixedDatetime(datetime.datetime):
    @classmethod
    def now(cls, tz=None):
        return FIXED_DAY

# template -> (special tokens, list of extra_context variants, conversations or None for all)
ALL = None
SYNTHETIC_CONVERSATIONS = ["system_user", "multi_turn", "unicode", "special_chars", "tool_calls"]


def templates(tools):
    return {
        "smollm2.jinja": ({"bos_token": "<|im_start|>", "eos_token": "<|im_end|>"}, [{}], ALL),
        "llama-3.2-instruct.jinja": (
            {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
            [DATE, {**DATE, "tools": tools}, {**DATE, "tools": tools, "tools_in_user_message": False}],
            ALL,
        ),
        "qwen2.5-instruct.jinja": (
            {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}, [{}, {"tools": tools}], ALL),
        "qwen3.jinja": (
            {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
            [{}, {"tools": tools}, {"enable_thinking": False}],
            ALL,
        ),
        "mistral-7b-instruct-v0.3.jinja": (
            {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}, [{}, {"tools": tools}], ALL),
        # openai/gpt-oss-120b's harmony template (llama.cpp models/templates/openai-gpt-oss-120b.jinja).
        "gpt-oss.jinja": (
            {"bos_token": "<|startoftext|>", "eos_token": "<|return|>"},
            [{}, {"tools": tools}, {"reasoning_effort": "high", "model_identity": "You are a test."}],
            ALL,
        ),
        "synthetic-whitespace.jinja": ({}, [{}], ["system_user", "multi_turn"]),
        "synthetic-values.jinja": ({}, [{}], ["system_user", "unicode", "special_chars"]),
        "synthetic-expressions.jinja": ({}, [{}], SYNTHETIC_CONVERSATIONS),
        "synthetic-loops.jinja": ({}, [{}], SYNTHETIC_CONVERSATIONS),
        "synthetic-filters.jinja": ({}, [{}], SYNTHETIC_CONVERSATIONS),
        "synthetic-tests.jinja": ({}, [{}, {"tools": tools}], SYNTHETIC_CONVERSATIONS),
        "synthetic-methods.jinja": ({}, [{}], SYNTHETIC_CONVERSATIONS + ["reasoning"]),
        "synthetic-macros.jinja": ({"bos_token": "<s>"}, [{}], ["system_user", "unicode"]),
        "synthetic-raise.jinja": ({}, [{}], ALL),
        "synthetic-errors.jinja": ({}, [{}], ALL),
    }


def sort_keys(value):
    if isinstance(value, dict):
        return {k: sort_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [sort_keys(v) for v in value]
    return value


def main():
    chat_template_utils.datetime = FixedDatetime
    conversations = sort_keys(json.loads((DATA / "conversations.json").read_text()))
    tools = sort_keys(json.loads((DATA / "tools.json").read_text()))
    cases = []
    for name, (special, variants, convs) in templates(tools).items():
        source = (DATA / "templates" / name).read_text()
        for conv_name in convs or list(conversations):
            for extra in variants:
                for agp in (False, True):
                    case = {
                        "template": name,
                        "conversation": conv_name,
                        "add_generation_prompt": agp,
                        "special_tokens": special,
                        "extra_context": extra,
                    }
                    if "strftime_now" in source:
                        case["strftime_day"] = FIXED_DAY.strftime("%Y-%m-%d")
                    kwargs = {**special, **{k: v for k, v in extra.items() if k not in ("tools", "documents")}}
                    try:
                        rendered, _ = render_jinja_template(
                            conversations=[conversations[conv_name]],
                            tools=extra.get("tools"),
                            documents=extra.get("documents"),
                            chat_template=source,
                            add_generation_prompt=agp,
                            **kwargs,
                        )
                        case["expected"] = rendered[0]
                    except jinja2.exceptions.TemplateError as e:
                        # raise_exception raises the base TemplateError; jinja2's own errors are
                        # subclasses (UndefinedError, SecurityError, ...).
                        kind = "raise_exception" if type(e) is jinja2.exceptions.TemplateError else type(e).__name__
                        case["error"] = {"type": kind, "message": str(e)}
                    except Exception as e:  # TypeError etc. from Python operations
                        case["error"] = {"type": type(e).__name__, "message": str(e)}
                    cases.append(case)
    out = DATA / "expected.json"
    # One case per line keeps the file small and its diffs readable.
    lines = ",\n".join(json.dumps(c, ensure_ascii=False) for c in cases)
    out.write_text('{"cases": [\n' + lines + "\n]}\n")
    errors = sum("error" in c for c in cases)
    print(f"wrote {out.relative_to(ROOT)}: {len(cases)} cases ({errors} expected errors)", file=sys.stderr)


if __name__ == "__main__":
    main()
