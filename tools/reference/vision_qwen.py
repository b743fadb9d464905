"""A tiny random-weight Qwen2.5-VL and its vision tower's image features, from HF `transformers`
(float32, CPU, eager attention): the reference for the Qwen2.5-VL vision graph
(src/models/qwen_vision_*.cpp, tests/vision_qwen_test.cpp).

Writes (checked in, small, deterministic) tests/data/models/qwen2_5_vl_tiny/:
  config.json, model.safetensors  Qwen2_5_VLForConditionalGeneration: a vision tower of depth 4
                                  (full attention on blocks 1 and 3, windows of 2 x 2 merged units
                                  = 4 x 4 patches on the others), width 32, 2 heads, patches of
                                  4 x 4 pixels x 2 frames, merger to 64; text: a tiny qwen2 decoder.
                                  F32, the tensor names of the published checkpoints (visual.*,
                                  model.*, lm_head.weight), as save_pretrained writes them.
  vision_reference.json:

  {"generator", "transformers_version", "torch_version", "model", "model_class", "loader", "init",
   "tensor_rules", "tensors", "image_token_id", "video_token_id", "vision_start_token_id",
   "vision_end_token_id", "out_hidden_size",
   "images": [{"grid_thw": [t, h, w],              (in patches)
               "pixel_values": {"shape": [t*h*w, C*T*p*p], "values": [... row-major ...]},
               "position_ids": [[h, w] per patch],  (get_vision_position_ids: merge-block order)
               "window_index": [...],               (get_vision_window_index, per merged unit)
               "cu_window_seqlens": [...],          (in patches, from 0)
               "tokens": t*h*w / merge^2,
               "image_features": {"shape": [tokens, out_hidden], "values": [...]}}, ...],
   "pixels_how", "features_how"}

Image i's features are those of all the images in one call (the rows get_image_features splits),
and each image alone gives the same rows (checked here).

Usage: .venv/bin/python tools/reference/vision_qwen.py
"""
import sys

import numpy as np
import torch
from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration
from transformers.vision_utils import get_vision_position_ids, get_vision_window_index

from vision import ATTN, INIT_SEED, INITIALIZER_RANGE, OUT, PIXEL_SEED, dump, provenance, randomise, save

NAME = "qwen2_5_vl_tiny"
VOCAB = 300
# (t, h, w) in patches: an image whose windows tile it (8 x 12 patches: 2 x 3 windows), one whose
# edge windows are partial (10 x 6: 5 x 3 merged units in windows of 2 x 2), and two frames (a
# video's grid: attention within each frame).
GRIDS = [(1, 8, 12), (1, 10, 6), (2, 4, 6)]

VISION = dict(depth=4, hidden_size=32, intermediate_size=48, num_heads=2, in_channels=3,
              patch_size=4, temporal_patch_size=2, spatial_merge_size=2, window_size=16,
              fullatt_block_indexes=[1, 3], out_hidden_size=64, hidden_act="silu",
              initializer_range=INITIALIZER_RANGE)
TEXT = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=512, vocab_size=VOCAB, rms_norm_eps=1e-6,
            rope_parameters=dict(rope_type="default", rope_theta=10000.0, mrope_section=[2, 3, 3]),
            bos_token_id=1, eos_token_id=2, pad_token_id=0, initializer_range=INITIALIZER_RANGE)


def config():
    return Qwen2_5_VLConfig(vision_config=VISION, text_config=TEXT, image_token_id=VOCAB - 1,
                            video_token_id=VOCAB - 2, vision_start_token_id=VOCAB - 4,
                            vision_end_token_id=VOCAB - 3, tie_word_embeddings=False)


def pixel_values(grid, vision, rng):
    """An image's patches as Qwen2VLImageProcessor lays them out: rows [C, T, p, p], the frame
    repeated over T for images (t = 1); values k / 64 in [-1, 1]."""
    t, h, w = grid
    c, tp, p = vision.in_channels, vision.temporal_patch_size, vision.patch_size
    frame = rng.integers(-64, 65, size=(t * h * w, c, 1, p, p)).astype(np.float32) / 64.0
    if t == 1:
        values = np.repeat(frame, tp, axis=2)
    else:
        values = np.concatenate(
            [frame] + [rng.integers(-64, 65, size=frame.shape).astype(np.float32) / 64.0
                       for _ in range(tp - 1)], axis=2)
    return torch.tensor(values.reshape(t * h * w, c * tp * p * p))


def main():
    cfg = config()
    directory = OUT / NAME
    torch.manual_seed(INIT_SEED)
    built = Qwen2_5_VLForConditionalGeneration(cfg).eval()
    rules = randomise(built, (), lambda n: n.endswith((".norm1.weight", ".norm2.weight", ".ln_q.weight")))
    names = save(built, directory, lambda k: k)
    # transformers 5 keeps model.visual.* and model.language_model.* but saves (and loads) the
    # published names.
    assert "visual.blocks.0.attn.qkv.weight" in names and "model.embed_tokens.weight" in names, names
    model = Qwen2_5_VLForConditionalGeneration.from_pretrained(
        str(directory), dtype=torch.float32, attn_implementation=ATTN).eval()
    sd_built, sd_loaded = built.state_dict(), model.state_dict()
    assert sd_built.keys() == sd_loaded.keys()
    assert all(torch.equal(sd_built[k], sd_loaded[k]) for k in sd_built), "reload differs"

    vision = cfg.vision_config
    rng = np.random.default_rng(PIXEL_SEED)
    pixels = [pixel_values(g, vision, rng) for g in GRIDS]
    grid_thw = torch.tensor(GRIDS)
    with torch.no_grad():
        together = model.model.get_image_features(torch.cat(pixels), grid_thw).pooler_output
        for i, g in enumerate(GRIDS):
            alone = model.model.get_image_features(pixels[i], torch.tensor([g])).pooler_output[0]
            assert torch.allclose(alone, together[i], atol=1e-6), f"image {i} alone differs"

    merge = vision.spatial_merge_size
    images = []
    for i, g in enumerate(GRIDS):
        one = torch.tensor([g])
        window_index, cu = get_vision_window_index(one, merge, vision.window_size, vision.patch_size)
        feats = together[i]
        assert feats.shape[0] == g[0] * g[1] * g[2] // merge ** 2
        images.append({
            "grid_thw": list(g),
            "pixel_values": {"shape": list(pixels[i].shape),
                             "values": [float(x) for x in pixels[i].reshape(-1)]},
            "position_ids": get_vision_position_ids(one, merge).tolist(),
            "window_index": [int(x) for x in window_index],
            "cu_window_seqlens": [int(x) for x in cu],
            "tokens": int(feats.shape[0]),
            "image_features": {"shape": list(feats.shape), "values": [float(x) for x in feats.reshape(-1)]},
        })
        print(f"  {NAME} grid {g}: {feats.shape[0]} tokens, windows {[int(x) for x in cu]}")

    data = {
        **provenance("tools/reference/vision_qwen.py", NAME, model,
                     "(norm1, norm2, ln_q, the decoder's) 1 + 0.25*randn"),
        "tensor_rules": rules,
        "tensors": names,
        "image_token_id": cfg.image_token_id,
        "video_token_id": cfg.video_token_id,
        "vision_start_token_id": cfg.vision_start_token_id,
        "vision_end_token_id": cfg.vision_end_token_id,
        "out_hidden_size": vision.out_hidden_size,
        "images": images,
        "pixels_how": f"numpy.random.default_rng({PIXEL_SEED}).integers(-64, 65) / 64 per patch row [C, T, p, p], "
                      "image by image; t = 1: one frame repeated over T as Qwen2VLImageProcessor does for images",
        "features_how": "model.model.get_image_features(cat(pixel_values), grid_thw).pooler_output[i] "
                        "(all the images in one call; each alone gives the same rows)",
    }
    dump(directory / "vision_reference.json", data)
    size = sum(f.stat().st_size for f in directory.iterdir())
    print(f"{NAME}: {size // 1024} KiB")


if __name__ == "__main__":
    sys.exit(main())
