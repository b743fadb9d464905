"""A tiny SmolVLM-style model (Idefics3ForConditionalGeneration) with everything a user's files
have: a tokenizer with the Idefics3 processor's image tokens and SmolVLM's chat template
(family_text.py, "smolvlm"), preprocessor_config.json, and greedy references made the way
transformers' users make them: Idefics3Processor.apply_chat_template on messages with image
parts, the processor on real image files (load_image: EXIF orientation, RGB), model.generate.
So the whole path is checked at once: decoding, the image processor (tiles and the global
image), the prompt's image tokens, the vision tower and the decoder.

Writes tests/data/models/smolvlm_tiny/ (checked in, small): the HF directory and
reference.json {"cases": [{"name", "images": [file names under tests/data/images], "messages",
"prompt_ids", "output_ids"}]}.
Usage: .venv/bin/python tools/reference/vision_chat.py
"""
import json
import pathlib
import shutil
import sys
import tempfile

import torch
from transformers import (AutoTokenizer, Idefics3Config, Idefics3ForConditionalGeneration, Idefics3ImageProcessorPil,
                          Idefics3Processor)
from transformers.image_utils import load_image

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import family_text  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "models" / "smolvlm_tiny"
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


def main():
    scratch = pathlib.Path(tempfile.mkdtemp())
    family_text.write("smolvlm", scratch)
    tokenizer = AutoTokenizer.from_pretrained(scratch)
    image_token_id = tokenizer.convert_tokens_to_ids("<image>")
    config = Idefics3Config(text_config=dict(TEXT, vocab_size=len(tokenizer)), vision_config=VISION,
                            scale_factor=SCALE_FACTOR, image_token_id=image_token_id,
                            tie_word_embeddings=False)
    torch.manual_seed(0)
    model = Idefics3ForConditionalGeneration(config).eval()
    randomize(model)
    if OUT.exists():
        shutil.rmtree(OUT)
    model.save_pretrained(OUT, safe_serialization=True)
    template = (family_text.TEMPLATES / "smolvlm.jinja").read_text(encoding="utf-8")
    processor = Idefics3Processor(image_processor=Idefics3ImageProcessorPil(**PREPROCESSOR), tokenizer=tokenizer,
                                  image_seq_len=TOKENS_PER_IMAGE, chat_template=template)
    processor.save_pretrained(OUT)
    family_text.write("smolvlm", OUT)  # the tokenizer files as every tiny family's, template included

    model = Idefics3ForConditionalGeneration.from_pretrained(OUT, dtype=torch.float32,
                                                             attn_implementation="eager").eval()
    cases = []
    for name, files, text in CASES:
        messages = [{"role": "user", "content": [{"type": "image"} for _ in files] + [{"type": "text", "text": text}]}]
        prompt = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        images = [load_image(str(IMAGES / f)) for f in files]
        inputs = processor(text=prompt, images=[images], return_tensors="pt")
        with torch.no_grad():
            out = model.generate(**inputs, do_sample=False, max_new_tokens=MAX_NEW_TOKENS)
        prompt_ids = inputs["input_ids"][0].tolist()
        cases.append({"name": name, "images": files, "messages": messages, "prompt_ids": prompt_ids,
                      "output_ids": out[0][len(prompt_ids):].tolist()})
        print(f"{name}: {len(prompt_ids)} prompt tokens, pixel_values {tuple(inputs['pixel_values'].shape)}, "
              f"output {cases[-1]['output_ids']}")
    reference = {"generator": "tools/reference/vision_chat.py", "max_new_tokens": MAX_NEW_TOKENS,
                 "how": "Idefics3Processor.apply_chat_template + processor(text, images=load_image(file)) + "
                        "model.generate(do_sample=False) on the float32 model, eager attention",
                 "cases": cases}
    (OUT / "reference.json").write_text(json.dumps(reference, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    shutil.rmtree(scratch)


if __name__ == "__main__":
    main()
