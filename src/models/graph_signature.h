#pragma once
// What a graph takes and returns, by name: the executor (src/executor) builds every call from
// this and nothing else, so no runtime knows a model's argument order.
//
// `main`'s arguments are inputs, then weights, then caches, in these lists' orders; its results
// are outputs, then the caches' new values (cache i is aliased to result outputs.size() + i).
#include <cstdint>
#include <string>
#include <vector>

#include "model_files/model_config.h"
#include "models/graph_options.h"
#include "models/weight_layout.h"
#include "stablehlo/types.h"

namespace xlacel::models {

struct TensorSpec {
  std::string name;  // "tokens", "positions", "k_cache_3", "logits", ...
  stablehlo::ElementType element = stablehlo::ElementType::kF32;
  std::vector<int64_t> shape;  // outermost first; {} for a scalar
  Split split = Split::kNone;  // tensor parallelism (tensor_split.h): caches kKvHeads
};

struct GraphSignature {
  std::vector<TensorSpec> inputs;   // per-call values the host supplies
  std::vector<WeightSpec> weights;  // resident, uploaded once
  std::vector<TensorSpec> caches;   // resident and donated: each call returns their new values
  std::vector<TensorSpec> outputs;  // what the host may read back
};

// The inputs and outputs of a graph of `options`, the same for every architecture
// (graph_options.h):
//   prefill        inputs tokens i32[bucket], slot i32[], start i32[], valid_length i32[],
//                  and for a vision-language model image_embeddings f32[bucket, hidden]
//                  (takes_image_embeddings); outputs next_token i32[], logits f32[vocab]; over
//                  S sequences each with a leading dimension S
//   decode         inputs tokens i32[bucket], positions i32[bucket]; outputs next_tokens
//                  i32[bucket]
//   decode-logits  as decode; outputs logits f32[bucket, vocab]
//   embed          inputs as prefill; outputs hidden f32[bucket, hidden] (over S sequences led by
//                  S)
//   copy-slot      inputs from i32[], to i32[]; no outputs (and no weights: only the caches)
//   save-slot      input slot i32[]; outputs <cache>_rows (slot_rows_specs)
//   restore-slot   inputs slot i32[] and <cache>_rows; no outputs
std::vector<TensorSpec> graph_inputs(const GraphOptions& options, const ModelConfig& config);
// Whether a graph takes image_embeddings: the prefill graphs of a model with a vision tower
// (ModelConfig::vision). A row whose token is the image token takes its row of them in place of
// the token's embedding (transformers' masked_scatter of the image features); the other rows'
// are ignored (zeros for a chunk without images).
bool takes_image_embeddings(const GraphOptions& options, const ModelConfig& config);
// Whether a graph's image tokens attend to their whole image (each run of image tokens as one
// bidirectional block, as transformers masks Gemma 3's token_type_ids): Gemma 3's prefill graphs.
// The caller then keeps every run of image tokens inside one chunk.
bool attends_images_whole(const GraphOptions& options, const ModelConfig& config);
std::vector<TensorSpec> graph_outputs(const GraphOptions& options, const ModelConfig& config);

// Throws Error "<graph name>: <problem>" for options no graph can honour (bucket, slots or
// capacity below 1, a prefill bucket above the capacity, a decode bucket above the slots) or
// that the config cannot (capacity above max_position_embeddings).
void check_graph_options(const ModelConfig& config, const GraphOptions& options);

}  // namespace xlacel::models
