#include "model_files/tensor.h"

#include <limits>

#include "common/error.h"
#include "model_files/dequantize.h"

namespace xlacel {

namespace {
struct DTypeInfo {
  const char* name;
  std::size_t block_elements;
  std::size_t block_bytes;
};

DTypeInfo info(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return {"F32", 1, 4};
    case DType::kF16:
      return {"F16", 1, 2};
    case DType::kBF16:
      return {"BF16", 1, 2};
    case DType::kQ8_0:
      return {"Q8_0", 32, 34};
    case DType::kQ4_0:
      return {"Q4_0", 32, 18};
    case DType::kQ4_1:
      return {"Q4_1", 32, 20};
    case DType::kQ5_0:
      return {"Q5_0", 32, 22};
    case DType::kQ5_1:
      return {"Q5_1", 32, 24};
    case DType::kQ4_K:
      return {"Q4_K", 256, 144};
    case DType::kQ5_K:
      return {"Q5_K", 256, 176};
    case DType::kQ6_K:
      return {"Q6_K", 256, 210};
    case DType::kMXFP4:
      return {"MXFP4", 32, 17};
    case DType::kU8:
      return {"U8", 1, 1};
  }
  return {"?", 1, 1};
}
}  // namespace

const char* dtype_name(DType dtype) {
  return info(dtype).name;
}
std::size_t dtype_block_elements(DType dtype) {
  return info(dtype).block_elements;
}
std::size_t dtype_block_bytes(DType dtype) {
  return info(dtype).block_bytes;
}

int64_t TensorView::element_count() const {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

uint64_t tensor_byte_size(DType dtype, std::span<const int64_t> shape, const std::string& where) {
  constexpr uint64_t kLimit = uint64_t{1} << 48;  // far beyond any real tensor; stops overflow
  uint64_t elements = 1;
  for (int64_t dim : shape) {
    if (dim < 0) fail(where, "negative dimension {}", dim);
    if (dim != 0 && elements > kLimit / static_cast<uint64_t>(dim)) {
      fail(where, "element count overflows");
    }
    elements *= static_cast<uint64_t>(dim);
  }
  std::size_t block = dtype_block_elements(dtype);
  if (block > 1) {
    int64_t inner = shape.empty() ? 1 : shape.back();
    if (inner % static_cast<int64_t>(block) != 0) {
      fail(where, "{} needs the innermost dimension ({}) to be a multiple of {}", dtype_name(dtype),
           inner, block);
    }
  }
  return elements / block * dtype_block_bytes(dtype);
}

void check_tensor_bytes(const TensorView& tensor) {
  const uint64_t expected = tensor_byte_size(tensor.dtype, tensor.shape, tensor.name);
  if (expected != tensor.data.size()) {
    fail(tensor.name, "holds {} bytes, its dtype and shape need {}", tensor.data.size(), expected);
  }
}

std::vector<float> to_f32(const TensorView& tensor) {
  check_tensor_bytes(tensor);
  std::vector<float> out(static_cast<std::size_t>(tensor.element_count()));
  dequantize(tensor.dtype, tensor.data, out);
  return out;
}

}  // namespace xlacel
