#include "model_files/planar_blocks.h"

#include <bit>
#include <cstring>
#include <utility>

#include "common/float16.h"
#include "common/parallel_slices.h"
#include "model_files/little_endian.h"

namespace xlacel {

namespace {

uint16_t load_u16(const std::byte* p) {
  return load_little_endian<uint16_t>(p);
}
uint32_t load_u32(const std::byte* p) {
  return load_little_endian<uint32_t>(p);
}
float load_half(const std::byte* p) {
  return half_to_float(load_u16(p));
}
uint8_t byte_at(const std::byte* p, std::size_t i) {
  return static_cast<uint8_t>(p[i]);
}

// Where one block's planes go: its codes packed as planar_blocks.h keeps them (8-bit: one i8
// per element; else nibbles and the high bits above them), its groups' scales and offsets; for
// the two-level formats also the factors of each. Each format's codes are gathered straight
// from the block's bits into the packed layout, with no one-byte-per-element copy between (a 1B
// model's codes would be 1.2 GB of it at load).
struct BlockOut {
  int8_t* codes;
  int8_t* high_bits;  // 5- and 6-bit codes only
  float* scales;
  float* offsets;  // null for formats without a minimum
  int8_t* scale_codes = nullptr;
  float* super_scale = nullptr;
  int8_t* offset_codes = nullptr;
  float* super_offset = nullptr;
};

// Nibbles of one 32-element group: byte j holds element j's and element j + 16's, each taken
// from the low nibble of `low[j]` (at `shift` up) and of `low[j + 16]`. Eight bytes at a time in
// 64-bit words (the mask keeps each byte's nibble from its neighbour's bits): a byte at a time,
// with its variable shift, was most of the K-quants' conversion at load.
void put_nibbles(const std::byte* low, int shift, int8_t* nibbles) {
  constexpr uint64_t kNibbles = 0x0F0F0F0F0F0F0F0Full;
  for (int half = 0; half < 2; ++half) {
    const uint64_t first = load_little_endian<uint64_t>(low + 8 * half);
    const uint64_t second = load_little_endian<uint64_t>(low + 16 + 8 * half);
    const uint64_t packed = ((first >> shift) & kNibbles) | (((second >> shift) & kNibbles) << 4);
    std::memcpy(nibbles + 8 * half, &packed, 8);  // little-endian: byte j is bits 8j and up
  }
}

// One high bit per element of a 32-element group (element e's is bit(e)) into the 4 bytes of
// planar_blocks.h: byte j holds element j + 4s at bit s.
template <typename BitOf>
void put_high_bits1(const BitOf& bit, int8_t* high_bits) {
  for (int j = 0; j < 4; ++j) {
    unsigned byte = 0;
    for (int s = 0; s < 8; ++s) byte |= static_cast<unsigned>(bit(j + 4 * s)) << s;
    high_bits[j] = static_cast<int8_t>(byte);
  }
}

// Q4_0 and Q4_1 store their nibbles as planar_blocks.h keeps them: byte j has elements j and
// j + 16.
void q4_0(const std::byte* block, BlockOut out) {
  out.scales[0] = load_half(block);
  std::memcpy(out.codes, block + 2, 16);
}

void q4_1(const std::byte* block, BlockOut out) {
  out.scales[0] = load_half(block);
  out.offsets[0] = load_half(block + 2);
  std::memcpy(out.codes, block + 4, 16);
}

// Q5_0 and Q5_1: the same nibbles, and element e's fifth bit is bit e of qh.
void five_bit_codes(const std::byte* qs, uint32_t qh, BlockOut out) {
  std::memcpy(out.codes, qs, 16);
  put_high_bits1([qh](int e) { return (qh >> e) & 1; }, out.high_bits);
}

void q5_0(const std::byte* block, BlockOut out) {
  out.scales[0] = load_half(block);
  five_bit_codes(block + 6, load_u32(block + 2), out);
}

void q5_1(const std::byte* block, BlockOut out) {
  out.scales[0] = load_half(block);
  out.offsets[0] = load_half(block + 2);
  five_bit_codes(block + 8, load_u32(block + 4), out);
}

void q8_0(const std::byte* block, BlockOut out) {
  out.scales[0] = load_half(block);
  std::memcpy(out.codes, block + 2, 32);
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
// byte chunk c, sub-block 2c+1 its high nibbles. Q5_K adds bit `sub` of qh[l] as the fifth bit.
void k_quant(const std::byte* block, const std::byte* qh, const std::byte* qs, BlockOut out) {
  float d = load_half(block);
  float dmin = load_half(block + 2);
  *out.super_scale = d;
  *out.super_offset = -dmin;  // -(dmin * m) == (-dmin) * m, -0 included
  const std::byte* scales = block + 4;
  for (int sub = 0; sub < 8; ++sub) {
    uint8_t scale, min;
    k_scale_min(scales, sub, scale, min);
    if (out.scales != nullptr) {
      out.scales[sub] = d * static_cast<float>(scale);
      out.offsets[sub] = -(dmin * static_cast<float>(min));
    }
    out.scale_codes[sub] = static_cast<int8_t>(scale);
    out.offset_codes[sub] = static_cast<int8_t>(min);
    put_nibbles(qs + (sub / 2) * 32, (sub % 2) * 4, out.codes + sub * 16);
    if (qh != nullptr) {
      put_high_bits1(
          [qh, sub](int e) { return (byte_at(qh, static_cast<std::size_t>(e)) >> sub) & 1; },
          out.high_bits + sub * 4);
    }
  }
}

void q4_k(const std::byte* block, BlockOut out) {
  k_quant(block, nullptr, block + 16, out);
}

void q5_k(const std::byte* block, BlockOut out) {
  k_quant(block, block + 16, block + 48, out);
}

// Rows of 32: row r lies in 128-element half c = r / 4; its low 4 bits come from ql (low or
// high nibble, first or second 32 bytes of the half) and its top 2 bits from qh >> 2*(r % 4).
// One i8 scale per 16 elements. The high bits go in 8 bytes per row: byte j holds element
// j + 8s at bits 2s (planar_blocks.h).
void q6_k(const std::byte* block, BlockOut out) {
  const std::byte* ql = block;
  const std::byte* qh = block + 128;
  const std::byte* scales = block + 192;
  float d = load_half(block + 208);
  *out.super_scale = d;
  for (int group = 0; group < 16; ++group) {
    out.scale_codes[group] = static_cast<int8_t>(byte_at(scales, group));
    if (out.scales != nullptr) out.scales[group] = d * static_cast<float>(out.scale_codes[group]);
  }
  for (int row = 0; row < 8; ++row) {
    const int half = row / 4, k = row % 4;
    put_nibbles(ql + half * 64 + (k % 2) * 32, k < 2 ? 0 : 4, out.codes + row * 16);
    // Byte j of the row's 8 gathers bits 2k of qh bytes j + 8s at bits 2s, for all 8 bytes at
    // once in 64-bit words: the mask keeps each byte's field from its neighbour's bits, and a
    // field shifted up at most 6 stays in its byte (a byte at a time was a large part of a
    // model's weight conversion at load: docs/PERFORMANCE.md, "K-quant planes at load").
    const std::byte* high = qh + half * 32;
    uint64_t bytes = 0;
    for (int s = 0; s < 4; ++s) {
      const uint64_t word = load_little_endian<uint64_t>(high + 8 * s);
      bytes |= ((word >> (2 * k)) & 0x0303030303030303ull) << (2 * s);
    }
    std::memcpy(out.high_bits + row * 8, &bytes, 8);  // little-endian, as the file
  }
}

// MXFP4: an E8M0 exponent byte, then 16 bytes of E2M1 nibbles (byte j: element j low, j + 16
// high), which are the planes' nibbles as they stand; the exponent is kept as the scale's code.
void mxfp4(const std::byte* block, BlockOut out) {
  const uint8_t e = byte_at(block, 0);
  out.scale_codes[0] = static_cast<int8_t>(e);
  if (out.scales != nullptr) out.scales[0] = e8m0_half_scale(e);
  std::memcpy(out.codes, block + 1, 16);
}

using BlockFn = void (*)(const std::byte*, BlockOut);

// Calls visit.template operator()<F>() with the block function F of `dtype` (a constant, so
// that the loop calling it inlines it); false, without calling, for types that are not blocks.
template <typename Visit>
bool with_block_fn(DType dtype, const Visit& visit) {
  switch (dtype) {
    case DType::kQ8_0:
      visit.template operator()<q8_0>();
      return true;
    case DType::kQ4_0:
      visit.template operator()<q4_0>();
      return true;
    case DType::kQ4_1:
      visit.template operator()<q4_1>();
      return true;
    case DType::kQ5_0:
      visit.template operator()<q5_0>();
      return true;
    case DType::kQ5_1:
      visit.template operator()<q5_1>();
      return true;
    case DType::kQ4_K:
      visit.template operator()<q4_k>();
      return true;
    case DType::kQ5_K:
      visit.template operator()<q5_k>();
      return true;
    case DType::kQ6_K:
      visit.template operator()<q6_k>();
      return true;
    case DType::kMXFP4:
      visit.template operator()<mxfp4>();
      return true;
    default:
      return false;
  }
}

// Where element i's high bits (`bits` of them) lie in the high-bits plane: its byte, and the
// shift within it (planar_blocks.h).
std::pair<std::size_t, unsigned> high_bits_at(std::size_t i, int bits) {
  const auto per_block = static_cast<std::size_t>(4 * bits);  // bytes per 32 elements
  const std::size_t e = i % 32;
  return {(i / 32) * per_block + e % per_block,
          static_cast<unsigned>(bits) * static_cast<unsigned>(e / per_block)};
}

int code_at(const PlanarBlocks& planar, std::size_t i) {
  if (planar.code_bits == 8) return planar.codes[i];
  const auto byte = static_cast<uint8_t>(planar.codes[(i / 32) * 16 + i % 16]);
  int packed = i % 32 < 16 ? byte & 0x0F : byte >> 4;
  if (planar.e2m1) return kE2M1Doubled[packed];
  if (planar.code_bits > 4) {
    const int bits = planar.code_bits - 4;
    const auto [at, shift] = high_bits_at(i, bits);
    const auto high = static_cast<uint8_t>(planar.high_bits[at]) >> shift;
    packed |= (high & ((1 << bits) - 1)) << 4;
  }
  return packed + planar.code_bias;
}

// Blocks [begin, end) of `in` into `planar` (sized by to_planar), each by Convert, a block
// function the compiler inlines into this loop (called through a pointer, with each plane's
// null check per block, the call cost about as much as a Q8_0 block's conversion).
template <BlockFn Convert>
void convert_blocks_with(DType dtype, std::span<const std::byte> in, std::size_t begin,
                         std::size_t end, PlanarBlocks& planar) {
  const std::size_t block_elements = dtype_block_elements(dtype);
  const std::size_t block_bytes = dtype_block_bytes(dtype);
  const std::size_t groups_per_block = block_elements / static_cast<std::size_t>(planar.group_size);
  const std::size_t code_bytes = block_elements * (planar.code_bits == 8 ? 2 : 1) / 2;
  const std::size_t high_bytes = static_cast<std::size_t>(
      high_bits_row_bytes(planar.code_bits, static_cast<int64_t>(block_elements)));
  // Each plane's start, or null where the format (or to_planar's choice) has none.
  auto start = [](auto& plane) { return plane.empty() ? nullptr : plane.data(); };
  int8_t* const codes = planar.codes.data();
  int8_t* const high_bits = start(planar.high_bits);
  float* const scales = start(planar.scales);
  float* const offsets = start(planar.offsets);
  int8_t* const scale_codes = start(planar.scale_codes);
  float* const super_scales = start(planar.super_scales);
  int8_t* const offset_codes = start(planar.offset_codes);
  float* const super_offsets = start(planar.super_offsets);
  auto at = [](auto* plane, std::size_t offset) {
    return plane == nullptr ? nullptr : plane + offset;
  };
  for (std::size_t b = begin; b < end; ++b) {
    const std::size_t group = b * groups_per_block;
    BlockOut out{codes + b * code_bytes, at(high_bits, b * high_bytes), at(scales, group),
                 at(offsets, group)};
    out.scale_codes = at(scale_codes, group);
    out.super_scale = at(super_scales, b);
    out.offset_codes = at(offset_codes, group);
    out.super_offset = at(super_offsets, b);
    Convert(in.data() + b * block_bytes, out);
  }
}

void convert_blocks(DType dtype, std::span<const std::byte> in, std::size_t begin, std::size_t end,
                    PlanarBlocks& planar) {
  with_block_fn(dtype, [&]<BlockFn Convert>() {
    convert_blocks_with<Convert>(dtype, in, begin, end, planar);
  });
}

}  // namespace

bool is_block_quantized(DType dtype) {
  return with_block_fn(dtype, []<BlockFn>() {});
}

int64_t planar_group_size(DType dtype) {
  return dtype == DType::kQ6_K ? 16 : 32;
}

float e8m0_half_scale(uint8_t e) {
  return std::bit_cast<float>(e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23);
}

bool planar_codes_are_e2m1(DType dtype) {
  return dtype == DType::kMXFP4;
}

int planar_code_bits(DType dtype) {
  switch (dtype) {
    case DType::kMXFP4:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ4_K:
      return 4;
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kQ5_K:
      return 5;
    case DType::kQ6_K:
      return 6;
    default:
      return 8;
  }
}

bool planar_has_offsets(DType dtype) {
  return dtype == DType::kQ4_1 || dtype == DType::kQ5_1 || dtype == DType::kQ4_K ||
         dtype == DType::kQ5_K;
}

bool planar_scales_are_f16(DType dtype) {
  return dtype == DType::kQ8_0 || dtype == DType::kQ4_0 || dtype == DType::kQ4_1 ||
         dtype == DType::kQ5_0 || dtype == DType::kQ5_1;
}

bool planar_scales_are_two_level(DType dtype) {
  return dtype == DType::kQ4_K || dtype == DType::kQ5_K || dtype == DType::kQ6_K;
}

PlanarBlocks to_planar(DType dtype, std::span<const std::byte> in, std::size_t elements,
                       bool scale_products) {
  PlanarBlocks planar;
  planar.group_size = planar_group_size(dtype);
  planar.scales_f16 = planar_scales_are_f16(dtype);
  planar.e2m1 = planar_codes_are_e2m1(dtype);
  const auto group = static_cast<std::size_t>(planar.group_size);
  const int bits = planar_code_bits(dtype);
  const bool has_offsets = planar_has_offsets(dtype);
  if (bits < 8) {
    planar.code_bits = bits;
    planar.code_bias = packed_code_bias(bits, has_offsets, planar.e2m1);
  }
  // Packed planes: two nibbles per byte, and the bits above them (planar_blocks.h).
  planar.codes.resize(bits < 8 ? elements / 2 : elements);
  planar.high_bits.resize(
      static_cast<std::size_t>(high_bits_row_bytes(bits, static_cast<int64_t>(elements))));
  const bool products = scale_products || !(planar_scales_are_two_level(dtype) || planar.e2m1);
  if (products) planar.scales.resize(elements / group);
  if (products && has_offsets) planar.offsets.resize(elements / group);
  if (planar.e2m1) planar.scale_codes.resize(elements / group);
  const std::size_t block_elements = dtype_block_elements(dtype);
  if (planar_scales_are_two_level(dtype)) {
    planar.scale_codes.resize(elements / group);
    planar.super_scales.resize(elements / block_elements);
    if (has_offsets) {
      planar.offset_codes.resize(elements / group);
      planar.super_offsets.resize(elements / block_elements);
    }
  }
  const std::size_t blocks = (elements + block_elements - 1) / block_elements;
  for_each_slice(load_pass_threads(elements), blocks, [&](int, std::size_t begin, std::size_t end) {
    convert_blocks(dtype, in, begin, end, planar);
  });
  return planar;
}

void planar_to_f32(const PlanarBlocks& planar, std::span<float> out) {
  const auto group = static_cast<std::size_t>(planar.group_size);
  for (std::size_t i = 0; i < planar.scales.size() * group; ++i) {
    float value = planar.scales[i / group] * static_cast<float>(code_at(planar, i));
    out[i] = planar.offsets.empty() ? value : value + planar.offsets[i / group];
  }
}

bool can_pair_code_rows(int code_bits, int64_t rows, int64_t cols) {
  return code_bits == 4 && rows % 2 == 0 && (cols / 2) % kCodeLineBytes == 0;
}

void pair_code_rows(std::span<int8_t> codes, int64_t rows, int64_t row_bytes) {
  // In place, a pair at a time through a copy of it: no second buffer of the whole tensor, whose
  // fresh pages would cost a 1B model's load as much as converting it (the pages' first touch).
  const auto pair_bytes = static_cast<std::size_t>(2 * row_bytes);
  const int64_t lines = row_bytes / kCodeLineBytes;
  for_each_slice(load_pass_threads(codes.size()), static_cast<std::size_t>(rows / 2),
                 [&](int, std::size_t begin, std::size_t end) {
                   std::vector<int8_t> pair(pair_bytes);
                   for (std::size_t p = begin; p < end; ++p) {
                     int8_t* to = codes.data() + p * pair_bytes;
                     std::memcpy(pair.data(), to, pair_bytes);
                     for (int64_t line = 0; line < lines; ++line) {
                       for (int64_t row = 0; row < 2; ++row) {
                         std::memcpy(to + (2 * line + row) * kCodeLineBytes,
                                     pair.data() + row * row_bytes + line * kCodeLineBytes,
                                     kCodeLineBytes);
                       }
                     }
                   }
                 });
}

}  // namespace xlacel
