#pragma once
// A tensor as the model files hold it: element type, shape (outermost dimension first, as HF
// and StableHLO order it) and a view of its bytes inside a memory-mapped file.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace xlacel {

// Plain float types and the GGML block-quantized types xlacel reads.
enum class DType {
  kF32,
  kF16,
  kBF16,
  kQ8_0,
  kQ4_0,
  kQ4_1,
  kQ5_0,
  kQ5_1,
  kQ4_K,
  kQ5_K,
  kQ6_K,
  kMXFP4,  // gpt-oss's experts: 32 E2M1 codes under one E8M0 (power of two) scale
  // Bytes of a published quantized checkpoint (gpt-oss's MXFP4 blocks and their exponents in
  // safetensors): read as what they pack, never as numbers.
  kU8,
};

const char* dtype_name(DType dtype);
// Elements per block (1 for plain types) and bytes per block.
std::size_t dtype_block_elements(DType dtype);
std::size_t dtype_block_bytes(DType dtype);

struct TensorView {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::span<const std::byte> data;

  int64_t element_count() const;
};

// Bytes a tensor of this type and shape occupies; nullopt-like 0 is never returned for a valid
// shape. Throws Error (naming `where`) when the element count overflows or the innermost
// dimension is not a multiple of the block size.
uint64_t tensor_byte_size(DType dtype, std::span<const int64_t> shape, const std::string& where);

// Throws Error naming the tensor unless it holds exactly the bytes its dtype and shape need.
void check_tensor_bytes(const TensorView& tensor);

// Dequantizes or widens any supported dtype to f32, bit-exact with the gguf Python package.
std::vector<float> to_f32(const TensorView& tensor);

}  // namespace xlacel
