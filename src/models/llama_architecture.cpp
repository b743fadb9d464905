#include "models/llama_architecture.h"

#include <fmt/format.h>

#include "common/error.h"
#include "models/llama_graph.h"

namespace xlacel::models {

namespace {

class LlamaArchitecture final : public Architecture {
 public:
  std::string name() const override { return "llama"; }

  std::vector<std::string> model_types() const override { return {"llama", "mistral", "qwen2"}; }

  std::vector<WeightSpec> weight_specs(const ModelConfig& config,
                                       WeightType weights) const override {
    return llama_weight_specs(config, weights);
  }

  // k_cache_0, v_cache_0, k_cache_1, ...: [slots, kv_heads, capacity, head_dim] each.
  std::vector<TensorSpec> cache_specs(const ModelConfig& config, WeightType weights, int64_t slots,
                                      int64_t capacity) const override {
    const std::vector<int64_t> shape = {slots, config.num_kv_heads, capacity, config.head_dim};
    std::vector<TensorSpec> specs;
    for (int64_t layer = 0; layer < config.num_layers; ++layer) {
      specs.push_back({fmt::format("k_cache_{}", layer), cache_element(weights), shape});
      specs.push_back({fmt::format("v_cache_{}", layer), cache_element(weights), shape});
    }
    return specs;
  }

  GraphSignature signature(const ModelConfig& config, const GraphOptions& options) const override {
    check_graph_options(config, options);
    // Grouped-query attention shares each kv head among num_heads / num_kv_heads query heads.
    if (config.num_kv_heads < 1 || config.num_heads % config.num_kv_heads != 0) {
      fail(graph_name(options), "num_heads ({}) is not a multiple of num_kv_heads ({})",
           config.num_heads, config.num_kv_heads);
    }
    return {graph_inputs(options), weight_specs(config, options.weights),
            cache_specs(config, options.weights, options.slots, options.capacity),
            graph_outputs(options, config.vocab_size)};
  }

  std::string emit(const ModelConfig& config, const GraphOptions& options) const override {
    return emit_llama_graph(config, options, signature(config, options));
  }
};

}  // namespace

const Architecture& llama_architecture() {
  static const LlamaArchitecture architecture;
  return architecture;
}

}  // namespace xlacel::models
