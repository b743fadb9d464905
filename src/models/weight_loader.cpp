#include "models/weight_loader.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <span>

#include "common/error.h"
#include "common/float16.h"
#include "model_files/planar_blocks.h"
#include "models/architecture.h"
#include "models/rope_frequencies.h"

namespace xlacel::models {

namespace {

using stablehlo::ElementType;

}  // namespace

template <typename T, typename Allocator>
std::vector<T, Allocator> reverse_permute_rows(const std::vector<T, Allocator>& rows,
                                               int64_t n_head, int64_t columns) {
  const int64_t total_rows = static_cast<int64_t>(rows.size()) / columns;
  const int64_t head_rows = total_rows / n_head;
  const int64_t half = head_rows / 2;
  std::vector<T, Allocator> out(rows.size());
  for (int64_t h = 0; h < n_head; ++h) {
    for (int64_t i = 0; i < half; ++i) {
      for (int64_t r = 0; r < 2; ++r) {
        const int64_t from = h * head_rows + 2 * i + r;
        const int64_t to = h * head_rows + r * half + i;
        std::memcpy(&out[static_cast<size_t>(to * columns)],
                    &rows[static_cast<size_t>(from * columns)],
                    static_cast<size_t>(columns) * sizeof(T));
      }
    }
  }
  return out;
}
template std::vector<float> reverse_permute_rows(const std::vector<float>&, int64_t, int64_t);

namespace {

// The file tensor behind `spec`, checked against the weight's shape `shape` (a plane's spec has
// its own) or, for a row range of a fused tensor, the whole tensor's.
// Whether `spec` is a row range of a fused (or, in GGUF, stacked) file tensor.
const WeightSpec::FileRows& file_rows(const ModelFiles& files, const WeightSpec& spec) {
  return files.format() == ModelFiles::Format::kGguf ? spec.gguf_rows : spec.hf_rows;
}
bool takes_rows(const ModelFiles& files, const WeightSpec& spec) {
  return file_rows(files, spec).total > 0;
}

TensorView find_weight_tensor(const ModelFiles& files, const WeightSpec& spec,
                              std::vector<int64_t> shape) {
  const bool rows = takes_rows(files, spec);
  if (rows) shape[0] = file_rows(files, spec).total;
  const std::string& name =
      files.format() == ModelFiles::Format::kGguf ? spec.gguf_name : spec.hf_name;
  auto tensor = files.find_tensor(name);
  if (!tensor) fail(files.path(), "tensor '{}' not found (for argument {})", name, spec.name);
  // A fused or stacked tensor counts its rows over all its dimensions but the last.
  std::vector<int64_t> got = tensor->shape;
  if (rows && got.size() > 2) {
    int64_t outer = 1;
    for (size_t d = 0; d + 1 < got.size(); ++d) outer *= got[d];
    got = {outer, got.back()};
  }
  // HF keeps a depthwise convolution's weight as [channels, 1, taps]; llama.cpp's converter
  // squeezes it, as the argument is: dimensions of one are not compared.
  auto squeezed = [](std::vector<int64_t> dims) {
    std::erase(dims, int64_t{1});
    return dims;
  };
  // A vector is the same vector in any shape of its count (llama.cpp stores Mamba's grouped norm
  // weight [groups, inner / groups]).
  auto count = [](const std::vector<int64_t>& dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  };
  const bool same_vector = shape.size() == 1 && count(got) == shape[0];
  if (got != shape && !same_vector &&
      (shape.size() == got.size() || squeezed(got) != squeezed(shape))) {
    fail(files.path(), "tensor '{}' has shape [{}], expected [{}]", name,
         fmt::join(tensor->shape, ", "), fmt::join(shape, ", "));
  }
  return *tensor;
}

// Whether `spec` is one matrix of a stacked HF tensor (WeightSpec::hf_stacked).
bool takes_stacked(const ModelFiles& files, const WeightSpec& spec) {
  return spec.hf_stacked >= 0 && files.format() == ModelFiles::Format::kHuggingFaceDirectory;
}

// Matrix hf_stacked of the stacked tensor, its interleaved columns taken and transposed as the
// spec says, in f32: only that matrix's bytes are widened.
std::vector<float> stacked_matrix(const ModelFiles& files, const WeightSpec& spec) {
  auto tensor = files.find_tensor(spec.hf_name);
  if (!tensor)
    fail(files.path(), "tensor '{}' not found (for argument {})", spec.hf_name, spec.name);
  const std::vector<int64_t>& shape = tensor->shape;
  const int64_t step = spec.hf_interleave;
  if ((shape.size() != 2 && shape.size() != 3) || spec.hf_stacked >= shape[0] ||
      shape.back() % step != 0 || dtype_block_elements(tensor->dtype) != 1) {
    fail(files.path(), "tensor '{}' of shape [{}] does not stack matrix {} of argument {}",
         spec.hf_name, fmt::join(shape, ", "), spec.hf_stacked, spec.name);
  }
  const int64_t rows = shape.size() == 3 ? shape[1] : 1, columns = shape.back();
  const auto element_bytes = static_cast<std::size_t>(dtype_block_bytes(tensor->dtype));
  const auto matrix_bytes = static_cast<std::size_t>(rows * columns) * element_bytes;
  TensorView one{
      tensor->name,
      tensor->dtype,
      {rows, columns},
      tensor->data.subspan(static_cast<std::size_t>(spec.hf_stacked) * matrix_bytes, matrix_bytes)};
  const std::vector<float> all = to_f32(one);
  const int64_t taken = columns / step;
  std::vector<float> values(static_cast<std::size_t>(rows * taken));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < taken; ++c) {
      const float value =
          all[static_cast<std::size_t>(r * columns + c * step + spec.hf_interleave_offset)];
      const int64_t at = spec.hf_transposed ? c * rows + r : r * taken + c;
      values[static_cast<std::size_t>(at)] = value;
    }
  }
  int64_t expected = 1;
  for (int64_t d : spec.shape) expected *= d;
  if (expected != static_cast<int64_t>(values.size())) {
    fail(files.path(), "tensor '{}' gives {} values for argument {} of shape [{}]", spec.hf_name,
         values.size(), spec.name, fmt::join(spec.shape, ", "));
  }
  return values;
}

// A tensor made on the host: its bytes and the view of them.
struct MadeTensor {
  std::vector<std::byte> bytes;
  TensorView view;
};

constexpr int64_t kMxfp4BlockElements = 32;
constexpr int64_t kMxfp4BlockBytes = 17;  // GGUF's block: the E8M0 exponent, then 16 code bytes

// gpt-oss's experts as OpenAI publishes them (quant_method mxfp4): hf_name + "_blocks" [E, R,
// C / 32, 16] and "_scales" [E, R, C / 32], bytes. Where the spec reads such a stack, its matrices
// (rows every hf_interleave-th from hf_interleave_offset: gate and up interleave by rows) as GGUF's
// MXFP4 blocks of `shape` [E, rows, C], which the planes and the f32 values are then read from as a
// GGUF's. The published block holds element 2i in byte i's low nibble and 2i + 1 in its high one
// (transformers' convert_moe_packed_tensors); GGUF's byte j holds j and j + 16. Both exponents are
// E8M0 bytes of the same scale.
std::optional<MadeTensor> published_mxfp4(const ModelFiles& files, const WeightSpec& spec,
                                          const std::vector<int64_t>& shape) {
  if (spec.hf_experts <= 0 || files.format() != ModelFiles::Format::kHuggingFaceDirectory) {
    return std::nullopt;
  }
  const auto blocks = files.find_tensor(spec.hf_name + "_blocks");
  if (!blocks) return std::nullopt;
  const auto scales = files.find_tensor(spec.hf_name + "_scales");
  const int64_t experts = shape[0], rows = shape.size() == 3 ? shape[1] : 0;
  const int64_t columns = shape.back(), groups = columns / kMxfp4BlockElements;
  const int64_t step = spec.hf_interleave, source_rows = rows * step;
  const std::vector<int64_t> block_shape = {experts, source_rows, groups, 16};
  const std::vector<int64_t> scale_shape = {experts, source_rows, groups};
  if (!scales || blocks->dtype != DType::kU8 || scales->dtype != DType::kU8 || rows == 0 ||
      columns % kMxfp4BlockElements != 0 || blocks->shape != block_shape ||
      scales->shape != scale_shape) {
    fail(files.path(),
         "tensors '{0}_blocks' and '{0}_scales' are not MXFP4 blocks [{1}] and exponents [{2}] for "
         "argument {3}",
         spec.hf_name, fmt::join(block_shape, ", "), fmt::join(scale_shape, ", "), spec.name);
  }
  MadeTensor made;
  made.bytes.resize(static_cast<std::size_t>(experts * rows * groups * kMxfp4BlockBytes));
  const auto* packed = reinterpret_cast<const uint8_t*>(blocks->data.data());
  const auto* exponents = reinterpret_cast<const uint8_t*>(scales->data.data());
  auto* out = reinterpret_cast<uint8_t*>(made.bytes.data());
  for (int64_t e = 0; e < experts; ++e) {
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t source = (e * source_rows + r * step + spec.hf_interleave_offset) * groups;
      for (int64_t g = 0; g < groups; ++g) {
        const uint8_t* in = packed + (source + g) * 16;
        uint8_t codes[kMxfp4BlockElements];
        for (int i = 0; i < 16; ++i) {
          codes[2 * i] = in[i] & 0x0F;
          codes[2 * i + 1] = static_cast<uint8_t>(in[i] >> 4);
        }
        uint8_t* block = out + ((e * rows + r) * groups + g) * kMxfp4BlockBytes;
        block[0] = exponents[source + g];
        for (int j = 0; j < 16; ++j)
          block[1 + j] = static_cast<uint8_t>(codes[j] | codes[j + 16] << 4);
      }
    }
  }
  made.view = {spec.hf_name + "_blocks",
               DType::kMXFP4,
               {experts, rows, columns},
               std::span<const std::byte>(made.bytes)};
  return made;
}

// Whether `spec` stacks experts read one by one from HF files (WeightSpec::hf_experts).
bool takes_experts(const ModelFiles& files, const WeightSpec& spec) {
  return spec.hf_experts > 0 && files.format() == ModelFiles::Format::kHuggingFaceDirectory;
}

std::vector<float> experts_f32(const ModelFiles& files, const WeightSpec& spec);

// Heads whose rows llama.cpp permuted in this GGUF tensor and the graphs take un-permuted (0:
// none; ModelConfig::qk_rows_interleaved).
int64_t permuted_heads(const ModelFiles& files, const TensorView& tensor) {
  const ModelConfig& config = files.config();
  if (files.format() != ModelFiles::Format::kGguf || !gguf_permutes_qk(config.architecture) ||
      config.qk_rows_interleaved) {
    return 0;
  }
  // The decoder's layers only: an mmproj's encoder (v.blk.N.attn_q, ...) is stored unpermuted.
  if (tensor.shape.size() != 2 || !tensor.name.starts_with("blk.")) return 0;
  if (tensor.name.ends_with(".attn_q.weight")) return config.num_heads;
  if (tensor.name.ends_with(".attn_k.weight")) return config.num_kv_heads;
  return 0;
}

template <typename Vector>
void unpermute(const ModelFiles& files, const TensorView& tensor, Vector& rows, int64_t columns) {
  if (int64_t heads = permuted_heads(files, tensor)) {
    rows = reverse_permute_rows(rows, heads, columns);
  }
}

// Rows [row, row + rows) of a fused tensor's `values` (`columns` per row).
template <typename Vector>
void take_source_rows(const ModelFiles& files, const WeightSpec& spec, Vector& values, int64_t rows,
                      int64_t columns) {
  if (!takes_rows(files, spec)) return;
  const auto begin =
      values.begin() + static_cast<std::ptrdiff_t>(file_rows(files, spec).row * columns);
  values = Vector(begin, begin + static_cast<std::ptrdiff_t>(rows * columns));
}

// A file tensor's `values` as the weight's rows: a fused tensor's rows taken, a permuted one's
// restored.
template <typename Vector>
void as_weight_rows(const ModelFiles& files, const WeightSpec& spec, const TensorView& tensor,
                    Vector& values) {
  const int64_t columns = spec.shape.size() > 1 ? spec.shape.back() : 1;
  take_source_rows(files, spec, values, spec.shape[0], columns);
  if (spec.shape.size() == 2) unpermute(files, tensor, values, columns);
}

// `values` as the host tensor of `spec`, moved into it (an AlignedVector's bytes can become a
// device buffer in place: device.h, upload_in_place).
template <typename T, typename Allocator>
HostTensor host_tensor(const WeightSpec& spec, std::vector<T, Allocator> values) {
  auto owner = std::make_shared<const std::vector<T, Allocator>>(std::move(values));
  return {spec, std::as_bytes(std::span(*owner)), owner, std::nullopt};
}

// f32 values as a host tensor of the spec's element type (f32, f16 or bf16). Exact where the
// values are numbers of that type: f16/bf16 weights kept narrow by kAuto, the scale and offset
// planes of the formats that store them as f16 (planar_scales_are_f16), and the two-level
// formats' factors per super-block.
template <typename Allocator>
HostTensor in_element_type(const WeightSpec& spec, std::vector<float, Allocator> values) {
  if (spec.element == ElementType::kF32) return host_tensor(spec, std::move(values));
  AlignedVector<uint16_t> narrow(values.size());
  if (spec.element == ElementType::kBF16) {
    floats_to_bfloat16s(values, narrow);
  } else {
    floats_to_halves(values, narrow);
  }
  return host_tensor(spec, std::move(narrow));
}

// The planes of a block-format weight: every spec of `planes` (codes, scales, offsets) from one
// decomposition of the tensor.
std::vector<HostTensor> prepare_planes(const ModelFiles& files,
                                       std::span<const WeightSpec> planes) {
  const WeightSpec& codes = planes.front();
  const WeightSpec& scales = *std::find_if(planes.begin(), planes.end(), [](const WeightSpec& s) {
    return s.part == WeightPart::kScales;
  });
  // The codes plane's shape is in bytes (nibbles hold two codes); the file's is in elements.
  // Stacked experts ([E, rows, bytes]) count their rows over both leading axes.
  const int64_t columns = scales.shape.back() * planar_group_size(codes.stored);
  std::vector<int64_t> shape = codes.shape;
  shape.back() = columns;
  const std::optional<MadeTensor> published = published_mxfp4(files, codes, shape);
  TensorView tensor = published ? published->view : find_weight_tensor(files, codes, shape);
  if (tensor.dtype != codes.stored) {
    fail(files.path(), "tensor '{}' is {}, the graph expects {}", tensor.name,
         dtype_name(tensor.dtype), dtype_name(codes.stored));
  }
  check_tensor_bytes(tensor);
  // Two-level formats are uploaded as their factors (scale_codes, super_scales, ...) and E2M1's
  // scales as their exponents, not as the f32 products.
  PlanarBlocks planar =
      to_planar(tensor.dtype, tensor.data, static_cast<std::size_t>(tensor.element_count()),
                /*scale_products=*/false);
  if (!published) files.release(tensor);
  int64_t rows = 1;
  for (std::size_t d = 0; d + 1 < codes.shape.size(); ++d) rows *= codes.shape[d];
  const int64_t groups = scales.shape.back();
  const int64_t supers = columns / kSuperGroupSize;
  const bool two_level = !planar.super_scales.empty();
  const bool scale_codes = !planar.scale_codes.empty();  // two-level, or E2M1's exponents
  // Each plane's rows as the argument's: a fused tensor's rows taken, a permuted one's restored.
  auto as_argument_rows = [&](auto& plane, int64_t per_row) {
    if (plane.empty()) return;
    take_source_rows(files, codes, plane, rows, per_row);
    unpermute(files, tensor, plane, per_row);
  };
  as_argument_rows(planar.codes, codes.shape.back());
  as_argument_rows(planar.scales, groups);
  as_argument_rows(planar.offsets, groups);
  as_argument_rows(planar.scale_codes, groups);
  as_argument_rows(planar.offset_codes, groups);
  as_argument_rows(planar.super_scales, supers);
  as_argument_rows(planar.super_offsets, supers);
  as_argument_rows(planar.high_bits, high_bits_row_bytes(planar.code_bits, columns));
  if (codes.paired_rows) pair_code_rows(planar.codes, rows, codes.shape.back());
  std::vector<HostTensor> result;
  for (const WeightSpec& spec : planes) {
    switch (spec.part) {
      case WeightPart::kCodes:
        result.push_back(host_tensor(spec, std::move(planar.codes)));
        break;
      case WeightPart::kScales:
        result.push_back(scale_codes ? host_tensor(spec, std::move(planar.scale_codes))
                                     : in_element_type(spec, std::move(planar.scales)));
        break;
      case WeightPart::kOffsets:
        result.push_back(two_level ? host_tensor(spec, std::move(planar.offset_codes))
                                   : in_element_type(spec, std::move(planar.offsets)));
        break;
      case WeightPart::kSuperScales:
        result.push_back(in_element_type(spec, std::move(planar.super_scales)));
        break;
      case WeightPart::kSuperOffsets:
        result.push_back(in_element_type(spec, std::move(planar.super_offsets)));
        break;
      case WeightPart::kHighBits:
        result.push_back(host_tensor(spec, std::move(planar.high_bits)));
        break;
      case WeightPart::kValues:
        break;
    }
  }
  return result;
}

}  // namespace

std::vector<float> load_weight_f32(const ModelFiles& files, const WeightSpec& spec) {
  const ModelConfig& config = files.config();
  if (spec.rope_inv_freq && spec.rope_local) {
    ModelConfig local = config;
    local.rope_theta = config.rope_local_theta;
    local.rope_scaling = config.rope_local_scaling;
    return rope_inverse_frequencies(local);
  }
  if (spec.rope_inv_freq) {
    std::vector<float> factors;
    // GGUF: llama3 scaling as rope_freqs.weight; LongRoPE's short factors as
    // rope_factors_short.weight (HF configs list them).
    const char* factors_tensor = config.rope_scaling.type == RopeScaling::Type::kFrequencyFactors
                                     ? "rope_freqs.weight"
                                 : config.rope_scaling.type == RopeScaling::Type::kLongRope &&
                                         config.rope_scaling.short_factor.empty()
                                     ? "rope_factors_short.weight"
                                     : nullptr;
    if (factors_tensor != nullptr) {
      auto tensor = files.find_tensor(factors_tensor);
      if (!tensor) fail(files.path(), "tensor '{}' not found", factors_tensor);
      factors = to_f32(*tensor);
    }
    return rope_inverse_frequencies(config, factors);
  }
  if (std::optional<MadeTensor> published = published_mxfp4(files, spec, spec.shape)) {
    return to_f32(published->view);
  }
  if (takes_experts(files, spec)) return experts_f32(files, spec);
  if (takes_stacked(files, spec)) return stacked_matrix(files, spec);
  TensorView tensor = find_weight_tensor(files, spec, spec.shape);
  std::vector<float> values = to_f32(tensor);
  files.release(tensor);
  as_weight_rows(files, spec, tensor, values);
  // Per element, so it holds wherever the rows moved.
  if (files.format() == ModelFiles::Format::kGguf && spec.gguf_add != 0.0f) {
    for (float& v : values) v = v + spec.gguf_add;
  }
  if (files.format() == ModelFiles::Format::kHuggingFaceDirectory && spec.hf_negative_exp) {
    for (float& v : values) v = -std::exp(v);
  }
  return values;
}

namespace {

// Every expert's matrix of a stacked argument, expert after expert, in f32.
std::vector<float> experts_f32(const ModelFiles& files, const WeightSpec& spec) {
  std::vector<float> values;
  for (int64_t x = 0; x < spec.hf_experts; ++x) {
    const std::vector<float> one = load_weight_f32(files, hf_expert_spec(spec, x));
    values.insert(values.end(), one.begin(), one.end());
  }
  return values;
}

// The file's type for a weight of `element` stored as the graph takes it, or none.
std::optional<DType> stored_dtype(ElementType element) {
  switch (element) {
    case ElementType::kF32:
      return DType::kF32;
    case ElementType::kBF16:
      return DType::kBF16;
    case ElementType::kF16:
      return DType::kF16;
    default:
      return std::nullopt;
  }
}

// `tensor`'s elements (of type T, the size of the file's) as the weight's rows.
template <typename T>
HostTensor copied_rows(const ModelFiles& files, const WeightSpec& spec, const TensorView& tensor) {
  AlignedVector<T> values(static_cast<std::size_t>(tensor.element_count()));
  std::memcpy(values.data(), tensor.data.data(), values.size() * sizeof(T));
  files.release(tensor);
  as_weight_rows(files, spec, tensor, values);
  return host_tensor(spec, std::move(values));
}

// A weight the file stores in the graph's own element type (f32, bf16, f16): its bits as
// stored, without a round trip through f32, which widened and narrowed every value on one core
// (docs/PERFORMANCE.md, "Stored bits as is"), and without a copy at all where no
// rows move (the file's bytes, which the device uses in place or copies). None for other weights
// (another type, a value added or transformed, a computed weight).
std::optional<HostTensor> stored_as_is(const ModelFiles& files, const WeightSpec& spec) {
  const std::optional<DType> dtype = stored_dtype(spec.element);
  if (!dtype || spec.rope_inv_freq || takes_stacked(files, spec) || takes_experts(files, spec)) {
    return std::nullopt;
  }
  if (files.format() == ModelFiles::Format::kGguf && spec.gguf_add != 0.0f) return std::nullopt;
  if (files.format() == ModelFiles::Format::kHuggingFaceDirectory && spec.hf_negative_exp) {
    return std::nullopt;
  }
  TensorView tensor = find_weight_tensor(files, spec, spec.shape);
  if (tensor.dtype != *dtype) return std::nullopt;
  check_tensor_bytes(tensor);
  if (!takes_rows(files, spec) && permuted_heads(files, tensor) == 0) {
    return HostTensor{spec, tensor.data, files.holder(tensor), tensor};
  }
  return *dtype == DType::kF32 ? copied_rows<uint32_t>(files, spec, tensor)
                               : copied_rows<uint16_t>(files, spec, tensor);
}

}  // namespace

HostTensor prepare_weight(const ModelFiles& files, const WeightSpec& spec) {
  if (std::optional<HostTensor> stored = stored_as_is(files, spec)) return std::move(*stored);
  // Other weights kept narrow by kAuto go through f32 and back: exact both ways.
  return in_element_type(spec, load_weight_f32(files, spec));
}

void for_each_weight(const ModelFiles& files, WeightType type, bool paired_nibbles,
                     const std::function<void(const HostTensor&)>& callback) {
  const Architecture& architecture = architecture_for(files.config(), files.path());
  const std::vector<WeightSpec> specs =
      architecture.weight_arguments(files.config(), type, paired_nibbles);
  for (std::size_t i = 0; i < specs.size();) {
    if (specs[i].part != WeightPart::kCodes) {
      callback(prepare_weight(files, specs[i++]));
      continue;
    }
    // A block-format weight: its codes spec and the plane specs that follow it.
    std::size_t end = i + 1;
    while (end < specs.size() && specs[end].part != WeightPart::kValues &&
           specs[end].part != WeightPart::kCodes) {
      ++end;
    }
    for (const HostTensor& plane : prepare_planes(files, std::span(specs).subspan(i, end - i))) {
      callback(plane);
    }
    i = end;
  }
}

}  // namespace xlacel::models
