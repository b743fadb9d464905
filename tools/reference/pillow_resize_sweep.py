"""Pillow's Image.resize on random RGB images, for tests/images_test.cpp's sweep of
src/images/pillow_resample.cpp: several hundred (source size, target size, filter) cases, each
recorded as the xxh64 of Pillow's output bytes.

    .venv/bin/python tools/reference/pillow_resize_sweep.py [CASES]   -> tests/data/images/resize_sweep.json

Only the sizes, the filter and the hash are committed: the source pixels come from a generator
the C++ test implements too. Byte k (row-major RGB) of case c's source image is the top byte of
splitmix64's finaliser applied to ((c << 32) + k) * 0x9e3779b97f4a7c15 (mod 2^64).

The cases cover both sides shrinking (random, and with the height's shrink within one pixel of
twice the width's, where Pillow 13 switches which pass runs first), one side growing while the
other shrinks, upscales, sides of one pixel (source or target) and one side unchanged, each with
a random filter among LANCZOS, BILINEAR, BICUBIC, BOX and HAMMING (transformers' PIL backend
resizes with reducing_gap=None, as here).
"""
import json
import pathlib
import random
import sys

import numpy as np
import PIL
import xxhash
from PIL import Image

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "images" / "resize_sweep.json"
MAX_SIDE = 200


def source_bytes(case, count):
    """The C++ test's generator: splitmix64's finaliser over the byte index, top byte kept."""
    with np.errstate(over="ignore"):
        z = (np.uint64(case) << np.uint64(32)) + np.arange(count, dtype=np.uint64)
        z = z * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(56)).astype(np.uint8).tobytes()


def sizes(rng, kind):
    """(source width, source height, target width, target height) of one kind of case."""
    side = lambda lo=1, hi=MAX_SIDE: rng.randint(lo, hi)  # noqa: E731
    if kind == 0:  # both shrink
        sw, sh = side(2), side(2)
        return sw, sh, side(1, sw - 1), side(1, sh - 1)
    if kind == 1:  # both shrink, the height's shrink near twice the width's
        sw = side(2, MAX_SIDE // 3)
        dw = side(1, sw - 1)
        height_shrink = 2 * (sw - dw) + rng.choice((-1, 0, 1))
        sh = min(height_shrink + side(1, 40), MAX_SIDE)
        return sw, sh, dw, sh - height_shrink
    if kind == 2:  # one side grows, the other shrinks
        small, large = side(1, 120), side(2)
        grown, shrunk = side(small + 1, MAX_SIDE), side(1, large - 1)
        return (small, large, grown, shrunk) if rng.random() < 0.5 else (large, small, shrunk, grown)
    if kind == 3:  # upscales (one side possibly unchanged)
        sw, sh = side(1, 90), side(1, 90)
        return sw, sh, side(sw, MAX_SIDE), side(sh + 1, MAX_SIDE)
    if kind == 4:  # sides of one pixel
        sw, sh, dw, dh = side(), side(), side(), side()
        ones = rng.choice(("sw", "sh", "dw", "dh", "sw dh", "sh dw", "dw dh", "sw sh"))
        picked = {"sw": sw, "sh": sh, "dw": dw, "dh": dh}
        for name in ones.split():
            picked[name] = 1
        return picked["sw"], picked["sh"], picked["dw"], picked["dh"]
    sw, sh = side(), side()  # one side unchanged
    return (sw, sh, sw, side()) if rng.random() < 0.5 else (sw, sh, side(), sh)


def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 600
    rng = random.Random(2613)
    filters = [Image.Resampling.LANCZOS, Image.Resampling.BILINEAR, Image.Resampling.BICUBIC,
               Image.Resampling.BOX, Image.Resampling.HAMMING]
    cases = []
    for c in range(count):
        sw, sh, dw, dh = sizes(rng, c % 6)
        resample = filters[c % 5 if c < 30 else rng.randrange(5)]
        source = Image.frombytes("RGB", (sw, sh), source_bytes(c, sw * sh * 3))
        out = source.resize((dw, dh), resample=resample, reducing_gap=None)
        cases.append([sw, sh, dw, dh, int(resample), xxhash.xxh64(out.tobytes()).hexdigest()])
    columns = ["source_width", "source_height", "width", "height", "resample", "xxh64"]
    rows = ",\n".join("  " + json.dumps(case) for case in cases)  # one case a line
    OUT.write_text(f'{{\n "pillow": "{PIL.__version__}",\n "columns": {json.dumps(columns)},\n'
                   f' "cases": [\n{rows}\n ]\n}}\n')
    both = sum(1 for sw, sh, dw, dh, *_ in cases if dw < sw and dh < sh)
    print(f"{len(cases)} cases ({both} with both sides shrinking), {OUT.stat().st_size} bytes")


if __name__ == "__main__":
    main()
