#!/usr/bin/env python3
"""transformers' greedy tokens on a GGUF file of tools/gpu/make_random_llama.py's model: one JSON
line per prompt, {"prompt_ids": [...], "output_ids": [...]}.

    tools/gpu/hf_gguf_greedy.py HF_DIR FILE.gguf [--tokens 16] [--prompts JSON]

The oracle for xlacel on such a file (tools/peer/bench_1b.py, scripts/gpu-check). transformers
reads the GGUF through gguf-py (on PYTHONPATH) and dequantizes it to float32 on the CPU; it is
given the config of the HF directory the file was made from, since its GGUF loader drops Llama
3's RoPE frequency factors (rope_freqs.weight), which xlacel applies.
"""
import argparse
import json
import os

import torch
import transformers

PROMPTS = [[128000, 791, 6864, 315, 9822, 374], [128000, 40, 1093, 311, 1373, 922, 279, 1917, 25]]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("hf")
    parser.add_argument("gguf")
    parser.add_argument("--tokens", type=int, default=16)
    parser.add_argument("--prompts", default=json.dumps(PROMPTS), help="JSON list of id lists")
    args = parser.parse_args()
    config = transformers.AutoConfig.from_pretrained(args.hf)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        os.path.dirname(os.path.abspath(args.gguf)), gguf_file=os.path.basename(args.gguf),
        config=config, dtype=torch.float32)
    for ids in json.loads(args.prompts):
        out = model.generate(torch.tensor([ids]), max_new_tokens=args.tokens,
                             min_new_tokens=args.tokens, do_sample=False)
        print(json.dumps({"prompt_ids": ids, "output_ids": out[0, len(ids):].tolist()}), flush=True)


if __name__ == "__main__":
    main()
