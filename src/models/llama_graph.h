#pragma once
// The decoder graphs of every Llama-like family (prefill, decode, decode-logits over a slotted
// KV cache; see graph_options.h for what each computes): the decoder stack of llama_layers.h,
// shaped by the family's DecoderFamily (decoder_family.h).
#include "model_files/model_config.h"
#include "models/architecture.h"
#include "models/decoder_family.h"
#include "models/graph_options.h"
#include "models/graph_signature.h"

namespace xlacel::models {

// The graph of `options`, whose `main` declares exactly `signature`'s arguments and results
// (DecoderArchitecture::signature, which has checked the options).
EmittedGraph emit_decoder_graph(const ModelConfig& config, const DecoderFamily& family,
                                const GraphOptions& options, const GraphSignature& signature);

}  // namespace xlacel::models
