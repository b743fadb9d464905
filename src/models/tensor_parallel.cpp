#include "models/tensor_parallel.h"

#include <fmt/format.h>

#include "common/error.h"

namespace xlacel::models {

namespace {

// The divisors of `n` from 1 to n, for messages ("1, 3, 9").
std::string divisors(int64_t n) {
  std::string text;
  for (int64_t d = 1; d <= n; ++d) {
    if (n % d == 0) text += fmt::format("{}{}", text.empty() ? "" : ", ", d);
  }
  return text;
}

// `axis` of `shape` cut `parts` ways when it divides into whole runs of `granule`, else
// replicated.
stablehlo::Sharding split_if_whole(std::span<const int64_t> shape, int axis, int64_t granule,
                                   int64_t parts) {
  const auto index = static_cast<std::size_t>(axis);
  if (index >= shape.size() || shape[index] % (parts * granule) != 0) return {};
  return stablehlo::Sharding::split(axis);
}

stablehlo::Sharding sharding_of(const ModelConfig& config, Split split,
                                std::span<const int64_t> shape, int64_t granule, int64_t parts) {
  if (parts <= 1) return {};
  switch (split) {
    case Split::kNone:
      return {};
    // A matrix's rows and columns are its last two axes: stacked experts [E, rows, cols] split
    // within each expert, so every device holds its part of all of them.
    case Split::kOutputs:
      return split_if_whole(shape, shape.size() > 1 ? static_cast<int>(shape.size()) - 2 : 0, 1,
                            parts);
    case Split::kInputs:
      return split_if_whole(shape, static_cast<int>(shape.size()) - 1, granule, parts);
    case Split::kKvOutputs:
      return splits_kv_heads(config, parts) ? split_if_whole(shape, 0, 1, parts)
                                            : stablehlo::Sharding{};
    case Split::kKvHeads:
      return splits_kv_heads(config, parts) ? split_if_whole(shape, 1, 1, parts)
                                            : stablehlo::Sharding{};
  }
  return {};
}

}  // namespace

void check_tensor_parallel(const ModelConfig& config, int64_t parts) {
  if (parts < 1) fail_field("tensor_parallel", "must be at least 1, got {}", parts);
  if (parts == 1 || config.num_heads % parts == 0) return;
  fail_field("tensor_parallel",
             "the model's {} query heads ({} KV heads) do not divide over {} devices: each device "
             "attends with whole query heads (divisors of {}: {})",
             config.num_heads, config.num_kv_heads, parts, config.num_heads,
             divisors(config.num_heads));
}

bool splits_kv_heads(const ModelConfig& config, int64_t parts) {
  return parts > 1 && config.num_kv_heads % parts == 0;
}

stablehlo::Sharding weight_sharding(const ModelConfig& config, const WeightSpec& spec,
                                    int64_t parts) {
  return sharding_of(config, spec.split, spec.shape, spec.column_granule, parts);
}

stablehlo::Sharding tensor_sharding(const ModelConfig& config, const TensorSpec& spec,
                                    int64_t parts) {
  return sharding_of(config, spec.split, spec.shape, 1, parts);
}

std::string sdy_sharding(const stablehlo::Sharding& sharding, int64_t rank) {
  std::string axes;
  for (int64_t axis = 0; axis < rank; ++axis) {
    axes += axis == 0 ? "" : ", ";
    axes += axis == sharding.axis ? "{\"tp\"}" : "{}";
  }
  return fmt::format("#sdy.sharding<@mesh, [{}]>", axes);
}

void annotate_shardings(stablehlo::Module& module, stablehlo::Function& main,
                        const ModelConfig& config, const GraphSignature& signature, int64_t parts) {
  if (parts <= 1) return;
  module.set_attribute("mhlo.num_partitions", fmt::format("{} : i32", parts));
  module.set_attribute("mhlo.num_replicas", "1 : i32");
  module.add_declaration("sdy.mesh", fmt::format("  sdy.mesh @mesh = <[\"tp\"={}]>", parts));
  std::vector<stablehlo::Sharding> arguments;
  for (const TensorSpec& spec : signature.inputs) {
    arguments.push_back(tensor_sharding(config, spec, parts));
  }
  for (const WeightSpec& spec : signature.weights) {
    arguments.push_back(weight_sharding(config, spec, parts));
  }
  for (const TensorSpec& spec : signature.caches) {
    arguments.push_back(tensor_sharding(config, spec, parts));
  }
  if (arguments.size() != main.arguments().size()) {
    fail(module.name(), "{} arguments but the signature lists {}", main.arguments().size(),
         arguments.size());
  }
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const stablehlo::Value value = main.arguments()[i].value;
    main.set_argument_attribute(value, "sdy.sharding", sdy_sharding(arguments[i], value.rank()));
  }
  // Results: the outputs the host reads, replicated (a read takes one device's copy); each cache
  // as its argument, so the partitioned program updates every slice in place.
  const std::vector<stablehlo::TensorType> results = main.result_types();
  for (std::size_t i = 0; i < results.size(); ++i) {
    const std::size_t outputs = signature.outputs.size();
    const stablehlo::Sharding sharding =
        i < outputs ? tensor_sharding(config, signature.outputs[i], parts)
                    : tensor_sharding(config, signature.caches[i - outputs], parts);
    main.set_result_attribute(static_cast<int64_t>(i), "sdy.sharding",
                              sdy_sharding(sharding, results[i].rank()));
  }
}

}  // namespace xlacel::models
