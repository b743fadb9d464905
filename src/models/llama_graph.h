#pragma once
// The Llama-family graphs (prefill, decode, decode-logits over a slotted KV cache; see
// graph_options.h for what each computes): the decoder stack of llama_layers.h.
#include <string>

#include "model_files/model_config.h"
#include "models/graph_options.h"
#include "models/graph_signature.h"

namespace xlacel::models {

// The StableHLO text of the graph of `options`, whose `main` declares exactly `signature`'s
// arguments and results (LlamaArchitecture::signature, which has checked the options).
std::string emit_llama_graph(const ModelConfig& config, const GraphOptions& options,
                             const GraphSignature& signature);

}  // namespace xlacel::models
