"""Model weights from a seed, with numpy only: how tiny models of realistic vocabulary (whose
embedding and head are tens of MB) are tested without being checked in.

A model directory checked in as tests/data/models/<name>/ holds `weights.json` (each tensor's HF
name, shape and init rule, and the seed) instead of model.safetensors. This script writes the
tensors it describes:

    .venv/bin/python tools/reference/seeded_weights.py MODEL_DIR OUT_DIR

OUT_DIR becomes a loadable HF directory: MODEL_DIR's files plus model.safetensors (F32). The
values come from numpy's PCG64 bit generator (its raw 64-bit stream, which numpy keeps stable
across versions; no distribution code), so every machine writes the same bytes. families.py
writes weights.json and computes the HF reference from the same tensors.
"""
import json
import os
import pathlib
import shutil
import sys
import tempfile

import numpy as np

MANIFEST = "weights.json"


def uniform(seed, index, count):
    """`count` values in [-1, 1), multiples of 2^-23, from stream `index` of `seed`."""
    raw = np.random.PCG64([seed, index]).random_raw(count)
    return ((raw >> np.uint64(40)).astype(np.float64) / 2.0**23 - 1.0)


def tensors(manifest):
    """name -> float32 array. Rules: "matrix" (uniform, std `std`), "norm_one" (1 + uniform with
    std 0.25), "norm_zero" and "bias" (uniform with std 0.25)."""
    out = {}
    half_width = np.sqrt(3.0)  # a uniform on [-a, a) has std a / sqrt(3)
    for index, spec in enumerate(manifest["tensors"]):
        shape = tuple(spec["shape"])
        values = uniform(manifest["seed"], index, int(np.prod(shape)))
        rule = spec["rule"]
        if rule == "matrix":
            values = values * (half_width * manifest["std"])
        elif rule in ("norm_zero", "bias"):
            values = values * (half_width * 0.25)
        elif rule == "norm_one":
            values = 1.0 + values * (half_width * 0.25)
        else:
            raise ValueError(f"{spec['name']}: unknown rule {rule!r}")
        out[spec["name"]] = values.astype(np.float32).reshape(shape)
    return out


def write_safetensors(path, named):
    """The safetensors format: an 8-byte little-endian header size, a JSON header (padded with
    spaces to 8 bytes), then each tensor's bytes in the header's order."""
    header, offset = {}, 0
    for name, array in named.items():
        size = array.size * 4
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for array in named.values():
            f.write(np.ascontiguousarray(array, dtype="<f4").tobytes())


def materialize(model_dir, out_dir):
    """Writes OUT_DIR (atomically: a sibling temporary directory renamed into place)."""
    model_dir, out_dir = pathlib.Path(model_dir), pathlib.Path(out_dir)
    manifest = json.loads((model_dir / MANIFEST).read_text(encoding="utf-8"))
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = pathlib.Path(tempfile.mkdtemp(prefix=out_dir.name + ".", dir=out_dir.parent))
    for f in model_dir.iterdir():
        if f.is_file() and f.name != "reference.json":
            shutil.copy(f, staging / f.name)
    write_safetensors(staging / "model.safetensors", tensors(manifest))
    try:
        os.rename(staging, out_dir)
    except OSError:  # another process made it first: the same bytes
        shutil.rmtree(staging)


def main():
    if len(sys.argv) != 3:
        sys.exit(f"usage: {sys.argv[0]} MODEL_DIR OUT_DIR")
    materialize(sys.argv[1], sys.argv[2])


if __name__ == "__main__":
    main()
