"""The tiny vision-language models (tools/reference/vision.py) as llama.cpp's converter writes them
for llama.cpp: a text GGUF and an mmproj GGUF (`convert_hf_to_gguf.py` and `--mmproj`), so that
xlacel's route through that pair is checked against the same HF references as the HF directory.

    .venv/bin/python tools/reference/converted_vlm.py [NAME...]

For each NAME (idefics3_tiny, gemma3_vision_tiny; default both) the pinned llama.cpp's
convert_hf_to_gguf.py (from the llama-cpp-python sdist that tools/peer/build_llama_cpp unpacks, or
LLAMA_CPP=DIR) converts a scratch copy of tests/data/models/NAME into
tests/data/models/converted/NAME.gguf (F32) and NAME.mmproj.gguf (F32 but for what the converter
forces: Gemma 3's mm.input_projection is F16).

The tiny directories lack what the converter needs and a published checkpoint has; the copy gets:
  tokenizer.json, tokenizer_config.json  a byte-level BPE vocabulary of the config's 300 tokens with
      the family's special tokens, its image tokens at the ids the config names (Idefics3 / SmolVLM:
      <fake_token_around_image>, <global-img>, <image> last, and <row_i_col_j> for i, j in 1..6;
      Gemma 3: <start_of_image>, <end_of_image>, <image_soft_token> last) and one merge (GGUF
      loaders require the key);
  preprocessor_config.json  the family's published image processor settings scaled to the tiny
      tower's 32 x 32 images (image_mean / image_std 0.5; Gemma 3's image_seq_length 16, from
      which the converter derives the pooling it writes as clip.vision.projector.scale_factor);
  config.json  Idefics3 / SmolVLM: text_config.architectures ["VLlama3ForCausalLM"], as SmolVLM's
      config.json has it (the converter picks the text model's class by it).
As in converted_gguf.py, the BPE pre-tokenizer is named (the converter knows tokenizers only by a
hash of their output). Every tensor, and every other key, is as the converter writes it.
"""
import json
import os
import pathlib
import shutil
import sys
import tempfile

from tokenizers import AddedToken, Tokenizer, decoders, pre_tokenizers, processors
from tokenizers.models import BPE

from family_text import byte_characters

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "data" / "models"
OUT = MODELS / "converted"
CACHE = pathlib.Path(os.environ.get("XLACEL_CACHE", pathlib.Path.home() / ".cache" / "xlacel"))
LLAMA_CPP = pathlib.Path(os.environ.get(
    "LLAMA_CPP", CACHE / "peer" / "llama_cpp_python-0.3.36" / "vendor" / "llama.cpp"))
MERGE = ("\u0120", "t")
SMOLVLM_GRID = [f"<row_{i}_col_{j}>" for i in range(1, 7) for j in range(1, 7)]


def _model(first, grid, image, special, pre, preprocessor, text_arch=None):
    return dict(first=first, grid=grid, image=image, special=special, pre=pre, preprocessor=preprocessor,
                text_arch=text_arch)


# name -> its special tokens: `first` at ids 0.. (pad, bos, eos as the config numbers them), `grid`
# after the bytes, `image` last (the config's image token id is the vocabulary's last).
VLMS = {
    "idefics3_tiny": _model(
        ["<|endoftext|>", "<|im_start|>", "<end_of_utterance>", "<|im_end|>"], SMOLVLM_GRID,
        ["<fake_token_around_image>", "<global-img>", "<image>"],
        dict(bos_token="<|im_start|>", eos_token="<end_of_utterance>", pad_token="<|endoftext|>",
             unk_token="<|endoftext|>"),
        "smollm",
        {"do_convert_rgb": True, "do_image_splitting": True, "do_normalize": True, "do_pad": True,
         "do_rescale": True, "do_resize": True, "image_mean": [0.5, 0.5, 0.5],
         "image_processor_type": "Idefics3ImageProcessor", "image_std": [0.5, 0.5, 0.5],
         "max_image_size": {"longest_edge": 32}, "processor_class": "Idefics3Processor", "resample": 1,
         "rescale_factor": 1 / 255, "size": {"longest_edge": 128}},
        text_arch="VLlama3ForCausalLM"),
    "gemma3_vision_tiny": _model(
        ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<start_of_turn>", "<end_of_turn>"], [],
        ["<start_of_image>", "<end_of_image>", "<image_soft_token>"],
        dict(bos_token="<bos>", eos_token="<eos>", pad_token="<pad>", unk_token="<unk>"),
        "default",
        {"do_convert_rgb": None, "do_normalize": True, "do_pan_and_scan": None, "do_rescale": True,
         "do_resize": True, "image_mean": [0.5, 0.5, 0.5], "image_processor_type": "Gemma3ImageProcessor",
         "image_seq_length": 16, "image_std": [0.5, 0.5, 0.5], "processor_class": "Gemma3Processor",
         "resample": 2, "rescale_factor": 1 / 255, "size": {"height": 32, "width": 32}}),
}


def tokenizer(spec, vocab_size):
    """Byte-level BPE: `first`, the 256 bytes, `grid`, the merge, padding, then `image` at the end."""
    tokens = spec["first"] + byte_characters() + spec["grid"] + ["".join(MERGE)]
    tokens += [f"<unused{i}>" for i in range(vocab_size - len(tokens) - len(spec["image"]))] + spec["image"]
    assert len(tokens) == vocab_size, (len(tokens), vocab_size)
    vocab = {token: index for index, token in enumerate(tokens)}
    tok = Tokenizer(BPE(vocab=vocab, merges=[MERGE], dropout=None, fuse_unk=False))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    special = spec["first"] + spec["grid"] + spec["image"]
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in special])
    added = json.loads(tok.to_str())["added_tokens"]
    config = {"added_tokens_decoder": {str(t.pop("id")): t for t in added}, **spec["special"],
              "clean_up_tokenization_spaces": False, "model_max_length": 2048,
              "tokenizer_class": "PreTrainedTokenizerFast"}
    return tok, config


def scratch_copy(name, directory):
    spec = VLMS[name]
    shutil.copytree(MODELS / name, directory)
    config = json.loads((directory / "config.json").read_text())
    if spec["text_arch"]:
        config["text_config"]["architectures"] = [spec["text_arch"]]
    (directory / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    tok, tokenizer_config = tokenizer(spec, config["text_config"]["vocab_size"])
    (directory / "tokenizer.json").write_text(tok.to_str() + "\n", encoding="utf-8")
    (directory / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=2) + "\n")
    (directory / "preprocessor_config.json").write_text(json.dumps(spec["preprocessor"], indent=2) + "\n")


def convert(convert_hf_to_gguf, directory, out, mmproj):
    sys.argv = ["convert_hf_to_gguf.py", str(directory), "--outtype", "f32", "--outfile", str(out)]
    if mmproj:
        sys.argv.append("--mmproj")
    convert_hf_to_gguf.main()
    out.chmod(0o644)
    print(f"{out.relative_to(ROOT)}: {out.stat().st_size // 1024} KiB")


def main():
    names = sys.argv[1:] or list(VLMS)
    unknown = [n for n in names if n not in VLMS]
    if unknown:
        sys.exit(f"usage: {sys.argv[0]} [NAME...]  (names: {', '.join(VLMS)})")
    if not (LLAMA_CPP / "convert_hf_to_gguf.py").exists():
        sys.exit(f"no llama.cpp sources at {LLAMA_CPP} (run tools/peer/build_llama_cpp, or set LLAMA_CPP)")
    sys.path.insert(0, str(LLAMA_CPP))
    import convert_hf_to_gguf  # noqa: E402  (puts its own gguf-py first on the path)
    from conversion.base import TextModel  # noqa: E402

    OUT.mkdir(parents=True, exist_ok=True)
    for name in names:
        TextModel.get_vocab_base_pre = lambda self, tokenizer, pre=VLMS[name]["pre"]: pre
        with tempfile.TemporaryDirectory() as scratch:
            directory = pathlib.Path(scratch) / name
            scratch_copy(name, directory)
            convert(convert_hf_to_gguf, directory, OUT / f"{name}.gguf", mmproj=False)
            convert(convert_hf_to_gguf, directory, OUT / f"{name}.mmproj.gguf", mmproj=True)


if __name__ == "__main__":
    main()
