"""Tiny vision-language models with everything a user's files have, and greedy references made
the way transformers' users make them: the processor's apply_chat_template on messages with
image parts, the processor on real image files (load_image: EXIF orientation, RGB),
model.generate. So the whole path is checked at once: decoding, the image processor, the
prompt's image tokens, the vision tower and the decoder.
  smolvlm_tiny     Idefics3ForConditionalGeneration, SmolVLM's tokenizer tokens and template
                   (family_text.py "smolvlm"): images split into tiles plus the whole image
  gemma3_vlm_tiny  Gemma3ForConditionalGeneration, Gemma 3's tokens and template ("gemma3_vlm"):
                   each image's tokens attend to each other (the processor's token_type_ids)

Writes tests/data/models/<name>/ (checked in, small): the HF directory and reference.json
{"cases": [{"name", "images": [file names under tests/data/images], "messages", "prompt_ids",
"output_ids"}]}.
Usage: .venv/bin/python tools/reference/vision_chat.py
"""
import json
import pathlib
import shutil
import sys
import tempfile

import torch
from transformers import (AutoTokenizer, Gemma3Config, Gemma3ForConditionalGeneration, Gemma3ImageProcessorPil,
                          Gemma3Processor, Idefics3Config, Idefics3ForConditionalGeneration, Idefics3ImageProcessorPil,
                          Idefics3Processor)
from transformers.image_utils import load_image

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import family_text  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "data" / "models"
IMAGES = ROOT / "tests" / "data" / "images"
MAX_NEW_TOKENS = 12

# Small enough to check in, shaped as SmolVLM is: patches merged 4 x 4 by the pixel shuffle, and
# images split into tiles of the tower's size plus the whole image.
TEXT = dict(model_type="llama", hidden_size=64, intermediate_size=96, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=1024,
            rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2, pad_token_id=0, tie_word_embeddings=False)
VISION = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=2,
              image_size=32, patch_size=4, layer_norm_eps=1e-6, hidden_act="gelu_pytorch_tanh")
SCALE_FACTOR = 4
TOKENS_PER_IMAGE = (VISION["image_size"] // VISION["patch_size"]) ** 2 // SCALE_FACTOR ** 2
PREPROCESSOR = dict(do_convert_rgb=True, do_resize=True, size={"longest_edge": 3 * VISION["image_size"]},
                    resample=1, do_rescale=True, rescale_factor=1 / 255, do_normalize=True,
                    image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5], do_pad=True,
                    do_image_splitting=True, max_image_size={"longest_edge": VISION["image_size"]})

CASES = [
    ("one_image", ["rgb_37x23.png"], "What is in this image?"),
    ("two_images", ["large_1500x1100.jpg", "p_trns_40x30.png"], "Compare these. Café ünïcode."),
    ("small_image", ["rgb_1x1.png"], "Describe it."),
]


def randomize(model):
    """Seeded weights spread wide (so a wrong graph moves the tokens): matrices 0.2 randn, biases
    0.25 randn, norm weights 1 + 0.25 randn."""
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            noise = torch.randn(parameter.shape, generator=generator)
            if "norm" in name and name.endswith("weight"):
                parameter.copy_(1 + 0.25 * noise)
            elif name.endswith("bias"):
                parameter.copy_(0.25 * noise)
            else:
                parameter.copy_(0.2 * noise)


def smolvlm(tokenizer, template):
    config = Idefics3Config(text_config=dict(TEXT, vocab_size=len(tokenizer)), vision_config=VISION,
                            scale_factor=SCALE_FACTOR, image_token_id=tokenizer.convert_tokens_to_ids("<image>"),
                            tie_word_embeddings=False)
    processor = Idefics3Processor(image_processor=Idefics3ImageProcessorPil(**PREPROCESSOR), tokenizer=tokenizer,
                                  image_seq_len=TOKENS_PER_IMAGE, chat_template=template)
    return Idefics3ForConditionalGeneration, config, processor


GEMMA3_TEXT = dict(model_type="gemma3_text", hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=1024,
                   rms_norm_eps=1e-6, sliding_window=24, layer_types=["sliding_attention", "full_attention"],
                   bos_token_id=2, eos_token_id=1, pad_token_id=0, query_pre_attn_scalar=16)
GEMMA3_TOKENS = 16  # the 8 x 8 patches pooled 2 x 2


def gemma3(tokenizer, template):
    config = Gemma3Config(text_config=dict(GEMMA3_TEXT, vocab_size=len(tokenizer)),
                          vision_config=dict(VISION, model_type="siglip_vision_model"),
                          mm_tokens_per_image=GEMMA3_TOKENS,
                          boi_token_index=tokenizer.convert_tokens_to_ids("<start_of_image>"),
                          eoi_token_index=tokenizer.convert_tokens_to_ids("<end_of_image>"),
                          image_token_index=tokenizer.convert_tokens_to_ids("<image_soft_token>"),
                          eos_token_id=[1, tokenizer.convert_tokens_to_ids("<end_of_turn>")])
    size = VISION["image_size"]
    image_processor = Gemma3ImageProcessorPil(size={"height": size, "width": size}, resample=2,
                                              image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5],
                                              do_pan_and_scan=False)
    processor = Gemma3Processor(image_processor=image_processor, tokenizer=tokenizer, chat_template=template,
                                image_seq_length=GEMMA3_TOKENS)
    return Gemma3ForConditionalGeneration, config, processor


MODELS_BUILT = {"smolvlm_tiny": ("smolvlm", smolvlm), "gemma3_vlm_tiny": ("gemma3_vlm", gemma3)}


def write_model(name):
    family, build = MODELS_BUILT[name]
    out = MODELS / name
    scratch = pathlib.Path(tempfile.mkdtemp())
    family_text.write(family, scratch)
    tokenizer = AutoTokenizer.from_pretrained(scratch)
    template = family_text.FAMILY_TEXT[family]["template"].read_text(encoding="utf-8")
    model_class, config, processor = build(tokenizer, template)
    torch.manual_seed(0)
    model = model_class(config).eval()
    randomize(model)
    if out.exists():
        shutil.rmtree(out)
    model.save_pretrained(out, safe_serialization=True)
    processor.save_pretrained(out)
    family_text.write(family, out)  # the tokenizer files as every tiny family's, template included

    model = model_class.from_pretrained(out, dtype=torch.float32, attn_implementation="eager").eval()
    cases = []
    for case, files, text in CASES:
        messages = [{"role": "user", "content": [{"type": "image"} for _ in files] + [{"type": "text", "text": text}]}]
        prompt = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        images = [load_image(str(IMAGES / f)) for f in files]
        inputs = processor(text=prompt, images=[images], return_tensors="pt")
        with torch.no_grad():
            generated = model.generate(**inputs, do_sample=False, max_new_tokens=MAX_NEW_TOKENS)
        prompt_ids = inputs["input_ids"][0].tolist()
        cases.append({"name": case, "images": files, "messages": messages, "prompt_ids": prompt_ids,
                      "output_ids": generated[0][len(prompt_ids):].tolist()})
        print(f"{name} {case}: {len(prompt_ids)} prompt tokens, pixel_values {tuple(inputs['pixel_values'].shape)}, "
              f"inputs {sorted(inputs.keys())}, output {cases[-1]['output_ids']}")
    reference = {"generator": "tools/reference/vision_chat.py", "max_new_tokens": MAX_NEW_TOKENS,
                 "how": f"{type(processor).__name__}.apply_chat_template + processor(text, images=load_image(file)) "
                        "+ model.generate(do_sample=False) on the float32 model, eager attention",
                 "cases": cases}
    (out / "reference.json").write_text(json.dumps(reference, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    shutil.rmtree(scratch)


def main():
    for name in sys.argv[1:] or MODELS_BUILT:
        write_model(name)


if __name__ == "__main__":
    main()
