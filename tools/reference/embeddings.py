"""Reference embeddings for POST /v1/embeddings and the embed graph, from HF transformers
(float32, CPU, eager attention): each model's base model (AutoModel: the decoder without its
head) run on the id-list prompts of its tests/data/models/<model>/reference.json, its
last_hidden_state (after the final norm) pooled three ways as sentence-transformers pools it
(mean of every token's row, the first token's row, the last token's row) and normalized to unit
length (torch.nn.functional.normalize).

Also the default model, SmolLM2-135M-Instruct Q4_1 (a real GGUF and vocabulary: transformers
dequantizes its blocks to the float32 values xlacel computes with), on two texts encoded with its
special tokens.

Writes tests/data/models/embeddings_reference.json:
  {"models": [{"model", "hidden_size", "prompts": [{"ids", "mean", "cls", "last"}]}]}
("model": a folder of tests/data/models, or "default" for the default model)
The models cover a full cache (Qwen 3), Gemma's scaled embeddings, (1 + w) norms and sliding
layers (Gemma 2), short convolutions (LFM2) and Mamba-2 state (Granite 4.0-H): every kind of
layer a prompt's hidden states pass through. (No head runs, so the vocabulary's size does not
matter here.)
Run: .venv/bin/python tools/reference/embeddings.py (scripts/setup --reference)
"""
import json
import pathlib

import torch
from transformers import AutoModel, AutoTokenizer

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "data" / "models"
OUT = MODELS / "embeddings_reference.json"
NAMES = ["qwen3", "gemma2", "lfm2", "granitemoehybrid"]
DEFAULT_MODEL = pathlib.Path.home() / ".cache" / "xlacel" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_TEXTS = ["The capital of France is Paris.",
                 "Ünïcödé 😀 日本語 and a longer text: " + "the quick brown fox jumps. " * 20]
PROMPTS = 4  # the id-list prompts: 5, 17, 70 and 150 tokens


def unit(vector):
    return torch.nn.functional.normalize(vector, dim=0).tolist()


def pooled(model, ids):
    with torch.no_grad():
        hidden = model(input_ids=torch.tensor([ids])).last_hidden_state[0]
    return {"ids": ids, "mean": unit(hidden.mean(dim=0)), "cls": unit(hidden[0]),
            "last": unit(hidden[-1])}


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    records = []
    for name in NAMES:
        directory = MODELS / name
        model = AutoModel.from_pretrained(directory, dtype=torch.float32,
                                          attn_implementation="eager").eval()
        reference = json.loads((directory / "reference.json").read_text())
        prompts = []
        for prompt in reference["prompts"][:PROMPTS]:
            prompts.append(pooled(model, prompt["prompt_ids"]))
        records.append({"model": name, "hidden_size": model.config.hidden_size,
                        "prompts": prompts})
        print(f"{name}: {len(prompts)} prompts")
    tokenizer = AutoTokenizer.from_pretrained(DEFAULT_MODEL.parent, gguf_file=DEFAULT_MODEL.name)
    model = AutoModel.from_pretrained(DEFAULT_MODEL.parent, gguf_file=DEFAULT_MODEL.name,
                                      dtype=torch.float32, attn_implementation="eager").eval()
    records.append({"model": "default", "hidden_size": model.config.hidden_size,
                    "prompts": [pooled(model, tokenizer(text)["input_ids"])
                                for text in DEFAULT_TEXTS]})
    OUT.write_text(json.dumps({"models": records}) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
