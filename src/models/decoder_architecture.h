#pragma once
// An Architecture for every decoder family: the weight list, KV cache, signatures and graphs are
// written once (decoder_weights.h, decoder_graph.h) over the DecoderFamily a family derives from
// its config (family_<name>.cpp).
#include <functional>
#include <string>
#include <vector>

#include "models/architecture.h"
#include "models/decoder_family.h"

namespace xlacel::models {

class DecoderArchitecture final : public Architecture {
 public:
  using FamilyOf = std::function<DecoderFamily(const ModelConfig&)>;
  DecoderArchitecture(std::string name, std::vector<std::string> model_types, FamilyOf family);

  std::string name() const override { return name_; }
  std::vector<std::string> model_types() const override { return model_types_; }
  std::vector<WeightSpec> weight_specs(const ModelConfig& config,
                                       WeightType weights) const override;
  // k_cache_0, v_cache_0, k_cache_1, ...: [slots, kv_heads, capacity, head_dim] each, or
  // [slots, kv_heads, sliding_window, head_dim] for a sliding layer whose window is shorter (a
  // ring, cache_access.h).
  std::vector<TensorSpec> cache_specs(const ModelConfig& config, WeightType weights, int64_t slots,
                                      int64_t capacity) const override;
  GraphSignature signature(const ModelConfig& config, const GraphOptions& options) const override;
  EmittedGraph emit(const ModelConfig& config, const GraphOptions& options) const override;

  DecoderFamily family(const ModelConfig& config) const { return family_(config); }

 private:
  std::string name_;
  std::vector<std::string> model_types_;
  FamilyOf family_;
};

}  // namespace xlacel::models
