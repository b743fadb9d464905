"""Tiny random-weight vision-language models and their image features, from HF `transformers`
(float32, CPU, eager attention): the reference for the vision towers (src/models/vision_tower.h).

Writes (checked in, small, deterministic):
  tests/data/models/idefics3_tiny/        Idefics3ForConditionalGeneration (SmolVLM's classes):
                                          SigLIP-style encoder, pixel shuffle (scale 4), linear
                                          projection; text: a tiny Llama
  tests/data/models/gemma3_vision_tiny/   Gemma3ForConditionalGeneration: SiglipVisionModel,
                                          average pool to mm_tokens_per_image, (1 + w) RMSNorm,
                                          projection; text: a tiny gemma3_text
each with config.json, model.safetensors (F32, the tensor names of the published checkpoints:
Gemma 3's vision tower under vision_tower.vision_model.*, as transformers 5 still loads them) and
vision_reference.json:

  {"generator", "transformers_version", "torch_version", "model", "model_class",
   "init", "image_token_id", "tokens_per_image", "text_hidden_size",
   "images": {"shape": [2, C, H, W], "pixel_values": [... row-major ...],
              "how": "..."},
   "image_features": {"shape": [2, tokens_per_image, text_hidden], "values": [...],
                      "how": "model.model.get_image_features(...).pooler_output"},
   "generation": [{"name", "image": index into images, "prompt_ids": [...],
                   "token_type_ids": [...] or null, "output_ids": [16 greedy ids]}, ...],
   ... family notes}

The idefics3 file also holds "bucketized_position_ids": Idefics3VisionEmbeddings' position ids of
a full (unpadded) image of n x n patches for n = 1..MAX_GRID wherever they are not 0..n*n - 1
(torch.arange's float32 boundaries and bucketize put a few patches in the previous bucket).

Usage: .venv/bin/python tools/reference/vision.py
"""
import json
import pathlib
import shutil
import sys

import numpy as np
import safetensors.torch
import torch
import transformers
from transformers import (Gemma3Config, Gemma3ForConditionalGeneration, Idefics3Config,
                          Idefics3ForConditionalGeneration)

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "models"
INIT_SEED = 0
PIXEL_SEED = 4321
PROMPT_SEED = 1234
INITIALIZER_RANGE = 0.2
IMAGES = 2
N_NEW = 16
MAX_GRID = 70
VOCAB = 300
ATTN = "eager"

# Both towers: 32 x 32 images of 4 x 4 patches (an 8 x 8 grid), 2 layers of width 32.
VISION = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=2,
              num_channels=3, image_size=32, patch_size=4, layer_norm_eps=1e-6,
              hidden_act="gelu_pytorch_tanh")
TEXT = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, head_dim=16, max_position_embeddings=512, vocab_size=VOCAB,
            rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2, pad_token_id=0,
            initializer_range=INITIALIZER_RANGE)


def idefics3_config():
    return Idefics3Config(
        vision_config=dict(VISION, initializer_range=INITIALIZER_RANGE),
        text_config=dict(TEXT, model_type="llama", tie_word_embeddings=False),
        scale_factor=4,  # SmolVLM's (Idefics3's default is 2): 8 x 8 patches -> 2 x 2 tokens
        image_token_id=VOCAB - 1,
        tie_word_embeddings=False,
        initializer_range=INITIALIZER_RANGE)


def gemma3_config():
    text = dict(TEXT, model_type="gemma3_text", bos_token_id=2, eos_token_id=1, hidden_activation="gelu_pytorch_tanh",
                query_pre_attn_scalar=24, sliding_window=24, layer_types=["sliding_attention", "full_attention"],
                tie_word_embeddings=False)
    del text["rms_norm_eps"]
    return Gemma3Config(
        vision_config=dict(VISION, model_type="siglip_vision_model", vision_use_head=False),
        text_config=text,
        mm_tokens_per_image=16,  # 8 x 8 patches pooled 2 x 2
        boi_token_index=VOCAB - 3, eoi_token_index=VOCAB - 2, image_token_index=VOCAB - 1,
        tie_word_embeddings=False,
        initializer_range=INITIALIZER_RANGE)


def randomise(model, zero_based_norms, is_norm=lambda name: False):
    """Every tensor seeded: matrices normal(0, INITIALIZER_RANGE), biases 0.25*randn, LayerNorm and
    RMSNorm weights (and those is_norm names) 1 + 0.25*randn, or 0.25*randn for norms computed as
    (1 + w)."""
    g = torch.Generator().manual_seed(INIT_SEED + 1)
    rules = {}
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight") or name.endswith("layernorm.weight") or "layer_norm" in name \
                    or name.endswith("soft_emb_norm.weight") or is_norm(name):
                if name.endswith(".bias"):
                    p.copy_(0.25 * torch.randn(p.shape, generator=g))
                    rules[name] = "bias"
                    continue
                zero = any(name.startswith(prefix) for prefix in zero_based_norms)
                p.copy_((0.0 if zero else 1.0) + 0.25 * torch.randn(p.shape, generator=g))
                rules[name] = "norm_zero" if zero else "norm_one"
            elif name.endswith(".bias"):
                p.copy_(0.25 * torch.randn(p.shape, generator=g))
                rules[name] = "bias"
            else:
                p.copy_(INITIALIZER_RANGE * torch.randn(p.shape, generator=g))
                rules[name] = "matrix"
    return rules


def pixel_values(shape):
    """Values k / 64 in [-1, 1]: exact in f32 and short in JSON."""
    rng = np.random.default_rng(PIXEL_SEED)
    return torch.tensor(rng.integers(-64, 65, size=shape).astype(np.float32) / 64.0)


def save(model, directory, rename):
    if directory.exists():
        shutil.rmtree(directory)
    model.save_pretrained(directory, safe_serialization=True)
    path = directory / "model.safetensors"
    tensors = safetensors.torch.load_file(path)
    renamed = {rename(k): v.contiguous() for k, v in tensors.items()}
    safetensors.torch.save_file(renamed, path, metadata={"format": "pt"})
    for f in directory.iterdir():
        f.chmod(0o644)
    return sorted(renamed)


def features(model, pixels, idefics3):
    with torch.no_grad():
        if idefics3:
            out = model.model.get_image_features(pixels[None])  # [1 batch, images, C, H, W]
            pooled = out.pooler_output  # one [images * tokens, hidden] per batch entry
            return pooled[0].reshape(pixels.shape[0], -1, pooled[0].shape[-1])
        return model.model.get_image_features(pixels).pooler_output


def greedy(model, ids, pixels, token_type_ids=None):
    kwargs = dict(do_sample=False, max_new_tokens=N_NEW, min_new_tokens=N_NEW)
    if token_type_ids is not None:
        kwargs["token_type_ids"] = torch.tensor([token_type_ids])
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]), pixel_values=pixels, **kwargs)
    return [int(x) for x in out[0, len(ids):]]


def prompt(rng, image_ids):
    """Seeded text ids (3 .. VOCAB - 4: no special or image token) around the image's tokens."""
    before = [int(x) for x in rng.integers(3, VOCAB - 3, 5)]
    after = [int(x) for x in rng.integers(3, VOCAB - 3, 4)]
    return before, image_ids, after


def bucketized_position_ids():
    """Idefics3VisionEmbeddings.forward's position ids for a full image of n x n patches, its
    arithmetic as written there (one row: h and w agree)."""
    table = {}
    for n in range(1, MAX_GRID + 1):
        boundaries = torch.arange(1 / n, 1.0, 1 / n)
        nb = torch.ones((1, n), dtype=torch.bool).sum(dim=1)
        step = 1.0 / nb
        coords = torch.arange(n, dtype=torch.float32)[None, :] * step[:, None]
        coords = torch.clamp(coords, max=(1.0 - 1e-6))
        buckets = torch.bucketize(coords, boundaries, right=True)[0]
        ids = (buckets[:, None] * n + buckets[None, :]).reshape(-1)
        if not torch.equal(ids, torch.arange(n * n)):
            table[str(n)] = [int(x) for x in ids]
    return table


def provenance(generator, name, model, norms):
    """The reference's first keys: what wrote it, with which versions, the model and its init."""
    return {
        "generator": generator,
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "model": name,
        "model_class": type(model).__name__,
        "loader": f"{type(model).__name__}.from_pretrained(tests/data/models/{name}, dtype=torch.float32, "
                  f"attn_implementation={ATTN!r})",
        "init": f"torch.manual_seed({INIT_SEED}); every parameter from torch.Generator seed {INIT_SEED + 1} in "
                f"named_parameters order: matrices {INITIALIZER_RANGE}*randn, biases 0.25*randn, norm weights "
                + norms,
    }


def dump(path, data):
    path.write_text(json.dumps(data, separators=(",", ":")) + "\n")


def build(name, config, model_class, zero_based_norms, rename, idefics3):
    directory = OUT / name
    torch.manual_seed(INIT_SEED)
    built = model_class(config).eval()
    rules = randomise(built, zero_based_norms)
    names = save(built, directory, rename)
    model = model_class.from_pretrained(str(directory), dtype=torch.float32, attn_implementation=ATTN).eval()
    sd_built, sd_loaded = built.state_dict(), model.state_dict()
    assert all(torch.equal(sd_built[k], sd_loaded[k]) for k in sd_built), f"{name}: reload differs"

    vision = config.vision_config
    pixels = pixel_values((IMAGES, vision.num_channels, vision.image_size, vision.image_size))
    feats = features(model, pixels, idefics3)
    tokens = feats.shape[1]
    for i in range(IMAGES):  # each image alone gives the same rows
        alone = features(model, pixels[i:i + 1], idefics3)
        assert torch.allclose(alone[0], feats[i], atol=1e-6), f"{name}: image {i} alone differs"

    image_token = config.image_token_id
    rng = np.random.default_rng(PROMPT_SEED)
    generation = []
    for image in range(IMAGES):
        before, image_ids, after = prompt(rng, [image_token] * tokens)
        bos = config.text_config.bos_token_id
        ids = [bos] + before + image_ids + after
        if not idefics3:  # Gemma 3's processor: "<start_of_image>" + image tokens + "<end_of_image>"
            ids = [bos] + before + [config.boi_token_index] + image_ids + [config.eoi_token_index] + after
        px = pixels[image:image + 1]
        if idefics3:
            px = px[None]
        entry = {"name": f"image_{image}", "image": image, "prompt_ids": ids, "token_type_ids": None,
                 "output_ids": greedy(model, ids, px)}
        if not idefics3:
            types = [1 if t == image_token else 0 for t in ids]
            causal = entry["output_ids"]
            entry["token_type_ids"] = types
            entry["output_ids"] = greedy(model, ids, px, types)
            entry["output_ids_without_token_type_ids"] = causal
            entry["token_type_ids_change_output"] = causal != entry["output_ids"]
        generation.append(entry)
        print(f"  {name} {entry['name']}: {entry['output_ids']}")

    data = {
        **provenance("tools/reference/vision.py", name, model, "1 + 0.25*randn ((1 + w) norms: 0.25*randn)"),
        "tensor_rules": rules,
        "tensors": names,
        "image_token_id": image_token,
        "tokens_per_image": tokens,
        "text_hidden_size": config.text_config.hidden_size,
        "images": {
            "shape": list(pixels.shape),
            "how": f"numpy.random.default_rng({PIXEL_SEED}).integers(-64, 65, shape) / 64, as the image "
                   "processor would give pixel_values (already rescaled and normalised)",
            "pixel_values": [float(x) for x in pixels.reshape(-1)],
        },
        "image_features": {
            "shape": list(feats.shape),
            "how": ("model.model.get_image_features(pixel_values[None]).pooler_output[0] (pixel_values "
                    "[1, images, C, H, W]; all-zero images would be dropped as padding), reshaped to "
                    "[images, tokens, hidden]") if idefics3 else
                   "model.model.get_image_features(pixel_values).pooler_output",
            "values": [float(x) for x in feats.reshape(-1)],
        },
        "generation": generation,
        "generation_how": f"model.generate(prompt_ids, pixel_values=<that image>, do_sample=False, "
                          f"max_new_tokens={N_NEW}, min_new_tokens={N_NEW})",
    }
    if idefics3:
        data["bucketized_position_ids"] = bucketized_position_ids()
        data["bucketized_position_ids_how"] = (
            f"Idefics3VisionEmbeddings.forward's ids for a full image of n x n patches, n = 1..{MAX_GRID}, "
            "listed where they are not 0..n*n-1")
    else:
        data["token_type_ids_note"] = (
            "Gemma 3's processor gives token_type_ids (1 on image tokens); with them, Gemma3Model.forward "
            "lets a prompt's image tokens attend to each other bidirectionally (block mask) in the prefill. "
            "output_ids are generate's with them, output_ids_without_token_type_ids with the causal mask only.")
    dump(directory / "vision_reference.json", data)
    size = sum(f.stat().st_size for f in directory.iterdir())
    print(f"{name}: {size // 1024} KiB, {tokens} tokens per image")


def gemma3_rename(key):
    # The published checkpoints keep SiglipVisionModel's tensors under vision_model.
    if key.startswith("vision_tower.") and not key.startswith("vision_tower.vision_model."):
        return "vision_tower.vision_model." + key[len("vision_tower."):]
    return key


def main():
    build("idefics3_tiny", idefics3_config(), Idefics3ForConditionalGeneration, (), lambda k: k, True)
    build("gemma3_vision_tiny", gemma3_config(), Gemma3ForConditionalGeneration,
          ("model.multi_modal_projector.mm_soft_emb_norm", "model.language_model"), gemma3_rename, False)


if __name__ == "__main__":
    sys.exit(main())
