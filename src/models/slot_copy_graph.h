#pragma once
// The copy-slot graph (graph_options.h): slot `to` of every cache takes slot `from`'s rows. It
// reads only the signature's caches, so every architecture emits it the same way.
#include "model_files/model_config.h"
#include "models/architecture.h"
#include "models/graph_options.h"
#include "models/graph_signature.h"

namespace xlacel::models {

// `signature` is the copy-slot graph's (inputs from and to, no weights, the caches).
EmittedGraph emit_slot_copy(const ModelConfig& config, const GraphOptions& options,
                            const GraphSignature& signature);

}  // namespace xlacel::models
