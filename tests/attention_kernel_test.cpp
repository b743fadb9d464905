// The runtime's hand-written attention (lowering/attention_kernel.h), where it has one: the graph's
// attention with it agrees with the graph's own StableHLO attention and with a double-precision
// reference, for every kind of row the mask makes (one key, some, all of the window, none), one
// query token per sequence (decode) and several (a prefill chunk, each token its own mask),
// grouped and ungrouped heads, several head sizes; and a row's result does not depend on the
// other sequences of the call, bit for bit.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backends/backends.h"
#include "models/llama_layers.h"
#include "runtime_availability.h"
#include "stablehlo/module.h"
#include "stablehlo/ops.h"
#include "test_paths.h"

namespace xlacel {
namespace {

using stablehlo::ElementType;
using stablehlo::TensorType;
using stablehlo::Value;

struct Shape {
  int64_t sequences, tokens, heads, kv_heads, capacity, head_dim;
};

// A module of the attention of `tokens` queries per sequence over its cache: results with the
// kernel and without (the graph's own), each f32 [sequences * tokens, heads * head_dim].
// Arguments q, keys, values, positions i32 [sequences, tokens] and end i32 [sequences]. With
// `spare_rows`, keys and values hold that many rows more per head, past the attended ones, and
// the kernel reads its window of them in place (a decode's whole cache).
std::string attention_module(const Shape& s, const lowering::AttentionKernel& kernel,
                             int64_t spare_rows = 0) {
  stablehlo::Module module("attention_kernel_test");
  stablehlo::Function& f = module.add_function("main");
  const TensorType cache(ElementType::kF32,
                         {s.sequences, s.kv_heads, s.capacity + spare_rows, s.head_dim});
  const Value q =
      f.argument("q", TensorType(ElementType::kF32, {s.sequences, s.tokens, s.heads, s.head_dim}));
  const Value keys = f.argument("keys", cache), values = f.argument("values", cache);
  const Value positions =
      f.argument("positions", TensorType(ElementType::kI32, {s.sequences, s.tokens}));
  const Value end = f.argument("end", TensorType(ElementType::kI32, {s.sequences}));
  const std::vector<int64_t> window = {s.sequences, s.kv_heads, s.capacity, s.head_dim};
  models::AttentionInputs in{
      .q = q,
      .k_cache = spare_rows > 0 ? stablehlo::slice(keys, {0, 0, 0, 0}, window) : keys,
      .v_cache = spare_rows > 0 ? stablehlo::slice(values, {0, 0, 0, 0}, window) : values,
      .whole_k_cache = std::nullopt,
      .whole_v_cache = std::nullopt,
      .positions = positions,
      .key_positions = std::nullopt,
      .end = end,
      .sees_through = std::nullopt,
      .scale = 0,
      .softcap = std::nullopt,
      .sliding_window = std::nullopt,
      .sinks = std::nullopt,
      .kernel = nullptr};
  Value by_graph = models::attention(in);
  in.kernel = &kernel;
  if (spare_rows > 0) in.whole_k_cache = keys, in.whole_v_cache = values;
  f.finish({models::attention(in), by_graph});
  return module.to_text();
}

// Attention in double precision: query head h of row r (sequence r / tokens) over keys [0,
// visible[r]) of kv head h / group (all keys with equal weights when none is visible).
std::vector<double> reference(const Shape& s, const std::vector<float>& q,
                              const std::vector<float>& keys, const std::vector<float>& values,
                              const std::vector<int32_t>& visible) {
  const int64_t group = s.heads / s.kv_heads, d = s.head_dim;
  std::vector<double> out(static_cast<std::size_t>(s.sequences * s.tokens * s.heads * d));
  for (int64_t r = 0; r < s.sequences * s.tokens; ++r) {
    const int64_t n = r / s.tokens;
    const int64_t count = std::clamp<int64_t>(visible[static_cast<std::size_t>(r)], 0, s.capacity);
    const int64_t used = count == 0 ? s.capacity : count;
    for (int64_t h = 0; h < s.heads; ++h) {
      const int64_t cache = (n * s.kv_heads + h / group) * s.capacity * d;
      std::vector<double> scores(static_cast<std::size_t>(used));
      for (int64_t c = 0; c < used; ++c) {
        double dot = 0;
        for (int64_t j = 0; j < d; ++j) {
          dot += static_cast<double>(q[static_cast<std::size_t>((r * s.heads + h) * d + j)]) *
                 keys[static_cast<std::size_t>(cache + c * d + j)];
        }
        scores[static_cast<std::size_t>(c)] = count == 0 ? 0 : dot / std::sqrt(double(d));
      }
      const double max = *std::max_element(scores.begin(), scores.end());
      double sum = 0;
      for (double& score : scores) sum += score = std::exp(score - max);
      for (int64_t j = 0; j < d; ++j) {
        double acc = 0;
        for (int64_t c = 0; c < used; ++c) {
          acc += scores[static_cast<std::size_t>(c)] / sum *
                 values[static_cast<std::size_t>(cache + c * d + j)];
        }
        out[static_cast<std::size_t>((r * s.heads + h) * d + j)] = acc;
      }
    }
  }
  return out;
}

// Inputs of one call: each sequence's queries, its cache, their positions and its end.
struct Inputs {
  std::vector<float> q, keys, values;
  std::vector<int32_t> positions, ends;
};

Inputs make_inputs(const Shape& s, const std::vector<int32_t>& positions,
                   const std::vector<int32_t>& ends) {
  Inputs in;
  in.q.resize(static_cast<std::size_t>(s.sequences * s.tokens * s.heads * s.head_dim));
  in.keys.resize(static_cast<std::size_t>(s.sequences * s.kv_heads * s.capacity * s.head_dim));
  in.values.resize(in.keys.size());
  for (std::size_t i = 0; i < in.q.size(); ++i) in.q[i] = 2.0f * std::sin(0.37f * float(i));
  for (std::size_t i = 0; i < in.keys.size(); ++i) {
    in.keys[i] = 2.0f * std::cos(0.11f * float(i) + 0.5f);
    in.values[i] = std::sin(0.23f * float(i));
  }
  // Token t of sequence n at positions[n] + t: a chunk's consecutive positions.
  for (int64_t n = 0; n < s.sequences; ++n) {
    for (int64_t t = 0; t < s.tokens; ++t) {
      in.positions.push_back(positions[static_cast<std::size_t>(n)] + static_cast<int32_t>(t));
    }
  }
  in.ends.assign(ends.begin(), ends.begin() + s.sequences);
  return in;
}

// The first sequence of `in` alone.
Inputs first_sequence(const Shape& s, const Inputs& in) {
  const auto q = static_cast<std::ptrdiff_t>(s.tokens * s.heads * s.head_dim);
  const auto cache = static_cast<std::ptrdiff_t>(s.kv_heads * s.capacity * s.head_dim);
  return {{in.q.begin(), in.q.begin() + q},
          {in.keys.begin(), in.keys.begin() + cache},
          {in.values.begin(), in.values.begin() + cache},
          {in.positions.begin(), in.positions.begin() + s.tokens},
          {in.ends[0]}};
}

class AttentionOnRuntime : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (auto missing = testing::missing_runtime(GetParam(), 2)) GTEST_SKIP() << *missing;
    device::DeviceOptions options;
    options.threads = 2;
    runtime_ = backends::open_runtime(GetParam(), options, {});
    device_ = runtime_.device.get();
  }

  // The attention with the kernel and without, each f32 [sequences, heads * head_dim].
  // With `spare_rows`, the caches are uploaded with that many rows of 1000s after each head's
  // (attention_module): rows the kernel must not read.
  std::pair<std::vector<float>, std::vector<float>> run(const Shape& s, const Inputs& in,
                                                        int64_t spare_rows = 0) {
    const std::string name =
        fmt::format("attention-n{}-t{}-h{}-kv{}-c{}-d{}-spare{}", s.sequences, s.tokens, s.heads,
                    s.kv_heads, s.capacity, s.head_dim, spare_rows);
    const device::GraphSource source{
        name, attention_module(s, *runtime_.lowering->attention_kernel(), spare_rows),
        "attention_kernel_test", name + ".mlir"};
    std::vector<device::GraphLoad> loads;
    auto executable = std::move(device_->load(std::span(&source, 1), loads).at(0));
    const std::vector<int64_t> cache = {s.sequences, s.kv_heads, s.capacity + spare_rows,
                                        s.head_dim};
    auto padded = [&](const std::vector<float>& rows) {
      const std::size_t head = static_cast<std::size_t>(s.capacity * s.head_dim);
      const std::size_t spare = static_cast<std::size_t>(spare_rows * s.head_dim);
      std::vector<float> out;
      for (std::size_t at = 0; at < rows.size(); at += head) {
        out.insert(out.end(), rows.begin() + static_cast<std::ptrdiff_t>(at),
                   rows.begin() + static_cast<std::ptrdiff_t>(at + head));
        out.insert(out.end(), spare, 1000.0f);
      }
      return out;
    };
    const std::vector<float> keys = padded(in.keys), values = padded(in.values);
    std::vector<device::BufferPtr> buffers;
    buffers.push_back(
        device_->upload(std::as_bytes(std::span(in.q)), ElementType::kF32,
                        std::vector<int64_t>{s.sequences, s.tokens, s.heads, s.head_dim}));
    buffers.push_back(device_->upload(std::as_bytes(std::span(keys)), ElementType::kF32, cache));
    buffers.push_back(device_->upload(std::as_bytes(std::span(values)), ElementType::kF32, cache));
    buffers.push_back(device_->upload(std::as_bytes(std::span(in.positions)), ElementType::kI32,
                                      std::vector<int64_t>{s.sequences, s.tokens}));
    buffers.push_back(device_->upload(std::as_bytes(std::span(in.ends)), ElementType::kI32,
                                      std::vector<int64_t>{s.sequences}));
    std::vector<device::Buffer*> arguments;
    for (auto& buffer : buffers) arguments.push_back(buffer.get());
    std::vector<device::BufferPtr> results = device_->execute(*executable, arguments);
    EXPECT_EQ(results.size(), 2u) << name;
    std::vector<float> by_kernel(in.q.size()), by_graph(in.q.size());
    device_->read(*results.at(0), std::as_writable_bytes(std::span(by_kernel)));
    device_->read(*results.at(1), std::as_writable_bytes(std::span(by_graph)));
    return {by_kernel, by_graph};
  }

  // Each shape's attention with the kernel against the graph's and the double-precision result;
  // sequence n's tokens start at positions[n] and see keys below ends[n].
  void check(const std::vector<Shape>& shapes, const std::vector<int32_t>& positions,
             const std::vector<int32_t>& ends) {
    const lowering::AttentionKernel& kernel = *runtime_.lowering->attention_kernel();
    for (const Shape& s : shapes) {
      ASSERT_TRUE(kernel.handles(s.head_dim, s.heads / s.kv_heads, s.capacity));
      const Inputs in = make_inputs(s, positions, ends);
      const auto [by_kernel, by_graph] = run(s, in);
      std::vector<int32_t> visible(in.positions.size());
      for (std::size_t r = 0; r < visible.size(); ++r) {
        visible[r] = std::min(in.positions[r] + 1, in.ends[r / static_cast<std::size_t>(s.tokens)]);
      }
      const std::vector<double> want = reference(s, in.q, in.keys, in.values, visible);
      const std::string label = fmt::format("{} shape {}x{}x{} capacity {}", GetParam(),
                                            s.sequences, s.tokens, s.heads, s.capacity);
      // Both run the same f32 steps summed in other orders: they agree with each other and with
      // the double-precision result to rounding (values below 1, so an absolute bound).
      for (std::size_t i = 0; i < want.size(); ++i) {
        EXPECT_NEAR(by_kernel[i], want[i], 2e-6) << label << " output " << i;
        EXPECT_NEAR(by_kernel[i], by_graph[i], 4e-6) << label << " output " << i;
      }
      // A decode's window read in place from a cache with more rows: the same bits.
      if (s.tokens == 1) {
        const auto [in_place, graph_of_window] = run(s, in, 16);
        EXPECT_EQ(std::memcmp(in_place.data(), by_kernel.data(), in_place.size() * sizeof(float)),
                  0)
            << label << " in place";
        EXPECT_EQ(graph_of_window, by_graph) << label << " in place";
      }
      // A sequence's result does not depend on the others of its call, bit for bit.
      if (s.sequences > 1) {
        const Shape alone{1, s.tokens, s.heads, s.kv_heads, s.capacity, s.head_dim};
        const std::vector<float> first = run(alone, first_sequence(s, in)).first;
        EXPECT_EQ(std::memcmp(first.data(), by_kernel.data(), first.size() * sizeof(float)), 0)
            << label;
      }
    }
  }

  backends::Runtime runtime_;
  device::Device* device_ = nullptr;
};

TEST_P(AttentionOnRuntime, TheRuntimeKernelMatchesTheStableHloAttention) {
  if (runtime_.lowering->attention_kernel() == nullptr) {
    GTEST_SKIP() << GetParam() << " has no hand-written attention here";
  }
  // Rows: one key visible, some (end below the position), the whole window (position past it),
  // none (end 0: the graph's fully masked row, equal weights), and 23 keys (a partial vector of
  // scores). One token per sequence (decode) and chunks of 7 and 3 (prefill: consecutive
  // positions, so the rows of a chunk see 1 to 7 keys, cross the end or the window). Grouped
  // heads (4 and 4 query heads per kv head), ungrouped, head sizes 64, 32, 128.
  check({{5, 1, 8, 2, 40, 64},
         {2, 1, 3, 3, 19, 32},
         {1, 1, 4, 1, 64, 128},
         {5, 7, 8, 2, 40, 64},
         {2, 3, 3, 3, 19, 32}},
        {0, 17, 45, 9, 22}, {30, 5, 40, 0, 40});
}

TEST_P(AttentionOnRuntime, ADecodeSplitOverItsKeysMatchesTheStableHloAttention) {
  if (runtime_.lowering->attention_kernel() == nullptr) {
    GTEST_SKIP() << GetParam() << " has no hand-written attention here";
  }
  // Caches of 1024 keys or more with kv heads that 2 workers cannot share evenly (3, and 1):
  // the decode kernel splits each (sequence, kv head)'s keys and the graph combines the parts.
  // Rows: 1031 keys visible (parts of whole 16-key blocks), 601, and none (equal weights over
  // all 1040, split too).
  check({{3, 1, 6, 3, 1040, 64}, {1, 1, 4, 1, 1030, 128}}, {1030, 600, 17}, {1040, 1040, 0});
}

INSTANTIATE_TEST_SUITE_P(Runtimes, AttentionOnRuntime,
                         ::testing::ValuesIn(backends::runtime_names()),
                         [](const auto& runtime) { return runtime.param; });

}  // namespace
}  // namespace xlacel
