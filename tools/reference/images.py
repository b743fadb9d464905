"""Test images and what transformers' PIL image processors make of them, for tests/images_test.cpp's
bit-exact checks of src/images (decoding, Pillow's resampling, the Idefics3 / Gemma 3 / Qwen2-VL
processors).

    .venv/bin/python tools/reference/images.py   -> tests/data/images/*, tests/data/images/reference.json

Images are written deterministically (gradients plus noise from a seeded generator) in many sizes,
formats and modes, with Pillow's encoders except where Pillow cannot write the variant (interlaced,
16-bit colour and low-bit-depth PNGs, tRNS chunks Pillow would not write, GIF indices past the colour
table: a small PNG and GIF writer below). Each good image is read the way
transformers reads an image file (`transformers.image_utils.load_image`: EXIF orientation applied,
then `convert("RGB")`, which drops alpha), and its RGB bytes' xxh64 recorded; then each processor
config under tests/data/images/configs/ processes it (return_tensors="np") and the float32
pixel_values' xxh64 (little-endian bytes), shape, first floats and the family's extra outputs are
recorded, or the processor's error.
"""
import io
import json
import pathlib
import struct
import zlib

import numpy as np
import PIL
import transformers
import xxhash
from PIL import Image
from transformers import Gemma3ImageProcessorPil, Idefics3ImageProcessorPil, Qwen2VLImageProcessorPil
from transformers.image_utils import load_image

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "images"
CONFIGS = {  # config file -> processor class (as image_processor_type names it, the PIL backend)
    "smolvlm_256m.json": Idefics3ImageProcessorPil,
    "gemma3_4b.json": Gemma3ImageProcessorPil,
    "gemma3_pan_and_scan.json": Gemma3ImageProcessorPil,
    "qwen2_5_vl_3b.json": Qwen2VLImageProcessorPil,
    "qwen2_5_vl_small.json": Qwen2VLImageProcessorPil,
}


def pixels(rng, width, height, channels, noise=24):
    """A smooth gradient per channel plus seeded noise, uint8 [height, width, channels]."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    planes = []
    for c in range(channels):
        base = 127.5 + 110 * np.sin((x / max(width, 1)) * (2 + c) + (y / max(height, 1)) * (3 - c) + c)
        planes.append(base + rng.normal(0, noise, size=(height, width)))
    return np.clip(np.stack(planes, axis=-1), 0, 255).round().astype(np.uint8)


def png_bytes(width, height, color_type, bit_depth, rows, interlace=False, chunks=()):
    """A PNG from rows of samples (numpy [height, width*channels], uint8 or big-endian uint16
    values): what Pillow cannot write (Adam7 interlace, 16-bit colour, 1/2/4-bit gray)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    def packed(sub):
        if bit_depth >= 8:
            return sub.astype(">u2").tobytes() if bit_depth == 16 else sub.astype(np.uint8).tobytes()
        return np.packbits(np.unpackbits(sub.astype(np.uint8)[:, :, None], axis=2)[:, :, 8 - bit_depth:].reshape(
            sub.shape[0], -1), axis=1).tobytes() if sub.size else b""

    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[color_type]
    samples = rows.reshape(height, width, channels)
    passes = ([(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
              if interlace else [(0, 0, 1, 1)])
    raw = b""
    for x0, y0, dx, dy in passes:
        sub = samples[y0::dy, x0::dx]
        if sub.shape[0] == 0 or sub.shape[1] == 0:
            continue
        flat = sub.reshape(sub.shape[0], -1)
        line_bytes = len(packed(flat[:1]))
        data = packed(flat)
        for r in range(sub.shape[0]):
            raw += b"\x00" + data[r * line_bytes:(r + 1) * line_bytes]
    header = struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0, 1 if interlace else 0)
    body = b"".join(chunk(kind, data) for kind, data in chunks)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + body + chunk(b"IDAT", zlib.compress(raw, 9)) +
            chunk(b"IEND", b""))


def gif_bytes(width, height, indices, global_table=None, local_table=None, transparency=None):
    """A one-frame GIF whose indices may lie past its colour tables (which Pillow's writer never
    makes): tables of RGB tuples (padded with black to a power of two), LZW with 8-bit codes."""
    def table(colours):
        bits = max(1, (len(colours) - 1).bit_length())
        return bits - 1, b"".join(bytes(c) for c in list(colours) + [(0, 0, 0)] * ((1 << bits) - len(colours)))

    out = b"GIF89a" + struct.pack("<HH", width, height)
    if global_table is None:
        out += bytes([0, 0, 0])
    else:
        size, data = table(global_table)
        out += bytes([0x80 | size, 0, 0]) + data
    if transparency is not None:
        out += b"\x21\xf9\x04" + bytes([1, 0, 0, transparency, 0])
    out += b"\x2c" + struct.pack("<HHHH", 0, 0, width, height)
    if local_table is None:
        out += b"\x00"
    else:
        size, data = table(local_table)
        out += bytes([0x80 | size]) + data
    # Every index a literal 9-bit code, a clear code (256) often enough that the width never grows.
    codes = [256]
    for i, value in enumerate(indices.reshape(-1)):
        codes += [256, int(value)] if i and i % 200 == 0 else [int(value)]
    packed = sum(code << (9 * i) for i, code in enumerate(codes + [257]))
    stream = packed.to_bytes((9 * (len(codes) + 1) + 7) // 8, "little")
    blocks = b"".join(bytes([len(stream[i:i + 255])]) + stream[i:i + 255] for i in range(0, len(stream), 255))
    return out + b"\x08" + blocks + b"\x00\x3b"


def saved(image, fmt, **options):
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    return buffer.getvalue()


def exif_orientation(value):
    exif = Image.Exif()
    exif[0x0112] = value
    return exif.tobytes()


def good_images():
    rng = np.random.default_rng(49)
    extra = np.random.default_rng(50)  # for images added later, leaving the others as they were
    rgb = lambda w, h, noise=24: Image.fromarray(pixels(rng, w, h, 3, noise), "RGB")  # noqa: E731
    files = {}
    # Sizes and aspect ratios (PNG: lossless, so only the resampling is under test).
    for w, h in [(1, 1), (2, 1), (37, 23), (64, 64), (23, 517), (300, 7), (3, 2000), (2000, 3)]:
        files[f"rgb_{w}x{h}.png"] = saved(rgb(w, h), "PNG")
    # PNG modes.
    files["rgba_50x40.png"] = saved(Image.fromarray(pixels(rng, 50, 40, 4), "RGBA"), "PNG")
    files["la_33x31.png"] = saved(Image.fromarray(pixels(rng, 33, 31, 2), "LA"), "PNG")
    files["l_64x48.png"] = saved(Image.fromarray(pixels(rng, 64, 48, 1)[:, :, 0], "L"), "PNG")
    palette_image = rgb(40, 30).quantize(colors=37)
    files["p_40x30.png"] = saved(palette_image, "PNG")
    files["p_trns_40x30.png"] = saved(palette_image, "PNG", transparency=bytes(range(0, 255, 7)))
    files["p_trns1_40x30.png"] = saved(palette_image, "PNG", transparency=int(np.asarray(palette_image)[0, 0]))
    flat = rgb(20, 10, noise=0)  # a colour that occurs, declared transparent
    files["rgb_trns_20x10.png"] = saved(flat, "PNG", transparency=tuple(int(v) for v in np.asarray(flat)[0, 0]))
    gray = Image.fromarray(pixels(rng, 16, 12, 1, noise=0)[:, :, 0], "L")
    files["l_trns_16x12.png"] = saved(gray, "PNG", transparency=int(np.asarray(gray)[0, 0]))
    files["l16_30x20.png"] = saved(Image.fromarray(pixels(rng, 30, 20, 1)[:, :, 0].astype(np.uint16) * 3), "PNG")
    files["rgb16_30x20.png"] = png_bytes(30, 20, 2, 16, pixels(rng, 30, 20, 3).astype(np.uint16) * 257 +
                                         rng.integers(0, 257, size=(20, 30, 3)))
    files["rgba16_21x13.png"] = png_bytes(21, 13, 6, 16, pixels(rng, 21, 13, 4).astype(np.uint16) * 251)
    files["la16_17x9.png"] = png_bytes(17, 9, 4, 16, pixels(rng, 17, 9, 2).astype(np.uint16) * 255)
    files["gray4_19x11.png"] = png_bytes(19, 11, 0, 4, pixels(rng, 19, 11, 1) >> 4)
    files["gray1_13x5.png"] = png_bytes(13, 5, 0, 1, pixels(rng, 13, 5, 1) >> 7)
    files["interlaced_100x75.png"] = png_bytes(100, 75, 2, 8, pixels(rng, 100, 75, 3, noise=4), interlace=True)
    files["interlaced_rgba_9x7.png"] = png_bytes(9, 7, 6, 8, pixels(rng, 9, 7, 4), interlace=True)
    files["exif_rotated_30x20.png"] = saved(rgb(30, 20), "PNG", exif=exif_orientation(3))
    # JPEG: Pillow's decoder is libjpeg-turbo (islow DCT, fancy upsampling).
    files["baseline_640x480.jpg"] = saved(rgb(640, 480, noise=6), "JPEG", quality=85)
    files["large_1500x1100.jpg"] = saved(rgb(1500, 1100, noise=2), "JPEG", quality=70)
    files["progressive_301x199.jpg"] = saved(rgb(301, 199, noise=8), "JPEG", quality=80, progressive=True)
    files["subsampling444_45x33.jpg"] = saved(rgb(45, 33), "JPEG", quality=90, subsampling=0)
    files["subsampling422_45x33.jpg"] = saved(rgb(45, 33), "JPEG", quality=90, subsampling=1)
    files["gray_123x77.jpg"] = saved(Image.fromarray(pixels(rng, 123, 77, 1)[:, :, 0], "L"), "JPEG")
    files["cmyk_64x48.jpg"] = saved(Image.fromarray(pixels(rng, 64, 48, 4), "CMYK"), "JPEG", quality=90)
    files["exif_orientation6_80x50.jpg"] = saved(rgb(80, 50), "JPEG", exif=exif_orientation(6))
    files["exif_orientation5_17x9.jpg"] = saved(rgb(17, 9), "JPEG", quality=95, exif=exif_orientation(5))
    # WebP: lossy (YUV 4:2:0), lossless, with alpha.
    files["lossy_96x64.webp"] = saved(rgb(96, 64, noise=8), "WEBP", quality=80)
    files["lossless_41x27.webp"] = saved(rgb(41, 27), "WEBP", lossless=True)
    files["lossy_alpha_48x32.webp"] = saved(Image.fromarray(pixels(rng, 48, 32, 4), "RGBA"), "WEBP", quality=75)
    files["lossless_alpha_25x19.webp"] = saved(Image.fromarray(pixels(rng, 25, 19, 4), "RGBA"), "WEBP",
                                               lossless=True)
    # GIF: the first frame.
    files["p_60x40.gif"] = saved(rgb(60, 40).quantize(colors=64), "GIF")
    frames = [rgb(24, 16).quantize(colors=16) for _ in range(2)]
    files["animated_trns_24x16.gif"] = saved(frames[0], "GIF", save_all=True, append_images=frames[1:],
                                             transparency=3, duration=50)
    # tRNS as Pillow keeps it: the gray of 1/2/4 bits as read (in "1", 255 or 0), the 16-bit gray
    # and the RGB colour (8 or 16 bits) compared with the pixels by their low bytes.
    files["gray1_trns0_13x5.png"] = png_bytes(13, 5, 0, 1, pixels(extra, 13, 5, 1) >> 7, chunks=[(b"tRNS", b"\0\0")])
    files["gray2_trns0_7x5.png"] = png_bytes(7, 5, 0, 2, pixels(extra, 7, 5, 1) >> 6, chunks=[(b"tRNS", b"\0\0")])
    gray16 = pixels(extra, 30, 20, 1).astype(np.uint16) * 3
    gray16[0, :7] = 0
    files["l16_trns256_30x20.png"] = png_bytes(30, 20, 0, 16, gray16, chunks=[(b"tRNS", struct.pack(">H", 256))])
    rgb16 = pixels(extra, 20, 12, 3).astype(np.uint16) * 257
    rgb16[3, 4:9] = (0x1234, 0x5678, 0x9ABC)  # the key's low bytes as high bytes
    files["rgb16_trns_20x12.png"] = png_bytes(20, 12, 2, 16, rgb16.reshape(12, -1),
                                              chunks=[(b"tRNS", struct.pack(">HHH", 0x3412, 0x7856, 0xBC9A))])
    rgb8 = pixels(extra, 12, 8, 3)
    rgb8[2, 3:6] = (44, 5, 7)
    files["rgb_trns300_12x8.png"] = png_bytes(12, 8, 2, 8, rgb8.reshape(8, -1),
                                              chunks=[(b"tRNS", struct.pack(">HHH", 300, 5, 7))])
    # Indices past the colour table: black in mode P; a gray-ramp table makes the frame mode L.
    indices = extra.integers(0, 256, size=(10, 12), dtype=np.uint8)
    indices[0, :4] = range(4)
    colours, ramp = [(200, 10, 30), (0, 0, 0), (5, 250, 7), (9, 9, 200)], [(i, i, i) for i in range(4)]
    files["p_beyond_trns_12x10.gif"] = gif_bytes(12, 10, indices, colours, transparency=200)
    files["ramp_beyond_12x10.gif"] = gif_bytes(12, 10, indices, ramp, transparency=int(indices[1, 1]))
    files["local_ramp_12x10.gif"] = gif_bytes(12, 10, indices, colours, local_table=ramp, transparency=77)
    return files


def malformed_images(good):
    rng = np.random.default_rng(7)
    png = good["rgb_37x23.png"]
    zero = png_bytes(1, 1, 2, 8, np.zeros((1, 3), np.uint8))
    zero = zero[:16] + struct.pack(">II", 0, 0) + zero[24:]  # 0x0 IHDR (CRC left stale, as a liar would)
    huge = png_bytes(1, 1, 2, 8, np.zeros((1, 3), np.uint8))
    header = struct.pack(">IIBBBBB", 50000, 50000, 8, 2, 0, 0, 0)
    huge = huge[:12] + b"IHDR" + header + struct.pack(">I", zlib.crc32(b"IHDR" + header)) + huge[33:]
    return {
        "truncated.png": png[: len(png) // 2],
        "truncated.jpg": good["baseline_640x480.jpg"][:3000],
        "truncated.webp": good["lossy_96x64.webp"][:200],
        "truncated.gif": good["p_60x40.gif"][:100],
        "random.bin": rng.integers(0, 256, size=4096, dtype=np.uint8).tobytes(),
        "empty.png": b"",
        "huge_50000x50000.png": huge,
        "zero_0x0.png": zero,
        "text.jpg": b"this is not an image\n" * 4,
    }


def run_case(processor, image, config_name):
    family = CONFIGS[config_name].__name__
    try:
        out = processor(images=[image], return_tensors="np", **(
            {"return_row_col_info": True} if family.startswith("Idefics3") else {}))
    except ValueError as error:
        return {"error": str(error)}
    values = np.ascontiguousarray(out["pixel_values"], dtype="<f4")
    case = {"shape": list(values.shape), "xxh64": xxhash.xxh64(values.tobytes()).hexdigest(),
            "first": [float(v) for v in values.reshape(-1)[:8]]}
    if "rows" in out:
        case["rows"], case["cols"] = int(out["rows"][0][0]), int(out["cols"][0][0])
    if "image_grid_thw" in out:
        case["grid_thw"] = [int(v) for v in out["image_grid_thw"][0]]
    if "num_crops" in out:
        case["num_crops"] = int(np.asarray(out["num_crops"]).reshape(-1)[0])
    return case


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    good = good_images()
    bad = malformed_images(good)
    for name, data in {**good, **bad}.items():
        (OUT / name).write_bytes(data)
    processors = {name: cls.from_json_file(OUT / "configs" / name) for name, cls in CONFIGS.items()}
    reference = {"pillow": PIL.__version__, "transformers": transformers.__version__,
                 "images": {}, "malformed": sorted(bad), "cases": []}
    for name in sorted(good):
        image = load_image(str(OUT / name))
        rgb = np.asarray(image, dtype=np.uint8)
        reference["images"][name] = {"width": image.width, "height": image.height,
                                     "rgb_xxh64": xxhash.xxh64(rgb.tobytes()).hexdigest()}
        for config_name, processor in processors.items():
            reference["cases"].append({"image": name, "config": config_name,
                                       **run_case(processor, image, config_name)})
    (OUT / "reference.json").write_text(json.dumps(reference, indent=1) + "\n")
    size = sum(p.stat().st_size for p in OUT.rglob("*") if p.is_file())
    print(f"{len(good)} images, {len(bad)} malformed, {len(reference['cases'])} cases, {size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
