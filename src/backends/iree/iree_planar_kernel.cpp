#include "backends/iree/iree_planar_kernel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "backends/iree/iree_custom_dispatch.h"
#include "backends/iree/planar_matmul_avx2.h"
#include "backends/iree/planar_matmul_avx512.h"
#include "backends/iree/planar_matmul_avx512vbmi.h"
#include "backends/iree/planar_matmul_avx512vnni.h"
#include "common/error.h"
#include "model_files/planar_blocks.h"

namespace xlacel::backends {

using stablehlo::ElementType;
using stablehlo::TensorType;
using stablehlo::Value;

namespace {

// Workgroups per product of many rows (prefill): enough for the runtime's workers to share it
// evenly, few enough that each one's fixed cost stays small next to its work.
constexpr int64_t kWorkgroups = 16;
// Products of fewer rows than this (decode) take one workgroup per worker: each workgroup's fixed
// cost (the runtime's tile, the kernel's start on cold rows) weighs on products that only stream
// their weight (one decode step runs ~200 of them). 2 threads, against 16 workgroups, alternating
// rounds: SmolLM2 Q4_1 tg100 mean 140 -> 165 and 160 -> 175 tok/s (two sets); 1B Q4_K_M 32.3 ->
// 34.7 in one set of 3 rounds, within noise in another; prefill keeps 16 (pp512 with 2 was ~4%
// slower: a late worker leaves the other idle).
constexpr int64_t kFewRows = 16;
// --math fast's int8 product takes products of at least this many rows of x (the exact kernel's
// panels start there too, planar_matmul.c PANEL_MIN_ROWS): fewer, such as the logits of a
// prefill's last token, stream their weight, so rounding x would move them and save no time.
constexpr int64_t kInt8MinRows = 8;

// The kernel built for the widest vectors this CPU has: 16 lanes beat 8 by ~1.2x on one row and
// ~1.4x on 8 (SmolLM2's products, one thread); with VBMI's byte permutes, Q6_K and Q5_0 products
// of few rows ~1.15x more than without.
std::string_view object_bytes(bool int8) {
  if (int8) return bytes_of(kPlanarMatmulAvx512Vnni);
  if (!cpu_runs_avx512_kernels()) return bytes_of(kPlanarMatmulAvx2);
  return __builtin_cpu_supports("avx512vbmi") ? bytes_of(kPlanarMatmulAvx512Vbmi)
                                              : bytes_of(kPlanarMatmulAvx512);
}

// Weight rows per workgroup for a product of `n` outputs in `workgroups` workgroups, each a
// multiple of 8 rows (whole 32-byte runs of output).
int64_t workgroup_rows(int64_t n, int64_t workgroups) {
  return std::max<int64_t>(8, (n + 8 * workgroups - 1) / (8 * workgroups) * 8);
}

// Columns the int8 product takes at a time (planar_matmul.c, INT8_COLUMNS): 16 blocks of 32.
constexpr int64_t kInt8Columns = 512;
// Columns of the int8 product's tail groups (planar_matmul.c, INT8_TAIL_COLUMNS): 4 blocks.
constexpr int64_t kInt8TailColumns = 128;
// x's width as the int8 product reads it: k rounded up to whole tail groups, past k zero columns
// (planar_matmul.c, int8_width).
int64_t int8_width(int64_t k) {
  return (k + kInt8TailColumns - 1) / kInt8TailColumns * kInt8TailColumns;
}

// The functions of a planar product (xlacel_planar_matmul_workgroup). Scales and offsets are
// of `scale` (f32, f16, or i8 when `two_level`: then with their f16 factors per 256 elements).
std::string planar_functions(const std::string& name, int64_t rows, int64_t n, int64_t k,
                             int64_t group, bool offsets, int code_bits, int code_bias,
                             ElementType scale_element, bool two_level, int64_t rows_per_workgroup,
                             bool int8) {
  const std::string scale(stablehlo::to_string(scale_element));
  // Planes a weight lacks are passed as another of the same type (the scales, or the super
  // scales for the super offsets).
  const std::string super = two_level ? "f16" : scale;
  auto view = [](const char* binding, const char* memref, const std::string& type, const char* size,
                 const char* at = "c0") {
    return fmt::format(
        "      %{} = stream.binding.subspan %{}[%{}] : !stream.binding -> memref<?x{}>{{%{}}}\n",
        memref, binding, at, type, size);
  };
  // Bindings in the dispatch's operand order: codes, [high bits], scales, [offsets], [supers].
  std::string high_binding, bindings, views;
  const bool high_bits = high_bits_row_bytes(code_bits, k) > 0;
  if (high_bits) {
    high_binding = ", %highs: !stream.binding";
    views += view("highs", "mh", "i8", "nh");
  }
  if (offsets) {
    bindings += ", %offsets: !stream.binding";
    views += view("offsets", "mo", scale, "ng");
  }
  if (two_level) {
    bindings += ", %supers: !stream.binding";
    views += view("supers", "mss", super, "ns");
  }
  if (two_level && offsets) {
    bindings += ", %super_offsets: !stream.binding";
    views += view("super_offsets", "mso", super, "ns");
  }
  // x: f32 rows, or (int8) their codes, block scales and scaled sums (quantized_rows).
  std::string x_bindings = ", %x: !stream.binding", x_types = "memref<?xf32>", x_memrefs = "%mx";
  if (int8) {
    // One buffer (quantized_rows): the codes, then the scales at byte td_at, the sums at ts_at.
    x_bindings = ", %qx: !stream.binding";
    x_types = "memref<?xi8>, memref<?xf32>, memref<?xf32>";
    x_memrefs = "%mqx, %mxd, %mxs";
    views += view("qx", "mqx", "i8", "tk", "c0") + view("qx", "mxd", "f32", "td", "td_at") +
             view("qx", "mxs", "f32", "ts", "ts_at");
  } else {
    views += view("x", "mx", "f32", "tk");
  }
  return fmt::format(
      R"(      func.func private @{entry}(memref<?xi8>, memref<?xi8>, memref<?x{scale}>, memref<?x{scale}>, memref<?x{super}>, memref<?x{super}>, {x_types}, memref<?xf32>, index, index, index, index, index, index, index, index, index, index) attributes {{hal.import.static}}
      func.func @{name}(%codes: !stream.binding{high_binding}, %scales: !stream.binding{bindings}{x_bindings}, %y: !stream.binding) {{
      %c0 = arith.constant 0 : index
      %rows = arith.constant {rows} : index
      %n = arith.constant {n} : index
      %k = arith.constant {k} : index
      %group = arith.constant {group} : index
      %has_offsets = arith.constant {has_offsets} : index
      %code_bits = arith.constant {code_bits} : index
      %code_bias = arith.constant {code_bias} : index
      %scale_bits = arith.constant {scale_bits} : index
      %rows_per_workgroup = arith.constant {rows_per_workgroup} : index
      %codes_size = arith.constant {codes_size} : index
      %ng = arith.constant {ng} : index
      %ns = arith.constant {ns} : index
      %nh = arith.constant {nh} : index
      %tk = arith.constant {tk} : index
      %td = arith.constant {td} : index
      %ts = arith.constant {ts} : index
      %td_at = arith.constant {td_at} : index
      %ts_at = arith.constant {ts_at} : index
      %tn = arith.constant {tn} : index
      %workgroup = stream.dispatch.workgroup.id[0] : index
      %mc = stream.binding.subspan %codes[%c0] : !stream.binding -> memref<?xi8>{{%codes_size}}
      %ms = stream.binding.subspan %scales[%c0] : !stream.binding -> memref<?x{scale}>{{%ng}}
{views}      %my = stream.binding.subspan %y[%c0] : !stream.binding -> memref<?xf32>{{%tn}}
      func.call @{entry}(%mc, {highs_memref}, %ms, {offsets_memref}, {supers_memref}, {super_offsets_memref}, {x_memrefs}, %my, %rows, %n, %k, %group, %has_offsets, %code_bits, %code_bias, %scale_bits, %rows_per_workgroup, %workgroup) : (memref<?xi8>, memref<?xi8>, memref<?x{scale}>, memref<?x{scale}>, memref<?x{super}>, memref<?x{super}>, {x_types}, memref<?xf32>, index, index, index, index, index, index, index, index, index, index) -> ()
      return
      }}
)",
      fmt::arg("name", name), fmt::arg("high_binding", high_binding),
      fmt::arg("bindings", bindings), fmt::arg("x_bindings", x_bindings),
      fmt::arg("x_types", x_types), fmt::arg("x_memrefs", x_memrefs),
      fmt::arg("entry",
               int8 ? "xlacel_planar_matmul_int8_workgroup" : "xlacel_planar_matmul_workgroup"),
      fmt::arg("td", rows * int8_width(k) / 32), fmt::arg("ts", rows * int8_width(k) / 16),
      fmt::arg("td_at", rows * int8_width(k)), fmt::arg("ts_at", rows * int8_width(k) * 9 / 8),
      fmt::arg("rows", rows), fmt::arg("n", n), fmt::arg("k", k), fmt::arg("group", group),
      fmt::arg("has_offsets", offsets ? 1 : 0), fmt::arg("code_bits", code_bits),
      fmt::arg("code_bias", code_bias), fmt::arg("rows_per_workgroup", rows_per_workgroup),
      fmt::arg("codes_size", code_bits == 8 ? n * k : n * k / 2), fmt::arg("ng", n * (k / group)),
      fmt::arg("nh", n * high_bits_row_bytes(code_bits, k)),
      fmt::arg("highs_memref", high_bits ? "%mh" : "%mc"),
      fmt::arg("ns", n * (k / kSuperGroupSize)), fmt::arg("tk", rows * (int8 ? int8_width(k) : k)),
      fmt::arg("tn", rows * n), fmt::arg("views", views),
      fmt::arg("offsets_memref", offsets ? "%mo" : "%ms"),
      fmt::arg("supers_memref", two_level ? "%mss" : "%ms"),
      fmt::arg("super_offsets_memref", !two_level ? "%ms"
                                       : offsets  ? "%mso"
                                                  : "%mss"),
      fmt::arg("scale", scale), fmt::arg("super", super),
      fmt::arg("scale_bits", stablehlo::bit_width(scale_element)));
}

// The functions of a product with 16-bit float weights (xlacel_wide_matmul_workgroup).
std::string wide_functions(const std::string& name, int64_t rows, int64_t n, int64_t k, bool bf16,
                           int64_t rows_per_workgroup) {
  return fmt::format(
      R"(      func.func private @xlacel_wide_matmul_workgroup(memref<?xi16>, memref<?xf32>, memref<?xf32>, index, index, index, index, index, index) attributes {{hal.import.static}}
      func.func @{name}(%values: !stream.binding, %x: !stream.binding, %y: !stream.binding) {{
      %c0 = arith.constant 0 : index
      %rows = arith.constant {rows} : index
      %n = arith.constant {n} : index
      %k = arith.constant {k} : index
      %bf16 = arith.constant {bf16} : index
      %rows_per_workgroup = arith.constant {rows_per_workgroup} : index
      %nk = arith.constant {nk} : index
      %tk = arith.constant {tk} : index
      %tn = arith.constant {tn} : index
      %workgroup = stream.dispatch.workgroup.id[0] : index
      %mv = stream.binding.subspan %values[%c0] : !stream.binding -> memref<?xi16>{{%nk}}
      %mx = stream.binding.subspan %x[%c0] : !stream.binding -> memref<?xf32>{{%tk}}
      %my = stream.binding.subspan %y[%c0] : !stream.binding -> memref<?xf32>{{%tn}}
      func.call @xlacel_wide_matmul_workgroup(%mv, %mx, %my, %rows, %n, %k, %bf16, %rows_per_workgroup, %workgroup) : (memref<?xi16>, memref<?xf32>, memref<?xf32>, index, index, index, index, index, index) -> ()
      return
      }}
)",
      fmt::arg("name", name), fmt::arg("rows", rows), fmt::arg("n", n), fmt::arg("k", k),
      fmt::arg("bf16", bf16 ? 1 : 0), fmt::arg("rows_per_workgroup", rows_per_workgroup),
      fmt::arg("nk", n * k), fmt::arg("tk", rows * k), fmt::arg("tn", rows * n));
}

// The product's dispatch: `rows_per_workgroup` of the `n` weight rows per workgroup, over
// `operands` (x last): f32 [rows of x, n].
Value dispatch(Value x, const std::string& name, const std::filesystem::path& object, int64_t n,
               int64_t rows_per_workgroup, const std::string& functions,
               std::vector<Value> operands) {
  return custom_dispatch(x, name, object, (n + rows_per_workgroup - 1) / rows_per_workgroup,
                         functions, std::move(operands),
                         TensorType(ElementType::kF32, {x.shape()[0], n}));
}

// Bytes of x quantized for the int8 product (xlacel_quantize_int8_rows_workgroup): codes i8
// [rows, K], then scales f32 [rows, K / 32], then scaled code sums f32 [rows, K / 16].
int64_t quantized_bytes(int64_t rows, int64_t k) {
  const int64_t width = int8_width(k);
  return rows * width + 4 * rows * (width / 32) + 4 * rows * (width / 16);
}

// x quantized for the int8 product by the kernel's own dispatch (planar_matmul.c,
// quantize_int8_row: per block of 32 columns dx = max|x| / 127 and codes round(x / dx), laid out
// as int8_panels reads them), one buffer of quantized_bytes. A product that shares x with an
// earlier one (q, k and v; gate and up) takes that dispatch's buffer: quantized once.
Value quantized_rows(Value x, const std::filesystem::path& object) {
  const int64_t rows = x.shape()[0], k = x.shape()[1];
  const std::string name = fmt::format("xlacel_quantize_int8_rows_t{}_k{}", rows, k);
  const std::string entry_points = fmt::format("[@{0}::@{0}]", name);
  for (const stablehlo::Operation& op : x.block().operations()) {
    const auto entry = op.attributes.find("entry_points");
    if (op.name == "flow.dispatch" && entry != op.attributes.end() &&
        entry->second == entry_points && op.operands.size() == 1 && op.operands[0] == x) {
      return op.results.at(0);
    }
  }
  const int64_t per_workgroup = (rows + kWorkgroups - 1) / kWorkgroups;
  const std::string functions = fmt::format(
      R"(      func.func private @xlacel_quantize_int8_rows_workgroup(memref<?xf32>, memref<?xi8>, index, index, index, index) attributes {{hal.import.static}}
      func.func @{name}(%x: !stream.binding, %q: !stream.binding) {{
      %c0 = arith.constant 0 : index
      %rows = arith.constant {rows} : index
      %k = arith.constant {k} : index
      %rows_per_workgroup = arith.constant {per_workgroup} : index
      %tk = arith.constant {tk} : index
      %tq = arith.constant {tq} : index
      %workgroup = stream.dispatch.workgroup.id[0] : index
      %mx = stream.binding.subspan %x[%c0] : !stream.binding -> memref<?xf32>{{%tk}}
      %mq = stream.binding.subspan %q[%c0] : !stream.binding -> memref<?xi8>{{%tq}}
      func.call @xlacel_quantize_int8_rows_workgroup(%mx, %mq, %rows, %k, %rows_per_workgroup, %workgroup) : (memref<?xf32>, memref<?xi8>, index, index, index, index) -> ()
      return
      }}
)",
      fmt::arg("name", name), fmt::arg("rows", rows), fmt::arg("k", k),
      fmt::arg("per_workgroup", per_workgroup), fmt::arg("tk", rows * k),
      fmt::arg("tq", quantized_bytes(rows, k)));
  return custom_dispatch(x, name, object, (rows + per_workgroup - 1) / per_workgroup, functions,
                         {x}, TensorType(ElementType::kI8, {quantized_bytes(rows, k)}));
}

class IreeCpuPlanarKernel final : public device::PlanarKernel {
 public:
  IreeCpuPlanarKernel(std::filesystem::path object, int workers, bool int8)
      : object_(std::move(object)), workers_(std::max(1, workers)), int8_(int8) {}

  // Any number of rows, 8 per pass over a weight row (16 with AVX-512). Measured on SmolLM2
  // Q4_1, 2 threads: prefill in 64-row chunks beats llvm-cpu's f32 matmul over planes dequantized
  // per call (pp128 ~520 against ~350 tok/s), without writing an f32 copy of every weight per
  // chunk.
  bool handles(int64_t rows, int64_t group, int code_bits) const override {
    return rows >= 1 && ((group == 16 && code_bits == 6) || (group == 32 && code_bits != 6));
  }

  Value multiply(Value x, const device::PlanarOperands& weight) const override {
    const int64_t rows = x.shape()[0];
    const int64_t n = weight.codes.shape()[0];
    const bool packed = weight.code_bits < 8;
    const int64_t k = weight.codes.shape()[1] * (packed ? 2 : 1);
    const int64_t group = k / weight.scales.shape()[1];
    const bool centred =
        packed && !weight.offsets && weight.code_bias == packed_code_bias(weight.code_bits, false);
    const bool biased_right = weight.code_bias == 0 || centred;
    const bool highs_right =
        weight.high_bits.has_value() == (high_bits_row_bytes(weight.code_bits, k) > 0);
    const ElementType scale = weight.scales.element();
    const bool two_level = weight.super_scales.has_value();
    const bool offsets = weight.offsets.has_value();
    const bool scales_right =
        (two_level ? scale == ElementType::kI8 && k % kSuperGroupSize == 0 &&
                         weight.super_scales->element() == ElementType::kF16 &&
                         offsets == weight.super_offsets.has_value()
                   : scale == ElementType::kF32 || scale == ElementType::kF16) &&
        (!offsets || weight.offsets->element() == scale);
    if (!handles(rows, group, weight.code_bits) || !biased_right || !scales_right || !highs_right ||
        x.shape()[1] != k || x.element() != ElementType::kF32 ||
        weight.codes.element() != ElementType::kI8 || weight.scales.shape()[1] * group != k) {
      throw Error(fmt::format(
          "planar kernel: cannot multiply {} by {}-bit codes {} (bias {}) with scales {}",
          x.type().str(), weight.code_bits, weight.codes.type().str(), weight.code_bias,
          weight.scales.type().str()));
    }
    // Products of at least one whole run of 512 columns and kInt8MinRows rows: a row's tail
    // (past its runs) is scaled per 128 columns rather than per 512, so a product of a tail
    // alone would gain little over the exact one.
    const bool int8 = int8_ && rows >= kInt8MinRows && k >= kInt8Columns;
    const std::string name =
        fmt::format("xlacel_planar_{}matmul_t{}_n{}_k{}_g{}_b{}{}{}_{}", int8 ? "int8_" : "", rows,
                    n, k, group, weight.code_bits, centred ? "_centred" : "",
                    offsets ? "_offsets" : "", stablehlo::to_string(scale));
    std::vector<Value> operands = {weight.codes};
    if (weight.high_bits) operands.push_back(*weight.high_bits);
    operands.push_back(weight.scales);
    if (offsets) operands.push_back(*weight.offsets);
    if (two_level) operands.push_back(*weight.super_scales);
    if (two_level && offsets) operands.push_back(*weight.super_offsets);
    if (int8) {
      operands.push_back(quantized_rows(x, object_));
    } else {
      operands.push_back(x);
    }
    const int64_t per_workgroup = workgroup_rows(n, workgroups(rows));
    return dispatch(x, name, object_, n, per_workgroup,
                    planar_functions(name, rows, n, k, group, offsets, weight.code_bits,
                                     weight.code_bias, scale, two_level, per_workgroup, int8),
                    std::move(operands));
  }

  bool handles_wide(int64_t rows, ElementType element, int64_t k) const override {
    return rows >= 1 && (element == ElementType::kF16 || element == ElementType::kBF16) &&
           k % 16 == 0;
  }

  Value multiply_wide(Value x, Value values) const override {
    const int64_t rows = x.shape()[0];
    const int64_t n = values.shape()[0];
    const int64_t k = values.shape()[1];
    if (!handles_wide(rows, values.element(), k) || x.shape()[1] != k ||
        x.element() != ElementType::kF32) {
      throw Error(fmt::format("planar kernel: cannot multiply {} by {}", x.type().str(),
                              values.type().str()));
    }
    const bool bf16 = values.element() == ElementType::kBF16;
    const std::string name =
        fmt::format("xlacel_wide_matmul_t{}_n{}_k{}_{}", rows, n, k, bf16 ? "bf16" : "f16");
    // The executable views the binding as i16: it widens the bits itself.
    const int64_t per_workgroup = workgroup_rows(n, workgroups(rows));
    return dispatch(x, name, object_, n, per_workgroup,
                    wide_functions(name, rows, n, k, bf16, per_workgroup), {values, x});
  }

 private:
  // Workgroups of a product of `rows` rows of x (kFewRows).
  int64_t workgroups(int64_t rows) const { return rows < kFewRows ? workers_ : kWorkgroups; }

  std::filesystem::path object_;
  int workers_;  // the runtime's worker threads
  bool int8_;    // --math fast: x quantized to i8 (quantized_rows)
};

}  // namespace

std::unique_ptr<device::PlanarKernel> make_iree_cpu_planar_kernel(
    const std::filesystem::path& cache_dir, int workers, bool int8) {
  // For measuring what the kernel buys (tools/peer/compare_bench.py): the graph's own product.
  if (const char* off = std::getenv("XLACEL_IREE_NO_PLANAR_KERNEL"); off != nullptr && *off != 0) {
    return nullptr;
  }
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") ||
      !__builtin_cpu_supports("f16c")) {
    return nullptr;
  }
  if (int8 && !(cpu_runs_avx512_kernels() && __builtin_cpu_supports("avx512vbmi") &&
                __builtin_cpu_supports("avx512vnni"))) {
    return nullptr;
  }
  return std::make_unique<IreeCpuPlanarKernel>(
      write_kernel_object(object_bytes(int8), "planar_matmul", cache_dir), workers, int8);
#else
  (void)cache_dir, (void)workers, (void)int8;
  return nullptr;
#endif
}

}  // namespace xlacel::backends
