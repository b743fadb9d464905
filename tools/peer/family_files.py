"""GGUF files of a family's real shape with random weights, made as a new user makes them, for
measuring speed against llama.cpp on the same files (tools/peer/compare_bench.py --model FILE).

    .venv/bin/python tools/peer/family_files.py CONFIG [--formats Q4_0,Q4_K_M] [--layers N] [--seed 0]

CONFIG is a published config.json (tests/data/models/real_size/*.json). transformers builds the
model from it with its own initialisation (seeded, N(0, initializer_range)) and saves it in
bf16 with SmolLM2's tokenizer (every id below the vocabulary; the converter pads the rest); the
pinned llama.cpp's convert_hf_to_gguf.py writes a BF16 GGUF of it and its llama-quantize the
other formats (tools/peer/build_llama_cpp). Files are cached in
~/.cache/xlacel/bench-families/<config name>/; the paths of the GGUFs are printed, one per line.
Only the shapes matter for speed, so no checkpoint is needed. --layers keeps the first N layers
(layer_types cut to match): a model too large for the machine, measured per layer.
"""
import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv" / "bin" / "python"
TOKENIZER = ROOT / "tests" / "data" / "tokenizer" / "smollm2_tokenizer.json"
CACHE = pathlib.Path(os.environ.get("XLACEL_CACHE", pathlib.Path.home() / ".cache" / "xlacel"))


def run(command, **kwargs):
    print("+", " ".join(str(c) for c in command), file=sys.stderr, flush=True)
    subprocess.run([str(c) for c in command], check=True, **kwargs)


def random_hf_directory(config_path, out, seed, layers=None):
    """The published config's model with transformers' own random initialisation, in bf16."""
    if (out / "model.safetensors").exists() or (out / "model.safetensors.index.json").exists():
        return
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    out.mkdir(parents=True, exist_ok=True)
    config_json = json.loads(pathlib.Path(config_path).read_text())
    config_json.pop("quantization_config", None)  # the random weights are bf16
    if layers is not None:
        config_json["num_hidden_layers"] = layers
        if isinstance(config_json.get("layer_types"), list):
            config_json["layer_types"] = config_json["layer_types"][:layers]
    (out / "config.json").write_text(json.dumps(config_json, indent=1) + "\n")
    config = AutoConfig.from_pretrained(str(out))
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    model.save_pretrained(str(out) + ".part", safe_serialization=True)
    for f in (out.parent / (out.name + ".part")).iterdir():
        shutil.move(str(f), out / f.name)
    (out.parent / (out.name + ".part")).rmdir()
    if isinstance(config_json.get("layer_types"), list):
        # transformers saves its own layer type names (Granite 4.0-H's "mamba" as
        # "linear_attention"); the converter reads the published ones.
        saved = json.loads((out / "config.json").read_text())
        saved["layer_types"] = config_json["layer_types"]
        (out / "config.json").write_text(json.dumps(saved, indent=1) + "\n")
    shutil.copy(TOKENIZER, out / "tokenizer.json")
    (out / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<|im_start|>",
         "eos_token": "<|im_end|>"}, indent=2) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config")
    parser.add_argument("--formats", default="Q4_0,Q4_K_M")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--layers", type=int)
    args = parser.parse_args()
    config = pathlib.Path(args.config)
    name = config.stem + (f"-{args.layers}l" if args.layers else "")
    cache = CACHE / "bench-families" / name
    hf = cache / "hf"
    random_hf_directory(config, hf, args.seed, args.layers)
    bin_dir = pathlib.Path(subprocess.run([ROOT / "tools" / "peer" / "build_llama_cpp"], check=True,
                                          capture_output=True, text=True).stdout.strip())
    llama_cpp = bin_dir.parent.parent / "vendor" / "llama.cpp"
    bf16 = cache / f"{name}-BF16.gguf"
    if not bf16.exists():
        run([PYTHON, llama_cpp / "convert_hf_to_gguf.py", hf, "--outtype", "bf16", "--outfile",
             str(bf16) + ".part"])
        os.replace(str(bf16) + ".part", bf16)
    for quant in args.formats.split(","):
        path = cache / f"{name}-{quant}.gguf"
        if quant != "BF16" and not path.exists():
            run([bin_dir / "llama-quantize", bf16, str(path) + ".part", quant],
                stdout=subprocess.DEVNULL)
            os.replace(str(path) + ".part", path)
        print(path)


if __name__ == "__main__":
    main()
