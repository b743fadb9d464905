#pragma once
// How tensor parallelism (Megatron-style) cuts each tensor of a graph, as the registry declares it
// in the weight and cache specs (weight_layout.h, graph_signature.h): a role that does not depend
// on the number of devices; models/tensor_parallel.h turns it into a stablehlo::Sharding for N.
namespace xlacel::models {

enum class Split {
  kNone,  // replicated: norms, routers, output biases, inputs, outputs
  // A matrix's output rows (axis 0; of stacked experts, axis 1) and their bias: q, gate/up, the
  // experts' gate/up, a dense MLP's up: each device computes its own heads / hidden units, no
  // communication; and the vocabulary rows of embed_tokens and lm_head: each device scores its
  // slice of the vocabulary (XLA gathers the logits) and looks up the tokens in its rows (an
  // all-reduce adds the row).
  kOutputs,
  // A matrix's input columns (its last axis): o, down, the experts' down. Each device multiplies
  // its slice of the activations; XLA sums the partial products with one all-reduce.
  kInputs,
  // Axis 0 of the K and V projections (and biases): as kOutputs when the KV heads divide the
  // devices, else replicated (every device computes all KV heads; only the query heads split).
  kKvOutputs,
  // Axis 1 ([slots, kv_heads, rows, head_dim]) of the KV caches: split with the K/V projections,
  // else replicated.
  kKvHeads,
};

}  // namespace xlacel::models
