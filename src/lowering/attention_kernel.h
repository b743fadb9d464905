#pragma once
// A runtime's hand-written attention (each query token over its sequence's visible keys: decode
// and prefill chunks), which the graph emits in place of its StableHLO attention
// (models/llama_layers.h) where the runtime provides one and the attention is plain causal (no
// ring of key positions, soft cap or sliding window). The StableHLO attention stays the
// reference it is tested against; the arithmetic is the same steps in f32 (scores, max, exp,
// sum, exp / sum, times the values), summed in another order (a runtime may split a long
// decode's keys into parts and combine their sums: the same softmax, divided once per output).
#include <cstdint>

#include "stablehlo/function.h"

namespace xlacel::lowering {

struct KernelAttentionOperands {
  stablehlo::Value q;  // f32 [N, kv_heads, tokens, group, head_dim]: head kv * group + g
  // f32 [N', kv_heads, rows, head_dim], N' >= N: sequence n's keys are its first `attended` rows
  // (a decode's window of the cache, read in place; 0: all of them).
  stablehlo::Value keys;
  stablehlo::Value values;  // as keys
  int64_t attended = 0;
  // i32 [N, tokens]: keys [0, visible) of its sequence are attended by each token; none (<= 0)
  // gives every key the same weight, as the graph's fully masked row does.
  stablehlo::Value visible;
  double scale = 1;  // scores are q.k times this
};

class AttentionKernel {
 public:
  virtual ~AttentionKernel() = default;

  // Whether it takes heads of `head_dim`, `group` query heads per kv head and `capacity` keys.
  virtual bool handles(int64_t head_dim, int64_t group, int64_t capacity) const = 0;
  // -> f32 [N, kv_heads, tokens, group, head_dim]. The values belong to a function of a
  // stablehlo::Module, which receives what the emitted op refers to.
  virtual stablehlo::Value attend(const KernelAttentionOperands& operands) const = 0;
};

}  // namespace xlacel::lowering
