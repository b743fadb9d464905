#include "model_files/dequantize.h"

#include "common/float16.h"

#include <bit>
#include <cstdint>
#include <cstring>

namespace xlacel {

namespace {

uint16_t load_u16(const std::byte* p) {
  uint16_t value;
  std::memcpy(&value, p, sizeof value);
  return value;
}
uint32_t load_u32(const std::byte* p) {
  uint32_t value;
  std::memcpy(&value, p, sizeof value);
  return value;
}
float load_half(const std::byte* p) {
  return half_to_float(load_u16(p));
}
uint8_t byte_at(const std::byte* p, std::size_t i) {
  return static_cast<uint8_t>(p[i]);
}

// 32-element blocks: low nibbles give elements 0..15, high nibbles 16..31.
void q4_0(const std::byte* block, float* out) {
  float d = load_half(block);
  for (int j = 0; j < 16; ++j) {
    uint8_t q = byte_at(block, 2 + j);
    out[j] = d * static_cast<float>((q & 0x0F) - 8);
    out[j + 16] = d * static_cast<float>((q >> 4) - 8);
  }
}

void q4_1(const std::byte* block, float* out) {
  float d = load_half(block);
  float m = load_half(block + 2);
  for (int j = 0; j < 16; ++j) {
    uint8_t q = byte_at(block, 4 + j);
    out[j] = d * static_cast<float>(q & 0x0F) + m;
    out[j + 16] = d * static_cast<float>(q >> 4) + m;
  }
}

// Fifth bit of element i is bit i of qh.
void q5_0(const std::byte* block, float* out) {
  float d = load_half(block);
  uint32_t qh = load_u32(block + 2);
  for (int j = 0; j < 16; ++j) {
    uint8_t q = byte_at(block, 6 + j);
    int low = (q & 0x0F) | static_cast<int>(((qh >> j) & 1) << 4);
    int high = (q >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
    out[j] = d * static_cast<float>(low - 16);
    out[j + 16] = d * static_cast<float>(high - 16);
  }
}

void q5_1(const std::byte* block, float* out) {
  float d = load_half(block);
  float m = load_half(block + 2);
  uint32_t qh = load_u32(block + 4);
  for (int j = 0; j < 16; ++j) {
    uint8_t q = byte_at(block, 8 + j);
    int low = (q & 0x0F) | static_cast<int>(((qh >> j) & 1) << 4);
    int high = (q >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
    out[j] = d * static_cast<float>(low) + m;
    out[j + 16] = d * static_cast<float>(high) + m;
  }
}

void q8_0(const std::byte* block, float* out) {
  float d = load_half(block);
  for (int j = 0; j < 32; ++j) {
    out[j] = static_cast<float>(static_cast<int8_t>(byte_at(block, 2 + j))) * d;
  }
}

// The 6-bit scales and mins of the K-quants, packed into 12 bytes.
void k_scale_min(const std::byte* scales, int index, uint8_t& scale, uint8_t& min) {
  if (index < 4) {
    scale = byte_at(scales, index) & 0x3F;
    min = byte_at(scales, index + 4) & 0x3F;
  } else {
    uint8_t packed = byte_at(scales, index + 4);
    scale = static_cast<uint8_t>((packed & 0x0F) | ((byte_at(scales, index - 4) >> 2) & 0x30));
    min = static_cast<uint8_t>((packed >> 4) | ((byte_at(scales, index) >> 2) & 0x30));
  }
}

// 256-element super-blocks of eight 32-element sub-blocks; sub-block 2c is the low nibbles of
// byte chunk c, sub-block 2c+1 its high nibbles.
void q4_k(const std::byte* block, float* out) {
  float d = load_half(block);
  float dmin = load_half(block + 2);
  const std::byte* scales = block + 4;
  const std::byte* qs = block + 16;
  for (int sub = 0; sub < 8; ++sub) {
    uint8_t scale, min;
    k_scale_min(scales, sub, scale, min);
    float factor = d * static_cast<float>(scale);
    float offset = dmin * static_cast<float>(min);
    int shift = (sub % 2) * 4;
    for (int l = 0; l < 32; ++l) {
      int q = (byte_at(qs, static_cast<std::size_t>((sub / 2) * 32 + l)) >> shift) & 0x0F;
      out[sub * 32 + l] = factor * static_cast<float>(q) - offset;
    }
  }
}

void q5_k(const std::byte* block, float* out) {
  float d = load_half(block);
  float dmin = load_half(block + 2);
  const std::byte* scales = block + 4;
  const std::byte* qh = block + 16;
  const std::byte* qs = block + 48;
  for (int sub = 0; sub < 8; ++sub) {
    uint8_t scale, min;
    k_scale_min(scales, sub, scale, min);
    float factor = d * static_cast<float>(scale);
    float offset = dmin * static_cast<float>(min);
    int shift = (sub % 2) * 4;
    for (int l = 0; l < 32; ++l) {
      int low = (byte_at(qs, static_cast<std::size_t>((sub / 2) * 32 + l)) >> shift) & 0x0F;
      int high = (byte_at(qh, static_cast<std::size_t>(l)) >> sub) & 1;
      out[sub * 32 + l] = factor * static_cast<float>(low | (high << 4)) - offset;
    }
  }
}

// Rows of 32: row r lies in 128-element half c = r / 4; its low 4 bits come from ql (low or
// high nibble, first or second 32 bytes of the half) and its top 2 bits from qh >> 2*(r % 4).
void q6_k(const std::byte* block, float* out) {
  const std::byte* ql = block;
  const std::byte* qh = block + 128;
  const std::byte* scales = block + 192;
  float d = load_half(block + 208);
  for (int row = 0; row < 8; ++row) {
    int half = row / 4, k = row % 4;
    for (int l = 0; l < 32; ++l) {
      int element = row * 32 + l;
      uint8_t low_byte = byte_at(ql, static_cast<std::size_t>(half * 64 + (k % 2) * 32 + l));
      int low = (k < 2 ? low_byte : low_byte >> 4) & 0x0F;
      int high = (byte_at(qh, static_cast<std::size_t>(half * 32 + l)) >> (2 * k)) & 0x03;
      int q = static_cast<int8_t>(low | (high << 4)) - 32;
      float scale = static_cast<float>(static_cast<int8_t>(byte_at(scales, element / 16)));
      out[element] = (d * scale) * static_cast<float>(q);
    }
  }
}

using BlockFn = void (*)(const std::byte*, float*);

void run_blocks(BlockFn fn, DType dtype, std::span<const std::byte> in, std::span<float> out) {
  std::size_t elements = dtype_block_elements(dtype), bytes = dtype_block_bytes(dtype);
  for (std::size_t b = 0; b * elements < out.size(); ++b) {
    fn(in.data() + b * bytes, out.data() + b * elements);
  }
}

}  // namespace

void dequantize(DType dtype, std::span<const std::byte> in, std::span<float> out) {
  switch (dtype) {
    case DType::kF32:
      if (!out.empty()) std::memcpy(out.data(), in.data(), out.size() * sizeof(float));
      return;
    case DType::kF16:
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = half_to_float(load_u16(&in[2 * i]));
      return;
    case DType::kBF16:
      for (std::size_t i = 0; i < out.size(); ++i) {
        out[i] = bfloat16_to_float(load_u16(&in[2 * i]));
      }
      return;
    case DType::kQ8_0:
      return run_blocks(q8_0, dtype, in, out);
    case DType::kQ4_0:
      return run_blocks(q4_0, dtype, in, out);
    case DType::kQ4_1:
      return run_blocks(q4_1, dtype, in, out);
    case DType::kQ5_0:
      return run_blocks(q5_0, dtype, in, out);
    case DType::kQ5_1:
      return run_blocks(q5_1, dtype, in, out);
    case DType::kQ4_K:
      return run_blocks(q4_k, dtype, in, out);
    case DType::kQ5_K:
      return run_blocks(q5_k, dtype, in, out);
    case DType::kQ6_K:
      return run_blocks(q6_k, dtype, in, out);
  }
}

}  // namespace xlacel
