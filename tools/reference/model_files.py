"""Reference data for the model-file readers, from the `gguf` Python package.

Writes (checked in, small):
  tests/data/model_files/quant_types.gguf   one tensor of random blocks per supported dtype,
      each followed by '<name>.expected' = gguf.quants.dequantize of it (F32), plus metadata of
      every GGUF value type (arrays and a nested array included);
  tests/data/model_files/smollm2_dequant.json   per tensor of the default model: dtype, shape
      and XXH64 of its f32 dequantization (little-endian bytes), so the C++ dequantizer is
      checked bit-exactly on the real file without storing it.
Usage: .venv/bin/python tools/reference/model_files.py MODEL.gguf
"""
import json
import pathlib
import sys

import numpy as np
import xxhash
from gguf import GGMLQuantizationType as Q, GGUFReader, GGUFWriter, GGUFValueType
from gguf.constants import GGML_QUANT_SIZES
from gguf.quants import dequantize

OUT = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "model_files"


def random_blocks(rng, qtype, n_blocks):
    """Random block bytes with every f16 scale field replaced by a finite, modest value."""
    block_elems, block_bytes = GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, size=(n_blocks, block_bytes), dtype=np.uint8)
    def half(count):
        return rng.uniform(-0.05, 0.05, size=(n_blocks, count)).astype(np.float16).view(np.uint8)
    if qtype in (Q.Q4_0, Q.Q5_0, Q.Q8_0):
        raw[:, 0:2] = half(1)
    elif qtype in (Q.Q4_1, Q.Q5_1, Q.Q4_K, Q.Q5_K):
        raw[:, 0:4] = half(2)
    elif qtype == Q.Q6_K:
        raw[:, 208:210] = half(1)
    elif qtype == Q.MXFP4:
        # E8M0 exponents of modest scales (2^-28 to 2^6), the first blocks' the subnormal scales
        # (e 0 and 1) and the smallest normal one.
        raw[:, 0] = rng.integers(100, 135, size=n_blocks)
        raw[:3, 0] = [0, 1, 2]
    return raw


def write_quant_types():
    rng = np.random.default_rng(20261122)
    writer = GGUFWriter(str(OUT / "quant_types.gguf"), "llama")
    writer.add_uint8("test.u8", 200)
    writer.add_int8("test.i8", -100)
    writer.add_uint16("test.u16", 60000)
    writer.add_int16("test.i16", -30000)
    writer.add_uint32("test.u32", 4000000000)
    writer.add_int32("test.i32", -2000000000)
    writer.add_float32("test.f32", 0.15625)
    writer.add_uint64("test.u64", 2**63 + 5)
    writer.add_int64("test.i64", -(2**62))
    writer.add_float64("test.f64", -2.5e-300)
    writer.add_bool("test.bool", True)
    writer.add_string("test.string", "héllo wörld ✓")
    writer.add_array("test.int_array", [1, -2, 3])
    writer.add_array("test.string_array", ["a", "ß", ""])
    writer.add_key_value("test.nested_array", [[1, 2], [3]], GGUFValueType.ARRAY, GGUFValueType.ARRAY)

    plain = rng.standard_normal((3, 64)).astype(np.float32)
    cases = [
        ("f32", plain, None),
        ("f16", plain.astype(np.float16), None),
        ("bf16", (plain.view(np.uint32) >> 16).astype(np.uint16).reshape(3, 64), Q.BF16),
    ]
    # MXFP4 last: the formats before it keep the random bytes they had before it was added.
    for qtype in (Q.Q8_0, Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.Q4_K, Q.Q5_K, Q.Q6_K, Q.MXFP4):
        block_elems, _ = GGML_QUANT_SIZES[qtype]
        rows, blocks_per_row = 2, max(1, 512 // block_elems)
        raw = random_blocks(rng, qtype, rows * blocks_per_row).reshape(rows, -1)
        cases.append((qtype.name.lower(), raw, qtype))
    for name, data, raw_dtype in cases:
        writer.add_tensor(name, data, raw_dtype=raw_dtype)
        qtype = raw_dtype if raw_dtype is not None else (Q.F16 if data.dtype == np.float16 else Q.F32)
        expected = dequantize(data.view(np.uint8) if raw_dtype else data, qtype).astype(np.float32)
        writer.add_tensor(name + ".expected", expected.reshape(data.shape[0], -1))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def write_model_checksums(model_path):
    reader = GGUFReader(model_path)
    entries = {}
    for tensor in reader.tensors:
        values = dequantize(tensor.data, tensor.tensor_type).astype("<f4")
        entries[tensor.name] = {
            "dtype": tensor.tensor_type.name,
            "shape": [int(d) for d in reversed(tensor.shape)],
            "xxh64": xxhash.xxh64(values.tobytes()).hexdigest(),
        }
    lines = [f" {json.dumps(k)}: {json.dumps(v)}" for k, v in sorted(entries.items())]
    (OUT / "smollm2_dequant.json").write_text("{\n" + ",\n".join(lines) + "\n}\n")


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    write_quant_types()
    write_model_checksums(sys.argv[1])
    print(f"wrote {OUT}/quant_types.gguf and smollm2_dequant.json")
