#!/usr/bin/env python3
"""Writes a copy of a GGUF file with its 2-D float weights quantized by gguf-py (Q4_0 or Q8_0),
every other tensor and all metadata as they are.

    tools/gpu/requantize_gguf.py IN.gguf OUT.gguf --type q4_0|q8_0

For the GPU machine (scripts/gpu-check's llama-gguf section): there, the BF16 GGUF that
llama.cpp's convert_hf_to_gguf.py writes from tools/gpu/make_random_llama.py's model becomes a
4-bit file without llama.cpp's llama-quantize, which is built for this CPU (GGML_NATIVE) and may
not run on that one. gguf-py's quantizers are numpy and follow ggml's reference rounding; every
weight quantized is a whole number of blocks per row (others are kept as stored).
"""
import argparse
import time

import gguf
import numpy as np

TYPES = {
    "q4_0": (gguf.GGMLQuantizationType.Q4_0, gguf.LlamaFileType.MOSTLY_Q4_0),
    "q8_0": (gguf.GGMLQuantizationType.Q8_0, gguf.LlamaFileType.MOSTLY_Q8_0),
}
FLOATS = (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16,
          gguf.GGMLQuantizationType.BF16)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--type", choices=sorted(TYPES), required=True)
    args = parser.parse_args()
    qtype, file_type = TYPES[args.type]
    block = gguf.GGML_QUANT_SIZES[qtype][0]
    started = time.perf_counter()

    reader = gguf.GGUFReader(args.input)
    architecture = reader.fields[gguf.Keys.General.ARCHITECTURE].contents()
    writer = gguf.GGUFWriter(args.output, architecture)
    for field in reader.fields.values():
        # The architecture and the GGUF.* fields are the writer's own.
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue
        kind = field.types[0]
        sub_type = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        value = int(file_type) if field.name == gguf.Keys.General.FILE_TYPE else field.contents()
        writer.add_key_value(field.name, value, kind, sub_type=sub_type)

    quantized = 0
    for tensor in reader.tensors:
        # GGUF shapes list the row length first.
        row = int(tensor.shape[0])
        if tensor.tensor_type in FLOATS and len(tensor.shape) == 2 and row % block == 0:
            values = gguf.quants.dequantize(tensor.data, tensor.tensor_type).astype(np.float32)
            data = gguf.quants.quantize(values, qtype)
            writer.add_tensor(tensor.name, data, raw_dtype=qtype)
            quantized += 1
        else:
            # Byte shapes for the quantized types: the writer turns them into element shapes.
            writer.add_tensor(tensor.name, tensor.data, raw_dtype=tensor.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    print(f"{args.output}: {quantized} of {len(reader.tensors)} tensors as {args.type} "
          f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
