"""Reference log-probabilities and penalized greedy decoding for the server's sampling surface
(`logprobs`/`top_logprobs`, `frequency_penalty`, `presence_penalty`, `logit_bias`), from HF
transformers on the default model (its GGUF loaded as tools/reference/llama.py loads it, float32,
CPU, one thread, deterministic).

Writes tests/data/session/logprobs_reference.json. Each case has the prompt ids (raw text with
the tokenizer's special tokens, or the chat template rendered with the generation prompt and
encoded without them) and one record per generated step: the greedy id, its bytes, its
log-probability and the TOP (id, bytes, log-probability) best first (ties: lower id). A step's
logits are HF's float32 logits of the last position, adjusted in float32 as OpenAI defines:
logit_bias added, then logit[j] -= c[j] * frequency_penalty + (c[j] > 0) * presence_penalty,
c[j] = how often j was generated so far (not the prompt); log_softmax of those in float64; the
greedy token is torch.argmax (first index on ties). Never stops at EOS.
Run: .venv/bin/python tools/reference/logprobs.py [MODEL.gguf]
"""
import json
import pathlib
import sys

import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer
from transformers.convert_slow_tokenizer import bytes_to_unicode

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "session" / "logprobs_reference.json"
DEFAULT_MODEL = pathlib.Path.home() / ".cache" / "xlacel" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
TOP = 20

# name, raw text or chat messages, steps, frequency_penalty, presence_penalty, logit_bias
CASES = [
    ("raw_capital", "The capital of France is", 8, 0.0, 0.0, {}),
    ("chat_capital", [{"role": "user", "content": "What is the capital of France?"}], 8, 0.0, 0.0, {}),
    ("chat_chinese", [{"role": "user", "content": "请用中文介绍一下长城。"}], 12, 0.0, 0.0, {}),
    ("chat_emoji", [{"role": "user", "content": "Repeat after me: 😀🎉👍🏽🤖"}], 16, 0.0, 0.0, {}),
    ("raw_penalties", "List the days of the week: Monday, Tuesday, Wednesday,", 24, 1.5, 0.5, {}),
    ("raw_negative_penalties", "One, two, three, one, two, three,", 16, -0.75, -0.25, {}),
    ("chat_penalties_and_bias", [{"role": "user", "content": "Name some colors."}], 16, 0.4, 1.2,
     {"30": 3.5, "216": -100.0, "1062": 2.0}),
]


def token_bytes(tok, byte_decoder, token_id):
    piece = tok.convert_ids_to_tokens(token_id)
    if token_id in tok.all_special_ids or piece in tok.get_added_vocab():
        return list(piece.encode("utf-8"))
    return [byte_decoder[ch] for ch in piece]


def run_case(model, tok, byte_decoder, prompt, steps, frequency, presence, bias):
    if isinstance(prompt, str):
        ids = tok(prompt)["input_ids"]
    else:
        text = tok.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False)
        ids = tok(text, add_special_tokens=False)["input_ids"]
    out = model(input_ids=torch.tensor([ids]), use_cache=True)
    counts = {}
    records = []
    for _ in range(steps):
        logits = out.logits[0, -1].to(torch.float32).clone()
        for key, value in bias.items():
            logits[int(key)] += torch.tensor(value, dtype=torch.float32)
        for token, count in counts.items():
            logits[token] -= (torch.tensor(count * frequency, dtype=torch.float32)
                              + torch.tensor(presence, dtype=torch.float32))
        logprobs = torch.log_softmax(logits.to(torch.float64), dim=-1)
        chosen = int(torch.argmax(logits))
        order = sorted(range(logits.shape[0]), key=lambda i: (-float(logits[i]), i))[:TOP]
        records.append({
            "id": chosen,
            "bytes": token_bytes(tok, byte_decoder, chosen),
            "logprob": float(logprobs[chosen]),
            "top": [[i, token_bytes(tok, byte_decoder, i), float(logprobs[i])] for i in order],
        })
        counts[chosen] = counts.get(chosen, 0) + 1
        out = model(input_ids=torch.tensor([[chosen]]), past_key_values=out.past_key_values,
                    use_cache=True)
    return ids, records


def dump(reference):
    """JSON with one line per case field and per step."""
    def compact(value):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    cases = []
    for case in reference["cases"]:
        fields = [f'  {json.dumps(k)}: {compact(v)}' for k, v in case.items() if k != "steps"]
        steps = ",\n".join(f"   {compact(step)}" for step in case["steps"])
        fields.append(f'  "steps": [\n{steps}\n  ]')
        cases.append(" {\n" + ",\n".join(fields) + "\n }")
    head = [f"{json.dumps(k)}: {compact(v)}" for k, v in reference.items() if k != "cases"]
    text = "{\n" + ",\n".join(head) + ',\n"cases": [\n' + ",\n".join(cases) + "\n]}\n"
    assert json.loads(text) == reference
    return text


def main():
    model_path = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_MODEL
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.set_grad_enabled(False)
    directory, name = str(model_path.parent), model_path.name
    tok = AutoTokenizer.from_pretrained(directory, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(directory, gguf_file=name, dtype=torch.float32,
                                                 attn_implementation="eager")
    model.eval()
    byte_decoder = {ch: b for b, ch in bytes_to_unicode().items()}
    cases = []
    for case_name, prompt, steps, frequency, presence, bias in CASES:
        ids, records = run_case(model, tok, byte_decoder, prompt, steps, frequency, presence, bias)
        case = {"name": case_name, "kind": "raw" if isinstance(prompt, str) else "chat"}
        case["text" if isinstance(prompt, str) else "messages"] = prompt
        case.update({"frequency_penalty": frequency, "presence_penalty": presence,
                     "logit_bias": bias, "prompt_ids": ids, "steps": records})
        cases.append(case)
        text = bytes(b for r in records for b in r["bytes"]).decode("utf-8", "replace")
        print(f"  {case_name}: {len(ids)} prompt tokens -> {text!r}")
    reference = {
        "generator": "tools/reference/logprobs.py",
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "model": name,
        "top": TOP,
        "cases": cases,
    }
    OUT.write_text(dump(reference), encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
