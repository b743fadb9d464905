#include "models/decoder_architecture.h"

#include <fmt/format.h>

#include "common/error.h"
#include "models/decoder_graph.h"
#include "models/decoder_layer.h"
#include "models/decoder_weights.h"
#include "models/slot_copy_graph.h"
#include "models/tensor_parallel.h"

namespace xlacel::models {

DecoderArchitecture::DecoderArchitecture(std::string name, std::vector<std::string> model_types,
                                         FamilyOf family)
    : name_(std::move(name)), model_types_(std::move(model_types)), family_(std::move(family)) {}

std::vector<WeightSpec> DecoderArchitecture::weight_specs(const ModelConfig& config,
                                                          WeightType weights) const {
  return decoder_weight_specs(config, family(config), weights);
}

std::vector<TensorSpec> DecoderArchitecture::cache_specs(const ModelConfig& config,
                                                         WeightType weights, int64_t slots,
                                                         int64_t capacity) const {
  const DecoderFamily decoder = family(config);
  std::vector<TensorSpec> specs;
  for (int64_t layer = 0; layer < config.num_layers; ++layer) {
    decoder.layer->add_caches(specs, config, layer, cache_element(weights), slots, capacity);
  }
  return specs;
}

GraphSignature DecoderArchitecture::signature(const ModelConfig& config,
                                              const GraphOptions& options) const {
  check_graph_options(config, options);
  // Grouped-query attention shares each kv head among num_heads / num_kv_heads query heads.
  if (config.num_kv_heads < 1 || config.num_heads % config.num_kv_heads != 0) {
    fail(graph_name(options), "num_heads ({}) is not a multiple of num_kv_heads ({})",
         config.num_heads, config.num_kv_heads);
  }
  check_tensor_parallel(config, options.tensor_parallel);
  if (moves_slots(options.kind)) {
    std::vector<TensorSpec> caches =
        cache_specs(config, options.weights, options.slots, options.capacity);
    std::vector<TensorSpec> inputs = graph_inputs(options, config);
    std::vector<TensorSpec> outputs;
    std::vector<TensorSpec> rows = slot_rows_specs(caches, options.window, options.capacity);
    if (options.kind == GraphKind::kSaveSlot) outputs = rows;
    if (options.kind == GraphKind::kRestoreSlot)
      inputs.insert(inputs.end(), rows.begin(), rows.end());
    return {std::move(inputs), {}, std::move(caches), std::move(outputs)};
  }
  return {graph_inputs(options, config),
          weight_arguments(config, options.weights, options.paired_nibbles()),
          cache_specs(config, options.weights, options.slots, options.capacity),
          graph_outputs(options, config)};
}

EmittedGraph DecoderArchitecture::emit(const ModelConfig& config,
                                       const GraphOptions& options) const {
  if (moves_slots(options.kind)) {
    return emit_slot_graph(config, options, signature(config, options));
  }
  return emit_decoder_graph(config, family(config), options, signature(config, options));
}

}  // namespace xlacel::models
