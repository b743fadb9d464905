#pragma once
// The graphs that move whole slots (graph_options.h): copy-slot (slot `to` of every cache takes
// slot `from`'s rows), save-slot (one slot's rows of every cache out) and restore-slot (in).
// They read only the signature's caches, so every architecture emits them the same way.
#include "model_files/model_config.h"
#include "models/architecture.h"
#include "models/graph_options.h"
#include "models/graph_signature.h"

namespace xlacel::models {

// One slot's rows of each of `caches` ([1, ...]), named "<cache>_rows": save-slot's outputs and
// restore-slot's inputs after the slot. With a `window`, a KV cache that holds every position
// (`capacity` rows) gives only the rows of positions [0, window); rings and recurrent state give
// all of theirs.
std::vector<TensorSpec> slot_rows_specs(const std::vector<TensorSpec>& caches, int64_t window,
                                        int64_t capacity);

// `signature` is the graph's (graph_signature.h: no weights, the caches).
EmittedGraph emit_slot_graph(const ModelConfig& config, const GraphOptions& options,
                             const GraphSignature& signature);

}  // namespace xlacel::models
