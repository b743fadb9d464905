#include "backends/iree/iree_planar_kernel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <utility>

#include "backends/iree/cpu_isa.h"
#include "backends/iree/iree_custom_dispatch.h"
#include "backends/iree/planar_matmul_avx2.h"
#include "backends/iree/planar_matmul_avx512.h"
#include "backends/iree/planar_matmul_avx512vbmi.h"
#include "backends/iree/planar_matmul_avx512vnni.h"
#include "backends/iree/planar_matmul_avxvnni.h"
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
// their weight (one decode step runs ~200 of them). Against 16 workgroups this sped up SmolLM2's
// decode on 2 threads, and a 1B model's in some rounds; prefill keeps 16, as 2 were slower there:
// a late worker leaves the other idle (docs/PERFORMANCE.md, "kFewRows").
constexpr int64_t kFewRows = 16;
// --math fast's int8 product takes products of at least this many rows of x (the exact kernel's
// panels start there too, planar_matmul.c PANEL_MIN_ROWS): fewer, such as the logits of a
// prefill's last token, stream their weight, so rounding x would move them and save no time;
// where arithmetic bounds decode instead, the panels lose at one row (docs/PERFORMANCE.md,
// "kInt8MinRows").
constexpr int64_t kInt8MinRows = 8;

// The kernel built for the widest vectors the runtime may use (cpu_isa.h): 16 lanes beat 8 on one
// row and more so on 8, and VBMI's byte permutes speed up Q6_K and Q5_0 products of few rows
// (docs/PERFORMANCE.md, "Kernel per instruction set"). Of the objects this build holds
// (CMakeLists.txt, XLACEL_KERNEL_ISAS), the widest one it may use, and its instruction set's
// name; empty bytes when none.
struct KernelObject {
  std::string_view isa;
  std::string_view bytes;
};
// The int8 rows product is AVX2 code that every object holds (kernels/planar_matmul.c); the VNNI
// objects' (AVX-512 VNNI's, or AVX-VNNI's on a CPU without AVX-512) form each block's sums in one
// vpdpbusd, the same sums, faster (docs/PERFORMANCE.md, "Int8 rows").
KernelObject kernel_object(const CpuIsaChoice& cpu, PlanarProduct product) {
  const KernelObject vnni{"AVX-512 VNNI", bytes_of(kPlanarMatmulAvx512Vnni)};
  if (product == PlanarProduct::kInt8Panels) return cpu.vnni ? vnni : KernelObject{};
  if (product == PlanarProduct::kInt8Rows && cpu.vnni && !vnni.bytes.empty()) return vnni;
  const KernelObject avx_vnni{"AVX-VNNI", bytes_of(kPlanarMatmulAvxVnni)};
  if (product == PlanarProduct::kInt8Rows && cpu.avx_vnni && !avx_vnni.bytes.empty()) {
    return avx_vnni;
  }
  for (const auto& [isa, object] :
       {std::pair{CpuIsa::kAvx512Vbmi,
                  KernelObject{"AVX-512 VBMI", bytes_of(kPlanarMatmulAvx512Vbmi)}},
        std::pair{CpuIsa::kAvx512, KernelObject{"AVX-512", bytes_of(kPlanarMatmulAvx512)}},
        std::pair{CpuIsa::kAvx2, KernelObject{"AVX2", bytes_of(kPlanarMatmulAvx2)}}}) {
    if (cpu.isa >= isa && !object.bytes.empty()) return object;
  }
  return {};
}

// Whether $XLACEL_IREE_NO_PLANAR_KERNEL turns the kernel off (for measuring what it buys:
// tools/peer/compare_bench.py), leaving the graph's own product.
bool kernel_turned_off() {
  const char* off = std::getenv("XLACEL_IREE_NO_PLANAR_KERNEL");
  return off != nullptr && *off != 0;
}

// Weight rows per workgroup for a product of `n` outputs in `workgroups` workgroups, each a
// multiple of 8 rows (whole 32-byte runs of output).
int64_t workgroup_rows(int64_t n, int64_t workgroups) {
  return std::max<int64_t>(8, (n + 8 * workgroups - 1) / (8 * workgroups) * 8);
}

// Bytes per element of a view's MLIR element type ("i8", "f16", "f32", ...).
int64_t view_element_bytes(const std::string& element) {
  return std::stoll(element.substr(1)) / 8;
}

// Columns the int8 product takes at a time (planar_matmul.c, INT8_COLUMNS): 16 blocks of 32.
constexpr int64_t kInt8Columns = 512;
// Columns of the int8 product's tail groups (planar_matmul.c, INT8_TAIL_COLUMNS): 4 blocks.
constexpr int64_t kInt8TailColumns = 128;
// Most groups per weight row the int8 rows product takes (planar_matmul.c, INT8_ROW_MAX_GROUPS).
constexpr int64_t kInt8RowMaxGroups = 2048;
// x's width as the int8 product reads it: k rounded up to whole tail groups, past k zero columns
// (planar_matmul.c, int8_width).
int64_t int8_width(int64_t k) {
  return (k + kInt8TailColumns - 1) / kInt8TailColumns * kInt8TailColumns;
}

// Bytes of x quantized for the int8 rows product (xlacel_quantize_int8_columns_workgroup and
// _pairs_workgroup): codes i8 [rows, k], then scales f32 [rows, k / 32], then scaled code sums f32
// [rows, k / 16].
int64_t columns_bytes(int64_t rows, int64_t k) {
  return rows * k + 4 * rows * (k / 32) + 4 * rows * (k / 16);
}

// How a planar product's dispatch calls xlacel_planar_matmul_workgroup (or an int8 form of it).
// Scales and offsets are of `scale` (f32, f16, or i8 when `two_level`: then with their f16
// factors per 256 elements; or i8 E8M0 exponents under `e2m1` codes).
backends::KernelCall planar_call(int64_t rows, int64_t n, int64_t k, int64_t group, bool offsets,
                                 int code_bits, int code_bias, bool e2m1, ElementType scale_element,
                                 bool two_level, bool paired_rows, int64_t rows_per_workgroup,
                                 PlanarProduct product) {
  const std::string scale(stablehlo::to_string(scale_element));
  const int64_t codes = code_bits == 8 ? n * k : n * k / 2, groups = n * (k / group);
  const int64_t supers = n * (k / kSuperGroupSize);
  const bool high_bits = high_bits_row_bytes(code_bits, k) > 0;
  backends::KernelCall call;
  call.entry = product == PlanarProduct::kInt8Panels ? "xlacel_planar_matmul_int8_workgroup"
               : product == PlanarProduct::kInt8Rows ? "xlacel_planar_matmul_int8_rows_workgroup"
                                                     : "xlacel_planar_matmul_workgroup";
  // The views in the dispatch's operand order: codes, [high bits], scales, [offsets], [supers],
  // [super offsets], x, then y. Planes a weight lacks are passed as another of the same type
  // (the codes for the high bits, the scales for the offsets and supers, the super scales for
  // the super offsets).
  const backends::KernelMemref scales{"scales", scale, groups};
  const backends::KernelMemref super_scales =
      two_level ? backends::KernelMemref{"supers", "f16", supers} : scales;
  call.memrefs = {
      {"codes", "i8", codes},
      high_bits ? backends::KernelMemref{"highs", "i8", n * high_bits_row_bytes(code_bits, k)}
                : backends::KernelMemref{"codes", "i8", codes},
      scales,
      offsets ? backends::KernelMemref{"offsets", scale, groups} : scales,
      super_scales,
      two_level && offsets ? backends::KernelMemref{"super_offsets", "f16", supers} : super_scales};
  if (product == PlanarProduct::kInt8Panels) {
    // One buffer (quantized_x): the codes, then the block scales, then the scaled sums.
    const int64_t width = int8_width(k);
    call.memrefs.push_back({"qx", "i8", rows * width});
    call.memrefs.push_back({"qx", "f32", rows * width / 32, rows * width});
    call.memrefs.push_back({"qx", "f32", rows * width / 16, rows * width * 9 / 8});
  } else if (product == PlanarProduct::kInt8Rows) {
    // One buffer, which the kernel splits itself (it places the scales after rows * k codes).
    call.memrefs.push_back({"qx", "i8", columns_bytes(rows, k)});
  } else {
    call.memrefs.push_back({"x", "f32", rows * k});
  }
  call.memrefs.push_back({"y", "f32", rows * n});
  call.indices = {{"rows", rows},
                  {"n", n},
                  {"k", k},
                  {"group", group},
                  {"has_offsets", offsets ? 1 : 0},
                  {"code_bits", code_bits},
                  {"code_bias", code_bias},
                  {"e2m1_codes", e2m1 ? 1 : 0},
                  {"scale_bits", stablehlo::bit_width(scale_element)},
                  {"paired_codes", paired_rows ? 1 : 0},
                  {"rows_per_workgroup", rows_per_workgroup}};
  return call;
}

// How a product with 16-bit float weights calls xlacel_wide_matmul_workgroup (viewing them as
// i16: it widens the bits itself).
backends::KernelCall wide_call(int64_t rows, int64_t n, int64_t k, bool bf16,
                               int64_t rows_per_workgroup) {
  return {"xlacel_wide_matmul_workgroup",
          {{"values", "i16", n * k}, {"x", "f32", rows * k}, {"y", "f32", rows * n}},
          {{"rows", rows},
           {"n", n},
           {"k", k},
           {"bf16", bf16 ? 1 : 0},
           {"rows_per_workgroup", rows_per_workgroup}},
          ""};
}

// The product's dispatch: `rows_per_workgroup` of the `n` weight rows per workgroup, over
// `operands` (x last): f32 [rows of x, n].
Value dispatch(Value x, const std::string& name, const std::filesystem::path& object, int64_t n,
               int64_t rows_per_workgroup, const backends::KernelCall& call,
               std::vector<Value> operands) {
  return custom_dispatch(x, name, object, (n + rows_per_workgroup - 1) / rows_per_workgroup, call,
                         std::move(operands), TensorType(ElementType::kF32, {x.shape()[0], n}));
}

// Bytes of x quantized for the int8 product (xlacel_quantize_int8_rows_workgroup): codes i8
// [rows, K], then scales f32 [rows, K / 32], then scaled code sums f32 [rows, K / 16].
int64_t quantized_bytes(int64_t rows, int64_t k) {
  const int64_t width = int8_width(k);
  return rows * width + 4 * rows * (width / 32) + 4 * rows * (width / 16);
}

// x quantized for an int8 product by the kernel's own dispatch, one buffer: for the panels
// (kInt8Panels) of quantized_bytes (planar_matmul.c, quantize_int8_row: per block of 32 columns
// dx = max|x| / 127 and codes round(x / dx), laid out as int8_panels reads them); for the rows
// (kInt8Rows) of columns_bytes (the same codes in column order for Q8_0's bytes, in pair order for
// packed codes, whose two blocks one load of nibbles holds: planar_matmul.c, pair_codes). A
// product that shares x with an earlier one of the same layout (q, k and v; gate and up) takes
// that dispatch's buffer: quantized once.
Value quantized_x(Value x, const std::filesystem::path& object, PlanarProduct product,
                  bool packed) {
  const int64_t rows = x.shape()[0], k = x.shape()[1];
  const bool panels = product == PlanarProduct::kInt8Panels;
  const std::string_view layout = panels ? "rows" : packed ? "pairs" : "columns";
  const std::string name = fmt::format("xlacel_quantize_int8_{}_t{}_k{}", layout, rows, k);
  const std::string entry_points = fmt::format("[@{0}::@{0}]", name);
  for (const stablehlo::Operation& op : x.block().operations()) {
    const auto found = op.attributes.find("entry_points");
    if (op.name == "flow.dispatch" && found != op.attributes.end() &&
        found->second == entry_points && op.operands.size() == 1 && op.operands[0] == x) {
      return op.results.at(0);
    }
  }
  const int64_t bytes = panels ? quantized_bytes(rows, k) : columns_bytes(rows, k);
  const int64_t per_workgroup = (rows + kWorkgroups - 1) / kWorkgroups;
  const backends::KernelCall call = {
      fmt::format("xlacel_quantize_int8_{}_workgroup", layout),
      {{"x", "f32", rows * k}, {"q", "i8", bytes}},
      {{"rows", rows}, {"k", k}, {"rows_per_workgroup", per_workgroup}},
      ""};
  return custom_dispatch(x, name, object, (rows + per_workgroup - 1) / per_workgroup, call, {x},
                         TensorType(ElementType::kI8, {bytes}));
}

class IreeCpuPlanarKernel final : public lowering::PlanarKernel {
 public:
  IreeCpuPlanarKernel(std::filesystem::path object, int workers, PlanarProduct product)
      : object_(std::move(object)), workers_(std::max(1, workers)), product_(product) {}

  // Any number of rows, 8 per pass over a weight row (16 with AVX-512). Prefill in 64-row chunks
  // beats llvm-cpu's f32 matmul over planes dequantized per call (docs/PERFORMANCE.md, "Prefill
  // through the kernel"), without writing an f32 copy of every weight per chunk.
  bool handles(int64_t rows, int64_t group, int code_bits) const override {
    return rows >= 1 && ((group == 16 && code_bits == 6) || (group == 32 && code_bits != 6));
  }

  // A one-x-row pass reads two weight rows at once: as one stream where they are paired
  // (planar_matmul.c, code_row).
  bool takes_paired_rows() const override { return true; }

  // An expert's planes are views at the graph's index into the stacks (KernelCall::
  // index_binding).
  bool reads_experts() const override { return true; }

  Value multiply(Value x, const lowering::PlanarOperands& weight) const override {
    const int64_t rows = x.shape()[0];
    // Stacked experts' planes are [E, N, ...]: a matrix's rows and columns are the last two axes.
    const std::vector<int64_t> codes_shape = weight.codes.shape();
    const std::size_t matrix = weight.expert ? 1 : 0;
    if (codes_shape.size() != matrix + 2) {
      throw Error(fmt::format("planar kernel: codes {} are not {}", weight.codes.type().str(),
                              weight.expert ? "a stack of matrices" : "a matrix"));
    }
    const int64_t n = codes_shape[matrix];
    const bool packed = weight.code_bits < 8;
    const int64_t k = codes_shape.back() * (packed ? 2 : 1);
    const int64_t group = k / weight.scales.shape().back();
    const bool centred = packed && !weight.e2m1 && !weight.offsets &&
                         weight.code_bias == packed_code_bias(weight.code_bits, false, false);
    const bool biased_right = weight.code_bias == 0 || centred;
    const bool highs_right =
        weight.high_bits.has_value() == (high_bits_row_bytes(weight.code_bits, k) > 0);
    const ElementType scale = weight.scales.element();
    const bool two_level = weight.super_scales.has_value();
    const bool offsets = weight.offsets.has_value();
    const bool scales_right =
        (weight.e2m1 ? scale == ElementType::kI8 && weight.code_bits == 4 && group == 32 &&
                           !two_level && !offsets && !weight.paired_rows
         : two_level ? scale == ElementType::kI8 && k % kSuperGroupSize == 0 &&
                           weight.super_scales->element() == ElementType::kF16 &&
                           offsets == weight.super_offsets.has_value()
                     : scale == ElementType::kF32 || scale == ElementType::kF16) &&
        (!offsets || weight.offsets->element() == scale);
    const bool pairs_right = !weight.paired_rows || (weight.code_bits == 4 && k % 128 == 0);
    if (!handles(rows, group, weight.code_bits) || !biased_right || !scales_right || !highs_right ||
        !pairs_right || x.shape()[1] != k || x.element() != ElementType::kF32 ||
        weight.codes.element() != ElementType::kI8 || weight.scales.shape().back() * group != k) {
      throw Error(fmt::format(
          "planar kernel: cannot multiply {} by {}-bit codes {} (bias {}) with scales {}",
          x.type().str(), weight.code_bits, weight.codes.type().str(), weight.code_bias,
          weight.scales.type().str()));
    }
    // Panels: products of at least one whole run of 512 columns and kInt8MinRows rows (a row's
    // tail, past its runs, is scaled per 128 columns rather than per 512, so a product of a tail
    // alone would gain little over the exact one). Rows: any count, so that decode's batches
    // round each row alike. (`runs`: the product this dispatch runs.)
    PlanarProduct runs = PlanarProduct::kExact;
    if (product_ == PlanarProduct::kInt8Panels && rows >= kInt8MinRows && k >= kInt8Columns) {
      runs = PlanarProduct::kInt8Panels;
    } else if (product_ == PlanarProduct::kInt8Rows && k % 32 == 0 &&
               k / group <= kInt8RowMaxGroups) {
      runs = PlanarProduct::kInt8Rows;
    }
    const std::string name = fmt::format(
        "xlacel_planar_{}matmul_t{}_n{}_k{}_g{}_b{}{}{}{}{}{}_{}",
        runs == PlanarProduct::kInt8Panels ? "int8_"
        : runs == PlanarProduct::kInt8Rows ? "int8_rows_"
                                           : "",
        rows, n, k, group, weight.code_bits, centred ? "_centred" : "", weight.e2m1 ? "_e2m1" : "",
        offsets ? "_offsets" : "", weight.paired_rows ? "_paired" : "",
        weight.expert ? fmt::format("_of{}", codes_shape[0]) : "", stablehlo::to_string(scale));
    std::vector<Value> operands;
    if (weight.expert) operands.push_back(reshape(*weight.expert, {1}));
    operands.push_back(weight.codes);
    if (weight.high_bits) operands.push_back(*weight.high_bits);
    operands.push_back(weight.scales);
    if (offsets) operands.push_back(*weight.offsets);
    if (two_level) operands.push_back(*weight.super_scales);
    if (two_level && offsets) operands.push_back(*weight.super_offsets);
    operands.push_back(runs == PlanarProduct::kExact ? x : quantized_x(x, object_, runs, packed));
    const int64_t per_workgroup = workgroup_rows(n, workgroups(rows));
    backends::KernelCall call =
        planar_call(rows, n, k, group, offsets, weight.code_bits, weight.code_bias, weight.e2m1,
                    scale, two_level, weight.paired_rows, per_workgroup, runs);
    if (weight.expert) {
      // Each plane's view moves by one expert's bytes per index: its whole view (the planes are
      // the memrefs before x).
      call.index_binding = "expert";
      for (backends::KernelMemref& view : call.memrefs) {
        if (view.binding == "x" || view.binding == "qx" || view.binding == "y") continue;
        view.index_stride = view.size * view_element_bytes(view.element);
      }
    }
    return dispatch(x, name, object_, n, per_workgroup, call, std::move(operands));
  }

  bool handles_wide(int64_t rows, ElementType element, int64_t k) const override {
    return rows >= 1 && (element == ElementType::kF16 || element == ElementType::kBF16) &&
           k % 16 == 0;
  }

  Value multiply_wide(Value x, Value values, std::optional<Value> expert) const override {
    const int64_t rows = x.shape()[0];
    const std::vector<int64_t> shape = values.shape();
    const std::size_t matrix = expert ? 1 : 0;
    if (shape.size() != matrix + 2) {
      throw Error(fmt::format("planar kernel: values {} are not {}", values.type().str(),
                              expert ? "a stack of matrices" : "a matrix"));
    }
    const int64_t n = shape[matrix];
    const int64_t k = shape.back();
    if (!handles_wide(rows, values.element(), k) || x.shape()[1] != k ||
        x.element() != ElementType::kF32) {
      throw Error(fmt::format("planar kernel: cannot multiply {} by {}", x.type().str(),
                              values.type().str()));
    }
    const bool bf16 = values.element() == ElementType::kBF16;
    const std::string name = wide_dispatch_name("matmul", rows, n, k, values.element()) +
                             (expert ? fmt::format("_of{}", shape[0]) : std::string());
    const int64_t per_workgroup = workgroup_rows(n, workgroups(rows));
    backends::KernelCall call = wide_call(rows, n, k, bf16, per_workgroup);
    std::vector<Value> operands = {values, x};
    if (expert) {
      // The values' view moves by one expert's bytes per index (KernelCall::index_binding).
      call.index_binding = "expert";
      call.memrefs.front().index_stride = n * k * 2;
      operands.insert(operands.begin(), reshape(*expert, {1}));
    }
    return dispatch(x, name, object_, n, per_workgroup, call, std::move(operands));
  }

  Value take_wide_rows(Value values, Value ids) const override {
    const int64_t rows = ids.shape()[0];
    const int64_t n = values.shape()[0];
    const int64_t k = values.shape()[1];
    if (!handles_wide(rows, values.element(), k) || ids.rank() != 1 ||
        ids.element() != ElementType::kI32) {
      throw Error(fmt::format("planar kernel: cannot take rows {} of {}", ids.type().str(),
                              values.type().str()));
    }
    const bool bf16 = values.element() == ElementType::kBF16;
    const std::string name =
        wide_dispatch_name("take_rows", rows, n, values.shape()[1], values.element());
    // A row is a copy: workgroups pay only over many rows.
    const int64_t per_workgroup = std::max<int64_t>(16, (rows + kWorkgroups - 1) / kWorkgroups);
    const backends::KernelCall call = {
        "xlacel_wide_take_rows_workgroup",
        {{"values", "i16", n * k}, {"ids", "i32", rows}, {"out", "f32", rows * k}},
        {{"rows", rows},
         {"n", n},
         {"k", k},
         {"bf16", bf16 ? 1 : 0},
         {"rows_per_workgroup", per_workgroup}},
        ""};
    return custom_dispatch(ids, name, object_, (rows + per_workgroup - 1) / per_workgroup, call,
                           {values, ids}, TensorType(ElementType::kF32, {rows, k}));
  }

 private:
  // The dispatch of wide kernel `op` over `rows` rows and 16-bit `values` [N, K]: one executable
  // per distinct name.
  static std::string wide_dispatch_name(std::string_view op, int64_t rows, int64_t n, int64_t k,
                                        ElementType element) {
    return fmt::format("xlacel_wide_{}_t{}_n{}_k{}_{}", op, rows, n, k,
                       element == ElementType::kBF16 ? "bf16" : "f16");
  }

  // Workgroups of a product of `rows` rows of x (kFewRows).
  int64_t workgroups(int64_t rows) const { return rows < kFewRows ? workers_ : kWorkgroups; }

  std::filesystem::path object_;
  int workers_;  // the runtime's worker threads
  PlanarProduct product_;
};

}  // namespace

std::unique_ptr<lowering::PlanarKernel> make_iree_cpu_planar_kernel(
    const std::filesystem::path& cache_dir, int workers, PlanarProduct product) {
  if (kernel_turned_off()) return nullptr;
  const CpuIsaChoice& cpu = iree_cpu_isa();
  const std::string_view bytes = kernel_object(cpu, product).bytes;
  if (bytes.empty() && product == PlanarProduct::kExact && cpu.isa != CpuIsa::kNone &&
      cpu.name != "native") {
    throw Error(fmt::format(
        "XLACEL_CPU_ISA={}: this build holds no planar kernel object for it (configure with "
        "-DXLACEL_KERNEL_ISAS=all)",
        cpu.name));
  }
  if (bytes.empty()) return nullptr;
  return std::make_unique<IreeCpuPlanarKernel>(
      write_kernel_object(bytes, "planar_matmul", cache_dir), workers, product);
}

std::string iree_cpu_kernels() {
  if (kernel_turned_off()) return "none (XLACEL_IREE_NO_PLANAR_KERNEL)";
  const CpuIsaChoice& cpu = iree_cpu_isa();
  const std::string_view exact = kernel_object(cpu, PlanarProduct::kExact).isa;
  if (exact.empty() && cpu.isa != CpuIsa::kNone) {
    return fmt::format("none (this build holds no kernel object for {})", cpu.name);
  }
  if (exact.empty()) return "none (llvm-cpu's code alone: no AVX2 and FMA)";
  const std::string_view panels = kernel_object(cpu, PlanarProduct::kInt8Panels).isa;
  return fmt::format("{}, --math fast prefill {}, decode {}", exact,
                     panels.empty() ? "exact" : panels,
                     kernel_object(cpu, PlanarProduct::kInt8Rows).isa);
}

}  // namespace xlacel::backends
