#pragma once
// The Llama family: llama, mistral and qwen2 (q/k/v biases where config.attention_bias). Weights
// as weight_layout.h lists them, one K and one V cache per layer, graphs from llama_graph.h.
#include "models/architecture.h"

namespace xlacel::models {

const Architecture& llama_architecture();

}  // namespace xlacel::models
