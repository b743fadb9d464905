"""GGUF files of the tiny family models written by llama.cpp's own converter, so that xlacel's
GGUF route of a family is checked against the same HF reference as its HF directory.

    .venv/bin/python tools/reference/converted_gguf.py NAME...

For each NAME (a tiny model directory, tools/reference/families.py), the pinned llama.cpp's convert_hf_to_gguf.py (from the llama-cpp-python sdist
that tools/peer/build_llama_cpp unpacks, or LLAMA_CPP=DIR) converts tests/data/models/NAME into
tests/data/models/converted/NAME.gguf (F32). One thing is not the converter's own: it names a BPE
pre-tokenizer only for tokenizers it knows by a hash of their output, which the tiny models'
byte tokenizers are not, so the family's published pre-tokenizer name is given instead
(PRE_TOKENIZER). Every tensor, and every other key, is as the converter writes it.
"""
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "models" / "converted"
CACHE = pathlib.Path(os.environ.get("XLACEL_CACHE", pathlib.Path.home() / ".cache" / "xlacel"))
LLAMA_CPP = pathlib.Path(os.environ.get(
    "LLAMA_CPP", CACHE / "peer" / "llama_cpp_python-0.3.36" / "vendor" / "llama.cpp"))

# tests/data/models directory -> tokenizer.ggml.pre of the published checkpoints' GGUFs.
PRE_TOKENIZER = {"smollm3": "llama-bpe", "phi3_longrope": "gpt-4o", "lfm2": "lfm2", "qwen3_yarn": "qwen2", "gpt_oss": "gpt-4o",
                 "granitemoehybrid": "dbrx"}


def main():
    types = sys.argv[1:]
    unknown = [t for t in types if t not in PRE_TOKENIZER]
    if not types or unknown:
        sys.exit(f"usage: {sys.argv[0]} TYPE...  (types: {', '.join(PRE_TOKENIZER)})")
    if not (LLAMA_CPP / "convert_hf_to_gguf.py").exists():
        sys.exit(f"no llama.cpp sources at {LLAMA_CPP} (run tools/peer/build_llama_cpp, or set LLAMA_CPP)")
    sys.path.insert(0, str(LLAMA_CPP))
    import convert_hf_to_gguf  # noqa: E402  (puts its own gguf-py first on the path)
    from conversion.base import TextModel  # noqa: E402

    OUT.mkdir(parents=True, exist_ok=True)
    for model_type in types:
        TextModel.get_vocab_base_pre = lambda self, tokenizer, pre=PRE_TOKENIZER[model_type]: pre
        out = OUT / f"{model_type}.gguf"
        sys.argv = ["convert_hf_to_gguf.py", str(ROOT / "tests" / "data" / "models" / model_type),
                    "--outtype", "f32", "--outfile", str(out)]
        convert_hf_to_gguf.main()
        out.chmod(0o644)
        print(f"{model_type}: {out.stat().st_size // 1024} KiB in {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
