#include "backends/iree/iree_attention_kernel.h"

#include <fmt/format.h>

#include <array>
#include <bit>
#include <cstdlib>
#include <numeric>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/iree/cpu_isa.h"
#include "backends/iree/decode_attention_avx2.h"
#include "backends/iree/decode_attention_avx512.h"
#include "backends/iree/iree_custom_dispatch.h"
#include "common/error.h"
#include "stablehlo/data_movement.h"
#include "stablehlo/elementwise.h"
#include "stablehlo/reduce.h"

namespace xlacel::backends {

using stablehlo::ElementType;
using stablehlo::TensorType;
using stablehlo::Value;

namespace {

// Most head_dim the kernel takes (MAX_HEAD_VECTORS vectors of 8 lanes).
constexpr int64_t kMaxHeadDim = 256;

// How one attention dispatch calls `entry` (of kernels/decode_attention.c): with the buffers
// q, keys, values, visible and out (f32 but visible i32, of `sizes` elements each, keys' size for
// the values), then `indices` (named index constants, in order) and the workgroup id.
backends::KernelCall attention_call(std::string entry,
                                    std::vector<std::pair<std::string, int64_t>> indices,
                                    const std::array<int64_t, 4>& sizes) {
  return {std::move(entry),
          {{"q", "f32", sizes[0]},
           {"keys", "f32", sizes[1]},
           {"values", "f32", sizes[1]},
           {"visible", "i32", sizes[2]},
           {"out", "f32", sizes[3]}},
          std::move(indices),
          ""};
}

// The parts' results [N, kv_heads, parts, group, share + d + 2] as the attention over all keys,
// [N, kv_heads, 1, group, d]: softmax's sums of each part rescaled from its own maximum score to
// the maximum over all parts, exp(max_part - max), then added and divided.
Value combine_parts(Value parts_out, int64_t share, int64_t d) {
  const std::vector<int64_t> shape = parts_out.shape();
  const int64_t n = shape[0], kv_heads = shape[1], parts = shape[2], group = shape[3];
  const Value sums = slice(parts_out, {0, 0, 0, 0, share}, {n, kv_heads, parts, group, share + d});
  const Value maxes =
      reshape(slice(parts_out, {0, 0, 0, 0, share + d}, {n, kv_heads, parts, group, share + d + 1}),
              {n, kv_heads, parts, group});
  const Value weights = reshape(
      slice(parts_out, {0, 0, 0, 0, share + d + 1}, {n, kv_heads, parts, group, share + d + 2}),
      {n, kv_heads, parts, group});
  const std::vector<int64_t> per_part = {n, kv_heads, parts, group};
  const Value max = broadcast_in_dim(reduce_max(maxes, {2}), per_part, {0, 1, 3});
  const Value rescale = exponential(maxes - max);          // 0 for a part without keys
  const Value total = reduce_sum(weights * rescale, {2});  // [N, kv_heads, group]
  const Value summed = reduce_sum(
      sums * broadcast_in_dim(rescale, {n, kv_heads, parts, group, d}, {0, 1, 2, 3}), {2});
  const Value out = summed / broadcast_in_dim(total, {n, kv_heads, group, d}, {0, 1, 2});
  return reshape(out, {n, kv_heads, 1, group, d});
}

// Fewest keys (the cache's capacity) for which a decode attention splits its keys (parts()).
// With kv heads the workers cannot share evenly (SmolLM2's 3 on 2 threads), splitting a long
// cache's keys shortened the decode step and kept the workers busy; at capacity 512 decode was
// the same either way, so smaller caches keep one workgroup per kv head (docs/PERFORMANCE.md,
// "kSplitMinKeys").
constexpr int64_t kSplitMinKeys = 1024;

class IreeCpuAttentionKernel final : public lowering::AttentionKernel {
 public:
  IreeCpuAttentionKernel(std::filesystem::path object, int64_t lanes, int workers)
      : object_(std::move(object)), lanes_(lanes), workers_(std::max(1, workers)) {}

  bool handles(int64_t head_dim, int64_t group, int64_t capacity) const override {
    return head_dim > 0 && head_dim % lanes_ == 0 && head_dim <= kMaxHeadDim && group >= 1 &&
           capacity >= 1;
  }

  Value attend(const lowering::KernelAttentionOperands& in) const override {
    const std::vector<int64_t>& q = in.q.shape();
    const std::vector<int64_t>& k = in.keys.shape();
    auto refuse = [&] {
      return Error(fmt::format("attention kernel: cannot attend {} over keys {} and values {}",
                               in.q.type().str(), in.keys.type().str(), in.values.type().str()));
    };
    if (q.size() != 5 || k.size() != 4) throw refuse();
    const int64_t n = q[0], kv_heads = q[1], tokens = q[2], group = q[3], d = q[4];
    // Keys attended: each head's first `capacity` of its `rows` (a window read in place).
    const int64_t rows = k[2], capacity = in.attended > 0 ? in.attended : rows;
    const bool shapes_right = in.values.shape() == k && k[0] >= n && k[1] == kv_heads &&
                              capacity <= rows && k[3] == d &&
                              in.visible.shape() == std::vector<int64_t>{n, tokens};
    const bool types_right =
        in.q.element() == ElementType::kF32 && in.keys.element() == ElementType::kF32 &&
        in.values.element() == ElementType::kF32 && in.visible.element() == ElementType::kI32;
    if (!shapes_right || !types_right || !handles(d, group, capacity)) throw refuse();
    const auto scale = static_cast<float>(in.scale);
    if (const int64_t split = parts(kv_heads, tokens, capacity); split > 1) {
      // Whole 16-key blocks (the kernel's), the most any part takes.
      const int64_t share = ((capacity + split - 1) / split + 15) / 16 * 16;
      const std::string name =
          fmt::format("xlacel_decode_attention_n{}_h{}_p{}_g{}_c{}_r{}x{}_d{}_s{:08x}", n, kv_heads,
                      split, group, capacity, k[0], rows, d, std::bit_cast<uint32_t>(scale));
      // One workgroup per (sequence, kv head, part); each query head's result holds its
      // weights (the kernel's scratch: IREE gives a dispatch no other memory), then its part's
      // weighted sum of values, maximum score and sum of weights.
      const Value out = custom_dispatch(
          in.q, name, object_, n * kv_heads * split,
          attention_call("xlacel_decode_attention_parts_workgroup",
                         {{"kv_heads", kv_heads},
                          {"group", group},
                          {"capacity", capacity},
                          {"rows", rows},
                          {"d", d},
                          {"scale_bits", std::bit_cast<uint32_t>(scale)},
                          {"parts", split},
                          {"share", share}},
                         {n * kv_heads * group * d, k[0] * kv_heads * rows * d, n,
                          n * kv_heads * split * group * (share + d + 2)}),
          {in.q, in.keys, in.values, in.visible},
          TensorType(ElementType::kF32, {n, kv_heads, split, group, share + d + 2}));
      return combine_parts(out, share, d);
    }
    const std::string name =
        fmt::format("xlacel_decode_attention_n{}_h{}_t{}_g{}_c{}_r{}x{}_d{}_s{:08x}", n, kv_heads,
                    tokens, group, capacity, k[0], rows, d, std::bit_cast<uint32_t>(scale));
    // One workgroup per (sequence, kv head, token); each query head's result holds its
    // probabilities (the kernel's scratch) before its output.
    Value out = custom_dispatch(
        in.q, name, object_, n * kv_heads * tokens,
        attention_call("xlacel_decode_attention_workgroup",
                       {{"kv_heads", kv_heads},
                        {"tokens", tokens},
                        {"group", group},
                        {"capacity", capacity},
                        {"rows", rows},
                        {"d", d},
                        {"scale_bits", std::bit_cast<uint32_t>(scale)}},
                       {n * kv_heads * tokens * group * d, k[0] * kv_heads * rows * d, n * tokens,
                        n * kv_heads * tokens * group * (capacity + d)}),
        {in.q, in.keys, in.values, in.visible},
        TensorType(ElementType::kF32, {n, kv_heads, tokens, group, capacity + d}));
    return slice(out, {0, 0, 0, 0, capacity}, {n, kv_heads, tokens, group, capacity + d});
  }

 private:
  // Parts a decode attention splits each (sequence, kv head)'s keys into: enough that the kv
  // heads' work divides evenly among the workers (3 kv heads on 2: 6 parts, 3 each; 1 kv head:
  // 2), where there are keys enough to pay for the parts' combination. Not by the number of
  // sequences, so that a sequence's result is the same whatever else its call holds.
  int64_t parts(int64_t kv_heads, int64_t tokens, int64_t capacity) const {
    if (tokens != 1 || capacity < kSplitMinKeys) return 1;
    return workers_ / std::gcd(kv_heads, static_cast<int64_t>(workers_));
  }

  std::filesystem::path object_;
  int64_t lanes_;  // of the object's vectors: head_dim must be a multiple
  int workers_;    // the runtime's worker threads
};

}  // namespace

std::unique_ptr<lowering::AttentionKernel> make_iree_cpu_attention_kernel(
    const std::filesystem::path& cache_dir, int workers) {
  if (const char* off = std::getenv("XLACEL_IREE_NO_ATTENTION_KERNEL");
      off != nullptr && *off != 0) {
    return nullptr;
  }
  const CpuIsa isa = iree_cpu_isa().isa;
  if (isa == CpuIsa::kNone) return nullptr;
  const bool wide = isa >= CpuIsa::kAvx512;
  const std::string_view bytes =
      wide ? bytes_of(kDecodeAttentionAvx512) : bytes_of(kDecodeAttentionAvx2);
  return std::make_unique<IreeCpuAttentionKernel>(
      write_kernel_object(bytes, "decode_attention", cache_dir), wide ? 16 : 8, workers);
}

}  // namespace xlacel::backends
