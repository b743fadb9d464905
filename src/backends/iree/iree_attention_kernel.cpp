#include "backends/iree/iree_attention_kernel.h"

#include <fmt/format.h>

#include <bit>
#include <cstdlib>
#include <string_view>

#include "backends/iree/decode_attention_avx2.h"
#include "backends/iree/decode_attention_avx512.h"
#include "backends/iree/iree_custom_dispatch.h"
#include "common/error.h"
#include "stablehlo/data_movement.h"

namespace xlacel::backends {

using stablehlo::ElementType;
using stablehlo::TensorType;
using stablehlo::Value;

namespace {

// Most head_dim the kernel takes (MAX_HEAD_VECTORS vectors of 8 lanes).
constexpr int64_t kMaxHeadDim = 256;

// The functions of one attention shape (xlacel_decode_attention_workgroup): one workgroup per
// (sequence, kv head, token). The result [N, kv_heads, tokens, group, capacity + head_dim] holds
// each query head's probabilities (the kernel's scratch: IREE gives a dispatch no other memory)
// before its output.
std::string attention_functions(const std::string& name, int64_t n, int64_t kv_heads,
                                int64_t tokens, int64_t group, int64_t capacity, int64_t d,
                                float scale) {
  return fmt::format(
      R"(      func.func private @xlacel_decode_attention_workgroup(memref<?xf32>, memref<?xf32>, memref<?xf32>, memref<?xi32>, memref<?xf32>, index, index, index, index, index, index, index) attributes {{hal.import.static}}
      func.func @{name}(%q: !stream.binding, %keys: !stream.binding, %values: !stream.binding, %visible: !stream.binding, %out: !stream.binding) {{
      %c0 = arith.constant 0 : index
      %kv_heads = arith.constant {kv_heads} : index
      %tokens = arith.constant {tokens} : index
      %group = arith.constant {group} : index
      %capacity = arith.constant {capacity} : index
      %d = arith.constant {d} : index
      %scale_bits = arith.constant {scale_bits} : index
      %nq = arith.constant {nq} : index
      %nk = arith.constant {nk} : index
      %nc = arith.constant {nc} : index
      %no = arith.constant {no} : index
      %workgroup = stream.dispatch.workgroup.id[0] : index
      %mq = stream.binding.subspan %q[%c0] : !stream.binding -> memref<?xf32>{{%nq}}
      %mk = stream.binding.subspan %keys[%c0] : !stream.binding -> memref<?xf32>{{%nk}}
      %mv = stream.binding.subspan %values[%c0] : !stream.binding -> memref<?xf32>{{%nk}}
      %mc = stream.binding.subspan %visible[%c0] : !stream.binding -> memref<?xi32>{{%nc}}
      %mo = stream.binding.subspan %out[%c0] : !stream.binding -> memref<?xf32>{{%no}}
      func.call @xlacel_decode_attention_workgroup(%mq, %mk, %mv, %mc, %mo, %kv_heads, %tokens, %group, %capacity, %d, %scale_bits, %workgroup) : (memref<?xf32>, memref<?xf32>, memref<?xf32>, memref<?xi32>, memref<?xf32>, index, index, index, index, index, index, index) -> ()
      return
      }}
)",
      fmt::arg("name", name), fmt::arg("kv_heads", kv_heads), fmt::arg("tokens", tokens),
      fmt::arg("group", group), fmt::arg("capacity", capacity), fmt::arg("d", d),
      fmt::arg("scale_bits", std::bit_cast<uint32_t>(scale)),
      fmt::arg("nq", n * kv_heads * tokens * group * d),
      fmt::arg("nk", n * kv_heads * capacity * d), fmt::arg("nc", n * tokens),
      fmt::arg("no", n * kv_heads * tokens * group * (capacity + d)));
}

class IreeCpuAttentionKernel final : public device::AttentionKernel {
 public:
  IreeCpuAttentionKernel(std::filesystem::path object, int64_t lanes)
      : object_(std::move(object)), lanes_(lanes) {}

  bool handles(int64_t head_dim, int64_t group, int64_t capacity) const override {
    return head_dim > 0 && head_dim % lanes_ == 0 && head_dim <= kMaxHeadDim && group >= 1 &&
           capacity >= 1;
  }

  Value attend(const device::KernelAttentionOperands& in) const override {
    const std::vector<int64_t>& q = in.q.shape();
    const std::vector<int64_t>& k = in.keys.shape();
    auto refuse = [&] {
      return Error(fmt::format("attention kernel: cannot attend {} over keys {} and values {}",
                               in.q.type().str(), in.keys.type().str(), in.values.type().str()));
    };
    if (q.size() != 5 || k.size() != 4) throw refuse();
    const int64_t n = q[0], kv_heads = q[1], tokens = q[2], group = q[3], d = q[4];
    const int64_t capacity = k[2];
    const bool shapes_right = in.values.shape() == k && k[0] == n && k[1] == kv_heads &&
                              k[3] == d && in.visible.shape() == std::vector<int64_t>{n, tokens};
    const bool types_right =
        in.q.element() == ElementType::kF32 && in.keys.element() == ElementType::kF32 &&
        in.values.element() == ElementType::kF32 && in.visible.element() == ElementType::kI32;
    if (!shapes_right || !types_right || !handles(d, group, capacity)) throw refuse();
    const auto scale = static_cast<float>(in.scale);
    const std::string name =
        fmt::format("xlacel_decode_attention_n{}_h{}_t{}_g{}_c{}_d{}_s{:08x}", n, kv_heads, tokens,
                    group, capacity, d, std::bit_cast<uint32_t>(scale));
    Value out =
        custom_dispatch(in.q, name, object_, n * kv_heads * tokens,
                        attention_functions(name, n, kv_heads, tokens, group, capacity, d, scale),
                        {in.q, in.keys, in.values, in.visible},
                        TensorType(ElementType::kF32, {n, kv_heads, tokens, group, capacity + d}));
    return slice(out, {0, 0, 0, 0, capacity}, {n, kv_heads, tokens, group, capacity + d});
  }

 private:
  std::filesystem::path object_;
  int64_t lanes_;  // of the object's vectors: head_dim must be a multiple
};

}  // namespace

std::unique_ptr<device::AttentionKernel> make_iree_cpu_attention_kernel(
    const std::filesystem::path& cache_dir) {
  if (const char* off = std::getenv("XLACEL_IREE_NO_ATTENTION_KERNEL");
      off != nullptr && *off != 0) {
    return nullptr;
  }
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return nullptr;
  const bool wide = cpu_runs_avx512_kernels();
  const std::string_view bytes =
      wide ? bytes_of(kDecodeAttentionAvx512) : bytes_of(kDecodeAttentionAvx2);
  return std::make_unique<IreeCpuAttentionKernel>(
      write_kernel_object(bytes, "decode_attention", cache_dir), wide ? 16 : 8);
#else
  (void)cache_dir;
  return nullptr;
#endif
}

}  // namespace xlacel::backends
