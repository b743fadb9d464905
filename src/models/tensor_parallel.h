#pragma once
// Tensor parallelism over N devices, Megatron-style, as the registry declares it: each weight and
// cache spec carries a role (tensor_split.h), turned here into a stablehlo::Sharding for N, and
// each graph's arguments and results are annotated with it for XLA's SPMD partitioner (Shardy),
// which partitions the one graph and inserts the collectives (an all-reduce after each kInputs
// product).
//
// The query heads must divide N (each device attends with whole heads). The KV heads split with
// them where they divide N; where they do not, the K/V projections and caches are replicated
// (every device computes and keeps all KV heads) and only the query heads split. A matrix whose
// split axis does not divide N (or not in whole blocks of its planes, column_granule) is
// replicated; XLA then reads the slice it needs.
#include <cstdint>
#include <string>
#include <string_view>

#include "model_files/model_config.h"
#include "models/graph_signature.h"
#include "stablehlo/function.h"
#include "stablehlo/module.h"
#include "stablehlo/sharding.h"

namespace xlacel::models {

// Throws FieldError "tensor_parallel: ..." naming the head counts when `parts` devices cannot
// split the model's query heads; parts < 1 is an Error too. Every graph's signature checks it.
void check_tensor_parallel(const ModelConfig& config, int64_t parts);
// Whether the KV heads (K/V projections and caches) are split over `parts` devices, rather than
// replicated.
bool splits_kv_heads(const ModelConfig& config, int64_t parts);

stablehlo::Sharding weight_sharding(const ModelConfig& config, const WeightSpec& spec,
                                    int64_t parts);
stablehlo::Sharding tensor_sharding(const ModelConfig& config, const TensorSpec& spec,
                                    int64_t parts);

// The bytes of one device's share of a tensor of `bytes` laid out by `sharding` over `parts`.
inline uint64_t device_bytes(uint64_t bytes, const stablehlo::Sharding& sharding, int64_t parts) {
  return sharding.replicated() ? bytes : bytes / static_cast<uint64_t>(parts);
}

// The sdy.sharding attribute of a tensor of `rank` over the mesh @mesh (axis "tp"):
// #sdy.sharding<@mesh, [{}, {"tp"}]> cuts axis 1; every axis {} is replicated.
std::string sdy_sharding(const stablehlo::Sharding& sharding, int64_t rank);

// For a graph partitioned over `parts` > 1 devices: declares the mesh and the partition count in
// `module` and puts each argument's and result's sharding on `main` (finished, its arguments and
// results in signature order: inputs, weights, caches; outputs, caches). Nothing for parts 1.
void annotate_shardings(stablehlo::Module& module, stablehlo::Function& main,
                        const ModelConfig& config, const GraphSignature& signature, int64_t parts);

}  // namespace xlacel::models
