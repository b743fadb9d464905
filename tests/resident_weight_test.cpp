// Weights resident in their file's block format (models/resident_weight.h), on every runtime:
// the graph's dequantization gives bit-for-bit the gguf package's values (the reference data in
// quant_types.gguf), for every GGML block format; the fused one-row product and the row lookup
// agree with them; the runtime's hand-written planar product (where it has one) agrees with the
// graph's own. Plus the resident specs of the default model.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backends.h"
#include "common/error.h"
#include "common/float16.h"
#include "compile_cache/iree_compiler.h"
#include "model_files/gguf_file.h"
#include "model_files/model_files.h"
#include "model_files/planar_blocks.h"
#include "models/architecture.h"
#include "models/llama_layers.h"
#include "models/resident_weight.h"
#include "runtime_availability.h"
#include "stablehlo/module.h"
#include "stablehlo/ops.h"
#include "test_paths.h"

namespace xlacel {
namespace {

// Every block-quantized tensor of `gguf` (the test file holds one of each format).
std::vector<TensorView> block_quantized_tensors(const GgufFile& gguf) {
  std::vector<TensorView> tensors;
  for (const auto& info : gguf.tensor_infos()) {
    TensorView tensor = gguf.tensor(info);
    if (is_block_quantized(tensor.dtype)) tensors.push_back(std::move(tensor));
  }
  return tensors;
}

using stablehlo::ElementType;
using stablehlo::TensorType;
using stablehlo::Value;

template <typename T>
std::span<const std::byte> bytes_of(const std::vector<T>& values) {
  return std::as_bytes(std::span(values));
}

// f32 values as f16 bytes, each exactly.
std::vector<std::byte> half_bytes(std::span<const float> values) {
  std::vector<uint16_t> narrow(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    narrow[i] = float_to_half(values[i]);
    EXPECT_EQ(half_to_float(narrow[i]), values[i]) << "not an f16 number";
  }
  auto bytes = std::as_bytes(std::span(narrow));
  return {bytes.begin(), bytes.end()};
}

template <typename T>
std::vector<std::byte> byte_copy(std::span<const T> values) {
  auto bytes = std::as_bytes(std::span(values));
  return {bytes.begin(), bytes.end()};
}

// One plane of a weight as the loader keeps it.
struct Plane {
  std::string name;
  ElementType element;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;
};

// The planes of a rows x cols weight in argument order, as the loader keeps them: codes (bytes
// or nibbles), the high bits of 5- and 6-bit codes, scales, offsets (formats with a minimum), and
// the two-level formats' f16 factors of each (E2M1 codes: their scales as E8M0 exponent bytes).
// `paired`: 4-bit codes in row pairs
// (pair_code_rows), as the loader keeps them for a kernel that takes them so.
std::vector<Plane> planes_of(const PlanarBlocks& planar, int64_t rows, int64_t cols,
                             bool paired = false) {
  const std::vector<int64_t> groups = {rows, cols / planar.group_size};
  const std::vector<int64_t> supers = {rows, cols / kSuperGroupSize};
  const bool two_level = !planar.super_scales.empty();
  auto factors = [&](const char* name, std::span<const float> values,
                     std::span<const int8_t> codes) -> Plane {
    if (two_level || planar.e2m1) return {name, ElementType::kI8, groups, byte_copy(codes)};
    if (planar.scales_f16) return {name, ElementType::kF16, groups, half_bytes(values)};
    return {name, ElementType::kF32, groups, byte_copy(values)};
  };
  const int64_t code_bytes = planar.code_bits == 8 ? cols : cols / 2;
  AlignedVector<int8_t> codes = planar.codes;
  if (paired) pair_code_rows(codes, rows, code_bytes);
  std::vector<Plane> planes = {
      {"codes", ElementType::kI8, {rows, code_bytes}, byte_copy(std::span<const int8_t>(codes))}};
  if (!planar.high_bits.empty()) {
    planes.push_back({"high_bits",
                      ElementType::kI8,
                      {rows, high_bits_row_bytes(planar.code_bits, cols)},
                      byte_copy(std::span<const int8_t>(planar.high_bits))});
  }
  planes.push_back(factors("scales", planar.scales, planar.scale_codes));
  if (!planar.offsets.empty()) {
    planes.push_back(factors("offsets", planar.offsets, planar.offset_codes));
  }
  if (two_level) {
    planes.push_back({"super_scales", ElementType::kF16, supers, half_bytes(planar.super_scales)});
  }
  if (two_level && !planar.offsets.empty()) {
    planes.push_back(
        {"super_offsets", ElementType::kF16, supers, half_bytes(planar.super_offsets)});
  }
  return planes;
}

// The planes of a rows x cols weight as arguments of `f` (planes_of's order).
models::Weight planar_arguments(stablehlo::Function& f, const PlanarBlocks& planar, int64_t rows,
                                int64_t cols, bool paired = false) {
  std::map<std::string, Value> arguments;
  for (const Plane& plane : planes_of(planar, rows, cols, paired)) {
    arguments.emplace("w_" + plane.name,
                      f.argument(plane.name, TensorType(plane.element, plane.shape)));
  }
  if (planar.code_bits < 8) {
    arguments.emplace(paired        ? "w_paired_nibbles"
                      : planar.e2m1 ? "w_e2m1_nibbles"
                                    : "w_nibbles",
                      arguments.at("w_codes"));
    arguments.erase("w_codes");
  }
  return models::resident_weight(arguments, "w", /*widen=*/true);
}

// A module over one planar weight of `rows` x `cols`: results dequantized(w) f32 [rows, cols],
// linear(x, w) f32 [1, rows] for x f32 [1, cols], and take_rows(w, ids) f32 [ids, cols] for
// ids i32 [ids] (planes_of's `paired` as given).
std::string planar_module(const PlanarBlocks& planar, int64_t rows, int64_t cols, bool paired,
                          int64_t ids) {
  stablehlo::Module module("resident_weight_test");
  stablehlo::Function& f = module.add_function("main");
  models::Weight weight = planar_arguments(f, planar, rows, cols, paired);
  Value x = f.argument("x", TensorType(ElementType::kF32, {1, cols}));
  Value taken = f.argument("ids", TensorType(ElementType::kI32, {ids}));
  f.finish(
      {models::dequantized(weight), models::linear(x, weight), models::take_rows(weight, taken)});
  return module.to_text();
}

// The planes of a rows x cols weight on the device, in argument order.
std::vector<device::BufferPtr> upload_planes(device::Device& device, const PlanarBlocks& planar,
                                             int64_t rows, int64_t cols, bool paired = false) {
  std::vector<device::BufferPtr> buffers;
  for (const Plane& plane : planes_of(planar, rows, cols, paired)) {
    buffers.push_back(device.upload(plane.bytes, plane.element, plane.shape));
  }
  return buffers;
}

class PlanarOnRuntime : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (auto missing = testing::missing_runtime(GetParam(), 1)) GTEST_SKIP() << *missing;
  }

  // The runtime with one worker (local-task's worker count is per process).
  backends::Runtime open_runtime() const {
    device::DeviceOptions options;
    options.threads = 1;
    return backends::open_runtime(GetParam(), options, {});
  }
};

// The runtime's exact product (its hand-written kernel), which these tests check: skipped where
// the runtime has none.
class PlanarKernelOnRuntime : public PlanarOnRuntime {
 protected:
  void SetUp() override {
    PlanarOnRuntime::SetUp();
    if (IsSkipped()) return;
    runtime_ = open_runtime();
    device = runtime_.device.get();
    kernel = runtime_.lowering->planar_kernel(lowering::Phase::kDecode, lowering::Math::kExact);
    if (kernel == nullptr) GTEST_SKIP() << GetParam() << " has no hand-written planar kernel here";
  }

  backends::Runtime runtime_;
  device::Device* device = nullptr;
  const lowering::PlanarKernel* kernel = nullptr;
};

// `text` (a module named resident_weight_test, as every module here), compiled (or taken from
// the cache) and loaded; `name` names it in errors.
std::unique_ptr<device::Executable> load_module(device::Device& device, const std::string& name,
                                                std::string text) {
  const device::GraphSource source{name, std::move(text), "resident_weight_test", name + ".mlir"};
  std::vector<device::GraphLoad> loads;
  return std::move(device.load(std::span(&source, 1), loads).at(0));
}

// planar_module's results for one weight (codes in row pairs where `paired`), x f32 [1, cols]
// and `ids`, compiled as `name` and run: the dequantized values [rows, cols], the product [rows]
// and the looked-up rows [ids, cols].
struct PlanarResults {
  std::vector<float> values, product, taken;
};
void run_planar_module(device::Device& device, const std::string& name, const PlanarBlocks& planar,
                       int64_t rows, int64_t cols, const std::vector<float>& x,
                       const std::vector<int32_t>& ids, bool paired, PlanarResults& out) {
  const auto count = static_cast<int64_t>(ids.size());
  auto executable = load_module(device, name, planar_module(planar, rows, cols, paired, count));
  std::vector<device::BufferPtr> buffers = upload_planes(device, planar, rows, cols, paired);
  buffers.push_back(device.upload(bytes_of(x), ElementType::kF32, std::vector<int64_t>{1, cols}));
  buffers.push_back(device.upload(bytes_of(ids), ElementType::kI32, std::vector<int64_t>{count}));
  std::vector<device::Buffer*> arguments;
  for (auto& buffer : buffers) arguments.push_back(buffer.get());
  std::vector<device::BufferPtr> results = device.execute(*executable, arguments);
  ASSERT_EQ(results.size(), 3u);
  out.values.resize(static_cast<std::size_t>(rows * cols));
  out.product.resize(static_cast<std::size_t>(rows));
  out.taken.resize(static_cast<std::size_t>(count * cols));
  device.read(*results[0], std::as_writable_bytes(std::span(out.values)));
  device.read(*results[1], std::as_writable_bytes(std::span(out.product)));
  device.read(*results[2], std::as_writable_bytes(std::span(out.taken)));
}

// Whether a graph's value is the expected one bit for bit, or 0 in place of one under a subnormal
// scale: both CPU runtimes compute with subnormals flushed to zero, so MXFP4's values under its
// exponents 0 and 1 (scales 2^-128 and 2^-127; values at most 12 * 2^-127 < 2^-123) are 0 in
// their graphs. The host's dequantization keeps them (model_files_test).
bool same_or_flushed(float got, float expected) {
  if (std::abs(expected) < std::ldexp(1.0f, -123) && got == 0.0f) return true;
  return std::memcmp(&got, &expected, 4) == 0;
}

TEST_P(PlanarOnRuntime, EveryBlockFormatDequantizesBitExactlyInTheGraph) {
  backends::Runtime runtime = open_runtime();
  const std::unique_ptr<device::Device>& device = runtime.device;
  const GgufFile gguf(testing::test_data("model_files/quant_types.gguf").string());
  int checked = 0;
  for (const TensorView& tensor : block_quantized_tensors(gguf)) {
    const std::string format = dtype_name(tensor.dtype);
    const int64_t rows = tensor.shape[0], cols = tensor.shape[1];
    const PlanarBlocks planar =
        to_planar(tensor.dtype, tensor.data, static_cast<std::size_t>(tensor.element_count()));
    const std::vector<float> expected = to_f32(*gguf.find_tensor(tensor.name + ".expected"));
    std::vector<float> x(static_cast<std::size_t>(cols));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
    const std::vector<int32_t> ids = {1, 0};
    PlanarResults run;
    ASSERT_NO_FATAL_FAILURE(
        run_planar_module(*device, format, planar, rows, cols, x, ids, false, run));
    const std::vector<float>&values = run.values, &product = run.product, &taken = run.taken;
    ASSERT_EQ(values.size(), expected.size()) << format;
    for (std::size_t i = 0; i < values.size(); ++i) {
      ASSERT_TRUE(same_or_flushed(values[i], expected[i]))
          << GetParam() << " " << format << " element " << i << ": " << values[i] << " vs "
          << expected[i];
    }
    for (int64_t r = 0; r < rows; ++r) {
      double want = 0, magnitude = 0;
      for (int64_t c = 0; c < cols; ++c) {
        const double term = static_cast<double>(x[static_cast<std::size_t>(c)]) *
                            expected[static_cast<std::size_t>(r * cols + c)];
        want += term;
        magnitude += std::abs(term);
      }
      EXPECT_NEAR(product[static_cast<std::size_t>(r)], want, 1e-6 * magnitude + 1e-30)
          << GetParam() << " " << format << " row " << r;
    }
    for (std::size_t k = 0; k < ids.size(); ++k) {
      const std::size_t from = static_cast<std::size_t>(ids[k] * cols);
      for (std::size_t c = 0; c < static_cast<std::size_t>(cols); ++c) {
        ASSERT_TRUE(
            same_or_flushed(taken[k * static_cast<std::size_t>(cols) + c], expected[from + c]))
            << GetParam() << " " << format << " take_rows row " << k << " column " << c;
      }
    }
    ++checked;
  }
  EXPECT_EQ(checked, 9);  // q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k mxfp4
}

// A module over one planar weight and x f32 [x_rows, cols]: results the product through the
// runtime's hand-written kernel and through the graph's own StableHLO (the reference); codes in
// row pairs where `paired`.
std::string kernel_module(const PlanarBlocks& planar, int64_t rows, int64_t cols, int64_t x_rows,
                          const lowering::PlanarKernel& kernel, bool paired) {
  stablehlo::Module module("resident_weight_test");
  stablehlo::Function& f = module.add_function("main");
  models::Weight reference = planar_arguments(f, planar, rows, cols, paired);
  Value x = f.argument("x", TensorType(ElementType::kF32, {x_rows, cols}));
  models::Weight through_kernel = reference;
  through_kernel.kernel = &kernel;
  f.finish({models::linear(x, through_kernel), models::linear(x, reference)});
  return module.to_text();
}

// kernel_module over x [x.size() / cols, cols] (codes in row pairs where `paired`), compiled as
// `name` and run: the product through
// the kernel into by_kernel and through the graph's StableHLO into by_graph, each [x rows, rows].
void kernel_products(device::Device& device, const std::string& name, const PlanarBlocks& planar,
                     int64_t rows, int64_t cols, const std::vector<float>& x,
                     const lowering::PlanarKernel& kernel, std::vector<float>& by_kernel,
                     std::vector<float>& by_graph, bool paired = false) {
  const auto x_rows = static_cast<int64_t>(x.size()) / cols;
  auto executable =
      load_module(device, name, kernel_module(planar, rows, cols, x_rows, kernel, paired));
  std::vector<device::BufferPtr> buffers = upload_planes(device, planar, rows, cols, paired);
  buffers.push_back(
      device.upload(bytes_of(x), ElementType::kF32, std::vector<int64_t>{x_rows, cols}));
  std::vector<device::Buffer*> arguments;
  for (auto& buffer : buffers) arguments.push_back(buffer.get());
  std::vector<device::BufferPtr> results = device.execute(*executable, arguments);
  ASSERT_EQ(results.size(), 2u);
  by_kernel.resize(static_cast<std::size_t>(x_rows * rows));
  by_graph.resize(by_kernel.size());
  device.read(*results[0], std::as_writable_bytes(std::span(by_kernel)));
  device.read(*results[1], std::as_writable_bytes(std::span(by_graph)));
}

// The file's blocks of one tensor as a weight of `rows` rows: row r is the tensor's row r % 2
// with its blocks rotated by r / 2, so that rows differ and the kernel's blocks of 4 or 6 weight
// rows (and the rows left over) all see distinct values.
std::vector<std::byte> more_rows(const TensorView& tensor, int64_t rows) {
  const std::size_t row_bytes = tensor.data.size() / static_cast<std::size_t>(tensor.shape[0]);
  const std::size_t block = dtype_block_bytes(tensor.dtype);
  const std::size_t blocks = row_bytes / block;
  std::vector<std::byte> out;
  for (int64_t r = 0; r < rows; ++r) {
    const std::byte* source = tensor.data.data() + static_cast<std::size_t>(r % 2) * row_bytes;
    for (std::size_t b = 0; b < blocks; ++b) {
      const std::byte* from = source + (b + static_cast<std::size_t>(r / 2)) % blocks * block;
      out.insert(out.end(), from, from + block);
    }
  }
  return out;
}

TEST_P(PlanarKernelOnRuntime, TheRuntimeKernelMatchesTheStableHloProduct) {
  const GgufFile gguf(testing::test_data("model_files/quant_types.gguf").string());
  int checked = 0;
  for (const TensorView& tensor : block_quantized_tensors(gguf)) {
    const std::string format = dtype_name(tensor.dtype);
    // 26 weight rows: blocks of 4 (AVX2) or 6 (AVX-512) rows and 2 left over.
    const int64_t rows = 26, cols = tensor.shape[1];
    const std::vector<std::byte> blocks = more_rows(tensor, rows);
    const PlanarBlocks planar =
        to_planar(tensor.dtype, blocks, static_cast<std::size_t>(rows * cols));
    // The reference values: planar_to_f32 is the host's dequantization (to_f32, checked bit for
    // bit against the gguf package in model_files_test).
    std::vector<float> expected(static_cast<std::size_t>(rows * cols));
    planar_to_f32(planar, expected);
    // One pass of 1 and 3 rows; 8 rows and more go through panels (register blocks of 3 or 4 x
    // rows, the rest in smaller blocks: 13, 29), the weight rows left over from blocks of 4 or 6
    // through passes; 70 rows span two tiles of x rows.
    std::vector<float> first_rows;  // the products of x's first 3 rows (the same in every x)
    for (int64_t x_rows : {1, 3, 8, 13, 29, 70}) {
      ASSERT_TRUE(kernel->handles(x_rows, planar.group_size, planar.code_bits)) << format;
      const std::string name = format + "-" + std::to_string(x_rows);
      std::vector<float> x(static_cast<std::size_t>(x_rows * cols));
      for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
      std::vector<float> by_kernel, by_graph;
      ASSERT_NO_FATAL_FAILURE(
          kernel_products(*device, name, planar, rows, cols, x, *kernel, by_kernel, by_graph));
      // Both sum f32 products of the same dequantized values, in different orders: they agree
      // with each other and with a double-precision sum to rounding.
      for (int64_t t = 0; t < x_rows; ++t) {
        for (int64_t r = 0; r < rows; ++r) {
          double want = 0, magnitude = 0;
          for (int64_t c = 0; c < cols; ++c) {
            const double term = static_cast<double>(x[static_cast<std::size_t>(t * cols + c)]) *
                                expected[static_cast<std::size_t>(r * cols + c)];
            want += term;
            magnitude += std::abs(term);
          }
          const std::size_t at = static_cast<std::size_t>(t * rows + r);
          EXPECT_NEAR(by_kernel[at], want, 1e-6 * magnitude + 1e-30)
              << GetParam() << " " << name << " output " << t << "," << r;
          EXPECT_NEAR(by_kernel[at], by_graph[at], 2e-6 * magnitude + 1e-30)
              << GetParam() << " " << name << " output " << t << "," << r;
        }
      }
      // A row's product does not depend on how many rows share the call, bit for bit (a
      // request's tokens do not depend on what it is batched with), beyond one row (decode of a
      // single sequence sums in another order).
      if (x_rows == 3) first_rows.assign(by_kernel.begin(), by_kernel.begin() + 3 * rows);
      if (x_rows > 3) {
        EXPECT_EQ(std::memcmp(by_kernel.data(), first_rows.data(), first_rows.size() * 4), 0)
            << GetParam() << " " << name;
      }
    }
    ++checked;
  }
  EXPECT_EQ(checked, 9);
}

// An int8 product (--math fast) multiplies the weight by x rounded to i8 per block of 32 columns
// (scale max|x| / 127): it differs from the exact product by at most what that rounding moves,
// sum |w| * scale / 2 per output, and by f32 rounding where x's blocks are exactly representable
// (multiples of max|x| / 127), which checks its layout and arithmetic for every block format, at
// each width of `widths` and x row count of `x_rows_of(width)`. Returns the products through the
// kernel, by name, for the callers' own checks.
std::map<std::string, std::vector<float>> expect_int8_products(
    device::Device& device, const std::string& runtime, const lowering::PlanarKernel& kernel,
    const std::string& tag, const std::vector<int64_t>& widths,
    const std::function<std::vector<int64_t>(int64_t)>& x_rows_of) {
  std::map<std::string, std::vector<float>> products;
  const GgufFile gguf(testing::test_data("model_files/quant_types.gguf").string());
  int checked = 0;
  for (const TensorView& tensor : block_quantized_tensors(gguf)) {
    const std::string format = dtype_name(tensor.dtype);
    EXPECT_EQ(tensor.shape[1], 512) << format;
    for (const int64_t cols : widths) {
      if (cols % static_cast<int64_t>(dtype_block_elements(tensor.dtype)) != 0) continue;
      // 26 weight rows (register blocks of 8 and 2 left over), from the file's rows.
      const int64_t rows = 26, elements = rows * cols;
      const std::vector<std::byte> blocks = more_rows(tensor, (elements + 511) / 512);
      const PlanarBlocks planar =
          to_planar(tensor.dtype, blocks, static_cast<std::size_t>(elements));
      std::vector<float> w(static_cast<std::size_t>(elements));
      planar_to_f32(planar, w);
      for (bool representable : {true, false}) {
        for (int64_t x_rows : x_rows_of(cols)) {
          const std::string name = fmt::format("{}-{}-{}-{}{}", format, tag, cols, x_rows,
                                               representable ? "-exact" : "");
          std::vector<float> x(static_cast<std::size_t>(x_rows * cols));
          std::vector<float> largest(x.size() / 32, 0);
          for (std::size_t i = 0; i < x.size(); ++i) {
            const float scale = 0.25f * static_cast<float>(1 + (i / 32) % 5);
            const int code = i % 32 == 7 ? 127 : static_cast<int>((i * 7919) % 255) - 127;
            x[i] = representable ? static_cast<float>(code) / 127.0f * scale
                                 : std::sin(0.37f * static_cast<float>(i));
            largest[i / 32] = std::max(largest[i / 32], std::abs(x[i]));
          }
          std::vector<float> by_kernel, by_graph;
          kernel_products(device, name, planar, rows, cols, x, kernel, by_kernel, by_graph);
          if (by_kernel.size() != static_cast<std::size_t>(x_rows * rows)) {
            ADD_FAILURE() << runtime << " " << name << ": no product";
            continue;
          }
          double most_moved = 0;  // from the graph's exact product, relative to the magnitude
          for (int64_t t = 0; t < x_rows; ++t) {
            for (int64_t r = 0; r < rows; ++r) {
              double want = 0, magnitude = 0, moved = 0;
              for (int64_t c = 0; c < cols; ++c) {
                const std::size_t xi = static_cast<std::size_t>(t * cols + c);
                const double wc = w[static_cast<std::size_t>(r * cols + c)];
                want += x[xi] * wc;
                magnitude += std::abs(x[xi] * wc);
                moved += std::abs(wc) * largest[xi / 32] / 254.0;
              }
              const double bound = (representable ? 0 : moved) + 1e-5 * (magnitude + moved) + 1e-30;
              const std::size_t at = static_cast<std::size_t>(t * rows + r);
              EXPECT_NEAR(by_kernel[at], want, bound)
                  << runtime << " " << name << " output " << t << "," << r;
              most_moved = std::max(most_moved, std::abs(by_kernel[at] - by_graph[at]) / magnitude);
            }
          }
          // Rounded x moves the products by far more than f32 rounding: the int8 path ran.
          if (!representable) {
            EXPECT_GT(most_moved, 1e-5) << runtime << " " << name;
          }
          products[name] = std::move(by_kernel);
        }
      }
    }
    ++checked;
  }
  EXPECT_EQ(checked, 9);
  return products;
}

// How many dispatches of kernel entry `entry` a product's module text makes.
std::size_t dispatches_of(const std::string& text, const std::string& entry) {
  const std::string call = "entry_points = [@" + entry;
  std::size_t count = 0;
  for (std::size_t at = text.find(call); at != std::string::npos; at = text.find(call, at + 1)) {
    ++count;
  }
  return count;
}

// The module of two products by one weight that share x and one by another x, through `kernel`:
// the test file's weight of `format` (Q8_0, its first, by default).
std::string shared_x_module(const lowering::PlanarKernel& kernel, int64_t x_rows,
                            std::string_view format = "Q8_0") {
  const GgufFile gguf(testing::test_data("model_files/quant_types.gguf").string());
  const std::vector<TensorView> tensors = block_quantized_tensors(gguf);
  const auto found = std::ranges::find_if(
      tensors, [&](const TensorView& tensor) { return dtype_name(tensor.dtype) == format; });
  if (found == tensors.end()) throw std::runtime_error(fmt::format("no {} weight", format));
  const TensorView& tensor = *found;
  stablehlo::Module module("resident_weight_test");
  stablehlo::Function& f = module.add_function("main");
  // The file's 2 x 512 as it is: a product of one whole run.
  models::Weight weight = planar_arguments(
      f, to_planar(tensor.dtype, tensor.data, static_cast<std::size_t>(2 * 512)), 2, 512);
  weight.kernel = &kernel;
  const Value shared = f.argument("x", TensorType(ElementType::kF32, {x_rows, 512}));
  const Value other = shared + shared;
  f.finish({models::linear(shared, weight), models::linear(shared, weight),
            models::linear(other, weight)});
  return module.to_text();
}

// --math fast's prefill product (the lowering's planar_kernel under Math::kFast, where it has
// one of its own) takes 512 columns at a time, then a row's tail 128 at a time: widths of whole
// runs (1024) and with a tail (768 = 512 + 256; where blocks are 32, 896 = 512 + 384, and
// SmolLM2's 576 = 512 + 64 and 544, whose tails x is padded for); products narrower than 512
// columns stay exact. Products that share x quantize it once.
TEST_P(PlanarOnRuntime, TheInt8KernelIsTheProductOfTheRoundedActivations) {
  backends::Runtime runtime = open_runtime();
  const std::unique_ptr<device::Device>& device = runtime.device;
  const lowering::PlanarKernel* kernel =
      runtime.lowering->planar_kernel(lowering::Phase::kPrefill, lowering::Math::kFast);
  if (kernel == nullptr || kernel == runtime.lowering->planar_kernel(lowering::Phase::kPrefill,
                                                                     lowering::Math::kExact)) {
    GTEST_SKIP() << GetParam() << " has no int8 prefill product here (IREE on AVX-512 VBMI + VNNI)";
  }
  expect_int8_products(
      *device, GetParam(), *kernel, "int8", {1024, 768, 896, 576, 544}, [](int64_t cols) {
        return cols == 1024 ? std::vector<int64_t>{8, 13, 70} : std::vector<int64_t>{13, 70};
      });
  const GgufFile gguf(testing::test_data("model_files/quant_types.gguf").string());
  // 256 columns: the exact product (no whole run).
  const TensorView tensor = block_quantized_tensors(gguf).front();
  const int64_t rows = 4, cols = 256;
  // The file's 2 x 512 as 4 x 256 (the same blocks).
  const PlanarBlocks planar =
      to_planar(tensor.dtype, tensor.data, static_cast<std::size_t>(rows * cols));
  std::vector<float> x(8 * cols);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
  std::vector<float> by_kernel, by_graph;
  ASSERT_NO_FATAL_FAILURE(
      kernel_products(*device, "narrow-int8", planar, rows, cols, x, *kernel, by_kernel, by_graph));
  ASSERT_EQ(by_kernel.size(), static_cast<std::size_t>(8 * rows));
  for (std::size_t i = 0; i < by_kernel.size(); ++i) {
    EXPECT_NEAR(by_kernel[i], by_graph[i], 1e-5 * (std::abs(by_graph[i]) + 1)) << "output " << i;
  }
  // x is quantized in a dispatch of its own: products that share x (q, k and v; gate and up)
  // share that dispatch, and another x gets its own.
  const std::string text = shared_x_module(*kernel, 16);
  EXPECT_EQ(dispatches_of(text, "xlacel_quantize_int8_rows"), 2u) << text;
}

// --math fast's decode product (the lowering's planar_kernel for decode under Math::kFast) takes
// every width in blocks of 32 (SmolLM2's 576 and 1536, the K-quants' at the latter) and any number
// of x rows, each row alone: a sequence's product is the same bits whatever rows it is batched
// with, so that its tokens do not depend on the batch. Products that share x quantize it once.
TEST_P(PlanarOnRuntime, TheInt8RowsKernelRoundsEachRowAlone) {
  backends::Runtime runtime = open_runtime();
  const std::unique_ptr<device::Device>& device = runtime.device;
  const lowering::PlanarKernel* kernel =
      runtime.lowering->planar_kernel(lowering::Phase::kDecode, lowering::Math::kFast);
  if (kernel == nullptr ||
      kernel == runtime.lowering->planar_kernel(lowering::Phase::kDecode, lowering::Math::kExact)) {
    GTEST_SKIP() << GetParam() << " has no int8 decode product here (IREE on AVX2 and FMA)";
  }
  const std::vector<int64_t> x_rows = {1, 4, 13};
  const std::map<std::string, std::vector<float>> products = expect_int8_products(
      *device, GetParam(), *kernel, "int8rows", {576, 1536}, [&](int64_t) { return x_rows; });
  // x's rows are the same values at every count (its first rows), so each count's first row is
  // the one-row product.
  int compared = 0;
  for (const auto& [name, one] : products) {
    const std::string suffix = "-1" + std::string(name.ends_with("-exact") ? "-exact" : "");
    if (!name.ends_with(suffix)) continue;
    const std::string stem = name.substr(0, name.size() - suffix.size());
    for (int64_t rows : x_rows) {
      const std::string other = fmt::format("{}-{}{}", stem, rows, suffix.substr(2));
      const auto found = products.find(other);
      ASSERT_NE(found, products.end()) << other;
      ASSERT_GE(found->second.size(), one.size());
      EXPECT_EQ(std::memcmp(one.data(), found->second.data(), one.size() * 4), 0)
          << GetParam() << " " << other << ": its first row differs from the one-row product";
      ++compared;
    }
  }
  EXPECT_GT(compared, 0);
  const std::string text = shared_x_module(*kernel, 1);
  EXPECT_EQ(dispatches_of(text, "xlacel_quantize_int8_columns"), 2u) << text;
  // Packed codes take x in pair order (planar_matmul.c, pair_codes), quantized once too.
  const std::string packed = shared_x_module(*kernel, 1, "Q4_0");
  EXPECT_EQ(dispatches_of(packed, "xlacel_quantize_int8_pairs"), 2u) << packed;
  EXPECT_EQ(dispatches_of(packed, "xlacel_quantize_int8_columns"), 0u) << packed;
}

// The kernel's product with weights kept as 16-bit floats agrees with the graph's own (values
// widened to f32, then dot_general), for f16 and bf16 and for one pass and several.
// 4-bit codes in row pairs (pair_code_rows, as the loader keeps them where the runtime's kernel
// takes them so) are the same weight: the graph's dequantization and row lookup give the host's
// values bit for bit, and each of the runtime's kernels (exact, and --math fast's int8 ones) gives
// the same bits as from row after row, for passes of one x row (two weight rows at a time), a
// few rows and panels; widths of whole int8 runs (512) and with a tail (768).
TEST_P(PlanarOnRuntime, CodesInRowPairsAreTheSameWeight) {
  backends::Runtime runtime = open_runtime();
  const std::unique_ptr<device::Device>& device = runtime.device;
  const GgufFile gguf(testing::test_data("model_files/quant_types.gguf").string());
  int checked = 0;
  for (const TensorView& tensor : block_quantized_tensors(gguf)) {
    const std::string format = dtype_name(tensor.dtype);
    // Integer 4-bit codes: E2M1's (MXFP4, experts only) stay row after row.
    if (planar_code_bits(tensor.dtype) != 4 || planar_codes_are_e2m1(tensor.dtype)) continue;
    for (const int64_t cols : {512, 768}) {
      const int64_t rows = 26, elements = rows * cols;
      const std::vector<std::byte> blocks = more_rows(tensor, (elements + 511) / 512);
      const PlanarBlocks planar =
          to_planar(tensor.dtype, blocks, static_cast<std::size_t>(elements));
      ASSERT_TRUE(can_pair_code_rows(planar.code_bits, rows, cols)) << format;
      std::vector<float> expected(static_cast<std::size_t>(elements));
      planar_to_f32(planar, expected);
      const std::string name = format + "-" + std::to_string(cols) + "-paired";

      const std::vector<int32_t> ids = {25, 0, 7, 6};
      const std::vector<float> x(static_cast<std::size_t>(cols), 0.5f);
      PlanarResults run;
      ASSERT_NO_FATAL_FAILURE(
          run_planar_module(*device, name, planar, rows, cols, x, ids, true, run));
      const std::vector<float>&values = run.values, &taken = run.taken;
      EXPECT_EQ(std::memcmp(values.data(), expected.data(), values.size() * 4), 0)
          << GetParam() << " " << name << ": dequantized";
      for (std::size_t k = 0; k < ids.size(); ++k) {
        const std::size_t from = static_cast<std::size_t>(ids[k] * cols);
        EXPECT_EQ(std::memcmp(&taken[k * static_cast<std::size_t>(cols)], &expected[from],
                              static_cast<std::size_t>(cols) * 4),
                  0)
            << GetParam() << " " << name << ": take_rows row " << ids[k];
      }

      const lowering::PlanarKernel* exact =
          runtime.lowering->planar_kernel(lowering::Phase::kDecode, lowering::Math::kExact);
      const lowering::PlanarKernel* panels =
          runtime.lowering->planar_kernel(lowering::Phase::kPrefill, lowering::Math::kFast);
      const lowering::PlanarKernel* int8_rows =
          runtime.lowering->planar_kernel(lowering::Phase::kDecode, lowering::Math::kFast);
      std::vector<const lowering::PlanarKernel*> kernels;  // each once (where fast's is exact)
      for (const lowering::PlanarKernel* kernel : {exact, panels, int8_rows}) {
        if (kernel != nullptr && kernel->takes_paired_rows() &&
            std::find(kernels.begin(), kernels.end(), kernel) == kernels.end()) {
          kernels.push_back(kernel);
        }
      }
      for (const lowering::PlanarKernel* kernel : kernels) {
        const bool int8 = kernel != exact;
        for (int64_t x_rows : {1, 3, 8, 13}) {
          // Fewer rows take the panels' exact product.
          if (kernel == panels && x_rows < 8) continue;
          std::vector<float> xs(static_cast<std::size_t>(x_rows * cols));
          for (std::size_t i = 0; i < xs.size(); ++i) {
            xs[i] = std::sin(0.37f * static_cast<float>(i));
          }
          const std::string call = fmt::format("{}-{}{}", name, x_rows, int8 ? "-int8" : "");
          std::vector<float> by_rows, by_pairs, graph_rows, graph_pairs;
          ASSERT_NO_FATAL_FAILURE(kernel_products(*device, call + "-rows", planar, rows, cols, xs,
                                                  *kernel, by_rows, graph_rows));
          ASSERT_NO_FATAL_FAILURE(kernel_products(*device, call, planar, rows, cols, xs, *kernel,
                                                  by_pairs, graph_pairs, true));
          EXPECT_EQ(std::memcmp(by_rows.data(), by_pairs.data(), by_rows.size() * 4), 0)
              << GetParam() << " " << call;
        }
      }
    }
    ++checked;
  }
  EXPECT_EQ(checked, 3);  // q4_0 q4_1 q4_k
}

// What `read` gives, run on 16-bit float weight values [kWideRows, kWideCols] of `element` (f16 or
// bf16) and `input` (f32 or i32, of `input_type`), once through the runtime's kernel and once
// as pure StableHLO (the reference): both f32 results, of `count` values each. `name` names the
// compiled module.
constexpr int64_t kWideRows = 40, kWideCols = 96;
struct ThroughKernelAndGraph {
  std::vector<float> by_kernel, by_graph;
};
// Each result through the kernel within `tolerance` of the graph's.
void expect_near_each(const ThroughKernelAndGraph& out, double tolerance, const std::string& what) {
  ASSERT_EQ(out.by_kernel.size(), out.by_graph.size()) << what;
  for (std::size_t i = 0; i < out.by_kernel.size(); ++i) {
    EXPECT_NEAR(out.by_kernel[i], out.by_graph[i], tolerance) << what << " " << i;
  }
}
ThroughKernelAndGraph run_wide_weight(
    device::Device& device, const lowering::PlanarKernel& kernel, const std::string& name,
    ElementType element, const TensorType& input_type, std::span<const std::byte> input,
    std::size_t count, const std::function<Value(const models::Weight&, Value)>& read) {
  std::vector<uint16_t> values(static_cast<std::size_t>(kWideRows * kWideCols));
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float v = std::cos(0.11f * static_cast<float>(i)) * 0.5f;
    values[i] = element == ElementType::kF16 ? float_to_half(v) : float_to_bfloat16(v);
  }
  stablehlo::Module module("resident_weight_test");
  stablehlo::Function& f = module.add_function("main");
  models::Weight reference(f.argument("w", TensorType(element, {kWideRows, kWideCols})));
  reference.widen = true;
  models::Weight through_kernel = reference;
  through_kernel.kernel = &kernel;
  Value in = f.argument("in", input_type);
  f.finish({read(through_kernel, in), read(reference, in)});
  auto executable = load_module(device, name, module.to_text());
  std::vector<device::BufferPtr> buffers;
  buffers.push_back(
      device.upload(bytes_of(values), element, std::vector<int64_t>{kWideRows, kWideCols}));
  buffers.push_back(device.upload(input, input_type.element(), input_type.shape()));
  std::vector<device::Buffer*> arguments = {buffers[0].get(), buffers[1].get()};
  std::vector<device::BufferPtr> results = device.execute(*executable, arguments);
  ThroughKernelAndGraph out{std::vector<float>(count), std::vector<float>(count)};
  device.read(*results.at(0), std::as_writable_bytes(std::span(out.by_kernel)));
  device.read(*results.at(1), std::as_writable_bytes(std::span(out.by_graph)));
  return out;
}

TEST_P(PlanarKernelOnRuntime, TheRuntimeKernelMatchesTheStableHloProductFor16BitFloats) {
  for (ElementType element : {ElementType::kF16, ElementType::kBF16}) {
    for (int64_t x_rows : {1, 13}) {
      ASSERT_TRUE(kernel->handles_wide(x_rows, element, kWideCols));
      std::vector<float> xs(static_cast<std::size_t>(x_rows * kWideCols));
      for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(0.37f * static_cast<float>(i));
      const std::string name =
          std::string(stablehlo::to_string(element)) + "-" + std::to_string(x_rows);
      const ThroughKernelAndGraph out = run_wide_weight(
          *device, *kernel, name, element, TensorType(ElementType::kF32, {x_rows, kWideCols}),
          bytes_of(xs), static_cast<std::size_t>(x_rows * kWideRows),
          [](const models::Weight& w, Value x) { return models::linear(x, w); });
      expect_near_each(out, 1e-5, GetParam() + " " + name);
    }
  }
}

// One expert of stacked 16-bit float experts ([5, 8, K], at an index the graph gets), read in
// place by the kernel: the graph's product of the expert's slice.
TEST_P(PlanarKernelOnRuntime, TheKernelReadsAnExpertOf16BitFloatsInPlace) {
  constexpr int64_t kExperts = 5, kRowsEach = kWideRows / kExperts;
  for (ElementType element : {ElementType::kF16, ElementType::kBF16}) {
    for (int32_t e : {3, 0}) {
      const std::string name =
          std::string(stablehlo::to_string(element)) + "-expert-" + std::to_string(e);
      const ThroughKernelAndGraph out = run_wide_weight(
          *device, *kernel, name, element, TensorType(ElementType::kI32, {}),
          bytes_of(std::vector<int32_t>{e}), kRowsEach, [&](const models::Weight& w, Value expert) {
            models::Weight stacked = w;
            stacked.values = reshape(w.values, {kExperts, kRowsEach, kWideCols});
            stablehlo::Block& b = expert.block();
            const TensorType row(ElementType::kF32, {1, kWideCols});
            Value x =
                convert(iota(b, TensorType(ElementType::kI32, row.shape()), 1), ElementType::kF32) *
                constant(b, row, 0.01);
            return models::linear(x, models::expert_matrix(stacked, expert));
          });
      expect_near_each(out, 1e-5, GetParam() + " " + name);
    }
  }
}

// The kernel's lookup of rows of 16-bit floats (an embedding) equals the StableHLO gather's bit
// for bit, ids out of range (clamped to the nearest row) and repeated ones included, for one row
// (decode) and many (prefill).
TEST_P(PlanarKernelOnRuntime, TheRuntimeKernelTakesRowsOf16BitFloatsAsTheGatherDoes) {
  std::vector<int32_t> many = {0, 39, 3, 3, -5, 40, 1000};
  for (int32_t id = 5; many.size() < 33; ++id) many.push_back(id);
  for (ElementType element : {ElementType::kF16, ElementType::kBF16}) {
    for (const std::vector<int32_t>& ids : {std::vector<int32_t>{7}, many}) {
      const auto count = static_cast<int64_t>(ids.size());
      ASSERT_TRUE(kernel->handles_wide(count, element, kWideCols));
      const std::string name =
          std::string(stablehlo::to_string(element)) + "-take-" + std::to_string(count);
      const auto [by_kernel, by_graph] = run_wide_weight(
          *device, *kernel, name, element, TensorType(ElementType::kI32, {count}), bytes_of(ids),
          static_cast<std::size_t>(count * kWideCols),
          [](const models::Weight& w, Value looked_up) { return models::take_rows(w, looked_up); });
      EXPECT_EQ(std::memcmp(by_kernel.data(), by_graph.data(), by_kernel.size() * sizeof(float)), 0)
          << GetParam() << " " << name;
    }
  }
}

// One expert of a mixture's stacked planar weight ([E, rows, ...] planes, read at an index the
// graph computes, as a decode step reads each chosen expert; the runtime's kernel where it has
// one, which reads the expert in place): its product is the expert's rows of the whole stack's
// product, bit for bit through the kernel, at a fixed index and at one the graph computes (out of
// range: the nearest expert).
TEST_P(PlanarOnRuntime, AnExpertOfAStackedWeightIsItsRowsOfTheStack) {
  backends::Runtime runtime = open_runtime();
  const std::unique_ptr<device::Device>& device = runtime.device;
  const lowering::PlanarKernel* kernel =
      runtime.lowering->planar_kernel(lowering::Phase::kDecode, lowering::Math::kExact);
  const GgufFile gguf(testing::test_data("model_files/quant_types.gguf").string());
  constexpr int64_t kExperts = 3, kRowsEach = 6, kRows = kExperts * kRowsEach;
  int checked = 0;
  for (const TensorView& tensor : block_quantized_tensors(gguf)) {
    const std::string format = dtype_name(tensor.dtype);
    const int64_t cols = tensor.shape[1];
    const PlanarBlocks planar =
        to_planar(tensor.dtype, more_rows(tensor, kRows), static_cast<std::size_t>(kRows * cols));
    stablehlo::Module module("resident_weight_test");
    stablehlo::Function& f = module.add_function("main");
    models::Weight whole = planar_arguments(f, planar, kRows, cols);
    whole.kernel = kernel;
    Value x = f.argument("x", TensorType(ElementType::kF32, {1, cols}));
    Value expert = f.argument("expert", TensorType(ElementType::kI32, {}));
    // The same planes as a stack of experts.
    models::Weight stacked = whole;
    auto stack = [&](Value plane) {
      std::vector<int64_t> shape = plane.shape();
      shape[0] /= kExperts;
      shape.insert(shape.begin(), kExperts);
      return reshape(plane, shape);
    };
    stacked.values = stack(whole.values);
    for (auto plane :
         {&models::Weight::scales, &models::Weight::offsets, &models::Weight::super_scales,
          &models::Weight::super_offsets, &models::Weight::high_bits}) {
      if (whole.*plane) stacked.*plane = stack(*(whole.*plane));
    }
    // The whole stack's product, each expert at a constant index (a static slice), then at the
    // argument's.
    std::vector<Value> products = {models::linear(x, whole)};
    for (int64_t e = 0; e < kExperts; ++e) {
      Value index = constant(f.body(), expert.type(), static_cast<double>(e));
      products.push_back(models::linear(x, models::expert_matrix(stacked, index)));
    }
    products.push_back(models::linear(x, models::expert_matrix(stacked, expert)));
    f.finish(products);
    auto executable = load_module(*device, format + "-expert", module.to_text());
    std::vector<float> xs(static_cast<std::size_t>(cols));
    for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(0.37f * static_cast<float>(i));
    // Indices outside the stack take the nearest expert, as a slice's offset is clamped.
    for (int32_t index : {2, 0, 1, 7, -4}) {
      const int32_t e = std::clamp<int32_t>(index, 0, kExperts - 1);
      std::vector<device::BufferPtr> buffers = upload_planes(*device, planar, kRows, cols);
      buffers.push_back(
          device->upload(bytes_of(xs), ElementType::kF32, std::vector<int64_t>{1, cols}));
      buffers.push_back(device->upload(bytes_of(std::vector<int32_t>{index}), ElementType::kI32,
                                       std::vector<int64_t>{}));
      std::vector<device::Buffer*> arguments;
      for (auto& buffer : buffers) arguments.push_back(buffer.get());
      std::vector<device::BufferPtr> results = device->execute(*executable, arguments);
      ASSERT_EQ(results.size(), static_cast<std::size_t>(kExperts + 2));
      std::vector<float> all(static_cast<std::size_t>(kRows)), fixed(kRowsEach), chosen(kRowsEach);
      device->read(*results[0], std::as_writable_bytes(std::span(all)));
      device->read(*results[static_cast<std::size_t>(e) + 1],
                   std::as_writable_bytes(std::span(fixed)));
      device->read(*results.back(), std::as_writable_bytes(std::span(chosen)));
      const float* rows = all.data() + e * kRowsEach;
      for (const std::vector<float>* one : {&fixed, &chosen}) {
        const char* how = one == &fixed ? "fixed" : "chosen";
        if (kernel != nullptr) {
          EXPECT_EQ(std::memcmp(rows, one->data(), one->size() * 4), 0)
              << GetParam() << " " << format << " expert " << index << " " << how;
          continue;
        }
        // XLA's own product may sum in another order for another shape or slice.
        for (std::size_t r = 0; r < one->size(); ++r) {
          EXPECT_NEAR((*one)[r], rows[r], 1e-5 * std::max(1.0f, std::abs(rows[r])))
              << GetParam() << " " << format << " expert " << index << " " << how << " row " << r;
        }
      }
    }
    ++checked;
  }
  EXPECT_EQ(checked, 9);
}

INSTANTIATE_TEST_SUITE_P(Runtimes, PlanarOnRuntime, ::testing::ValuesIn(backends::runtime_names()),
                         [](const auto& runtime) { return runtime.param; });
INSTANTIATE_TEST_SUITE_P(Runtimes, PlanarKernelOnRuntime,
                         ::testing::ValuesIn(backends::runtime_names()),
                         [](const auto& runtime) { return runtime.param; });

// Large tensors convert on several threads (planar_blocks.cpp): the planes are those of
// converting each row on its own (one thread: rows are below the threshold).
// Rows in pairs alternate by 64-byte line: byte b of row r at (r - r % 2) * row_bytes +
// (b / 64) * 128 + (r % 2) * 64 + b % 64 (planar_blocks.h).
TEST(PlanarBlocks, RowsInPairsAlternateLineByLine) {
  EXPECT_TRUE(can_pair_code_rows(4, 4, 384));
  EXPECT_FALSE(can_pair_code_rows(4, 3, 384));  // an odd number of rows
  EXPECT_FALSE(can_pair_code_rows(4, 4, 576));  // SmolLM2's rows: 4.5 lines
  EXPECT_FALSE(can_pair_code_rows(6, 4, 384));  // high bits beside the nibbles
  // A small tensor, and one large enough to be paired on several threads (load_pass_threads).
  for (const auto& [rows, row_bytes] : {std::pair<int64_t, int64_t>{4, 192}, {2050, 1024}}) {
    std::vector<int8_t> codes(static_cast<std::size_t>(rows * row_bytes));
    for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<int8_t>(i * 7 + i / 256);
    std::vector<int8_t> paired = codes;
    pair_code_rows(paired, rows, row_bytes);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t b = 0; b < row_bytes; ++b) {
        const int64_t at = (r - r % 2) * row_bytes + (b / 64) * 128 + (r % 2) * 64 + b % 64;
        ASSERT_EQ(paired[static_cast<std::size_t>(at)],
                  codes[static_cast<std::size_t>(r * row_bytes + b)])
            << rows << " rows, row " << r << " byte " << b;
      }
    }
  }
}

TEST(PlanarBlocks, ALargeTensorConvertsAsItsRowsDoOneByOne) {
  const GgufFile gguf(testing::test_data("model_files/quant_types.gguf").string());
  int checked = 0;
  for (const TensorView& tensor : block_quantized_tensors(gguf)) {
    const std::string format = dtype_name(tensor.dtype);
    const int64_t cols = tensor.shape[1];
    const int64_t rows = (int64_t{1} << 20) / cols + 3;  // over the threshold, slices uneven
    const std::vector<std::byte> blocks = more_rows(tensor, rows);
    const PlanarBlocks whole =
        to_planar(tensor.dtype, blocks, static_cast<std::size_t>(rows * cols));
    const std::size_t row_bytes = blocks.size() / static_cast<std::size_t>(rows);
    PlanarBlocks by_rows;
    for (int64_t r = 0; r < rows; ++r) {
      const PlanarBlocks row =
          to_planar(tensor.dtype,
                    std::span(blocks).subspan(static_cast<std::size_t>(r) * row_bytes, row_bytes),
                    static_cast<std::size_t>(cols));
      auto append = [](auto& to, const auto& from) {
        to.insert(to.end(), from.begin(), from.end());
      };
      append(by_rows.codes, row.codes);
      append(by_rows.high_bits, row.high_bits);
      append(by_rows.scales, row.scales);
      append(by_rows.offsets, row.offsets);
      append(by_rows.scale_codes, row.scale_codes);
      append(by_rows.super_scales, row.super_scales);
      append(by_rows.offset_codes, row.offset_codes);
      append(by_rows.super_offsets, row.super_offsets);
    }
    EXPECT_EQ(whole.codes, by_rows.codes) << format;
    EXPECT_EQ(whole.high_bits, by_rows.high_bits) << format;
    EXPECT_EQ(whole.scale_codes, by_rows.scale_codes) << format;
    EXPECT_EQ(whole.offset_codes, by_rows.offset_codes) << format;
    // Compared as bits: -0 offsets and NaN-free f16 factors alike.
    auto same_bits = [](std::span<const float> a, std::span<const float> b) {
      return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
    };
    EXPECT_TRUE(same_bits(whole.scales, by_rows.scales)) << format;
    EXPECT_TRUE(same_bits(whole.offsets, by_rows.offsets)) << format;
    EXPECT_TRUE(same_bits(whole.super_scales, by_rows.super_scales)) << format;
    EXPECT_TRUE(same_bits(whole.super_offsets, by_rows.super_offsets)) << format;
    ++checked;
  }
  EXPECT_EQ(checked, 9);
}

TEST(ResidentWeightSpecs, TheDefaultModelKeepsItsBlockFormatsAsPlanes) {
  XLACEL_REQUIRE_DEFAULT_MODEL(path);
  const ModelFiles model = ModelFiles::open(path);
  const ModelConfig& config = model.config();
  const auto specs =
      models::architecture_for(config).weight_specs(config, models::WeightType::kAuto);
  std::map<std::string, const models::WeightSpec*> by_name;
  for (const auto& spec : specs) by_name[spec.name] = &spec;
  // Q4_1 projections: nibbles, scales and offsets; the Q8_0 embedding: codes and scales; F32
  // norms.
  ASSERT_TRUE(by_name.count("l0_q_proj_nibbles"));
  EXPECT_FALSE(by_name.count("l0_q_proj_codes"));
  EXPECT_EQ(by_name["l0_q_proj_nibbles"]->element, ElementType::kI8);
  EXPECT_EQ(by_name["l0_q_proj_nibbles"]->shape, (std::vector<int64_t>{576, 288}));
  EXPECT_EQ(by_name["l0_q_proj_scales"]->shape, (std::vector<int64_t>{576, 18}));
  // Q4_1 and Q8_0 store their scales (and Q4_1 its minimums) as f16: kept so, exactly.
  EXPECT_EQ(by_name["l0_q_proj_scales"]->element, ElementType::kF16);
  EXPECT_EQ(by_name["l0_q_proj_offsets"]->element, ElementType::kF16);
  EXPECT_EQ(by_name["embed_tokens_scales"]->element, ElementType::kF16);
  EXPECT_TRUE(by_name.count("l0_q_proj_offsets"));
  EXPECT_TRUE(by_name.count("embed_tokens_codes"));
  EXPECT_TRUE(by_name.count("embed_tokens_scales"));
  EXPECT_FALSE(by_name.count("embed_tokens_offsets"));
  EXPECT_EQ(by_name["l0_input_norm"]->element, ElementType::kF32);
  EXPECT_FALSE(by_name.count("l0_q_proj"));

  // In row pairs (for a kernel that takes them so): down_proj's rows of 1536 columns (12 lines of
  // nibbles), not the others' of 576 (4.5 lines) nor the Q8_0 embedding; nothing else changes.
  const auto paired = models::paired_nibble_specs(specs);
  ASSERT_EQ(paired.size(), specs.size());
  by_name.clear();
  for (const auto& spec : paired) by_name[spec.name] = &spec;
  ASSERT_TRUE(by_name.count("l0_down_proj_paired_nibbles"));
  EXPECT_TRUE(by_name["l0_down_proj_paired_nibbles"]->paired_rows);
  EXPECT_EQ(by_name["l0_down_proj_paired_nibbles"]->shape, (std::vector<int64_t>{576, 768}));
  EXPECT_FALSE(by_name.count("l0_down_proj_nibbles"));
  EXPECT_TRUE(by_name.count("l0_q_proj_nibbles"));
  EXPECT_FALSE(by_name["l0_q_proj_nibbles"]->paired_rows);
  EXPECT_TRUE(by_name.count("embed_tokens_codes"));
}

}  // namespace
}  // namespace xlacel
