#include "models/architecture.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "common/error.h"
#include "models/families.h"
#include "stablehlo/foreign.h"
#include "stablehlo/module.h"

namespace xlacel::models {

EmittedGraph emitted_graph(const stablehlo::Module& module) {
  const stablehlo::Function* main = module.find("main");
  if (main == nullptr) throw Error(fmt::format("graph {}: no function main", module.name()));
  return {module.to_text(), stablehlo::arguments_only_foreign_ops_read(*main), {}};
}

namespace {

// Every family xlacel runs; each lists the model_types (HF model_type, GGUF
// general.architecture) it accepts.
const std::vector<const Architecture*>& registry() {
  static const std::vector<const Architecture*> architectures = {
      &llama_architecture(),          &qwen3_architecture(),     &gemma3_architecture(),
      &gemma2_architecture(),         &granite_architecture(),   &olmo2_architecture(),
      &phi3_architecture(),           &stablelm_architecture(),  &starcoder2_architecture(),
      &cohere_architecture(),         &qwen3_moe_architecture(), &olmoe_architecture(),
      &mixtral_architecture(),        &lfm2_architecture(),      &gpt_oss_architecture(),
      &granite_hybrid_architecture(),
  };
  return architectures;
}

}  // namespace

std::vector<WeightSpec> Architecture::weight_arguments(const ModelConfig& config,
                                                       WeightType weights,
                                                       bool paired_nibbles) const {
  std::vector<WeightSpec> specs = weight_specs(config, weights);
  if (paired_nibbles) specs = paired_nibble_specs(std::move(specs));
  return specs;
}

const Architecture& architecture_for(const ModelConfig& config, std::string_view where) {
  for (const Architecture* architecture : registry()) {
    for (const std::string& type : architecture->model_types()) {
      if (type == config.architecture) return *architecture;
    }
  }
  fail(where.empty() ? std::string_view(config.architecture) : where,
       "unknown architecture '{}' (supported: {})", config.architecture,
       fmt::join(supported_model_types(), ", "));
}

std::vector<std::string> supported_model_types() {
  std::vector<std::string> types;
  for (const Architecture* architecture : registry()) {
    for (std::string& type : architecture->model_types()) types.push_back(std::move(type));
  }
  std::sort(types.begin(), types.end());
  return types;
}

}  // namespace xlacel::models
