#pragma once
// The graph-selection options `emit` and `compile` share: -m, --graph, --bucket, --capacity,
// --weights, --slots, --sequences, and turning them into models::GraphOptions.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "models/graph_options.h"

namespace xlacel::cli {

struct GraphFlags {
  std::string model;
  std::string graph = "decode";
  int64_t bucket = 0;  // 0: 1 for decode graphs, 64 for prefill
  int64_t capacity = 512;
  std::string weights = "auto";
  int64_t slots = 1;
  int64_t sequences = 1;  // prefill only
};

// Registers the options on `command`; returns them (in the order above) so that a caller can
// add constraints such as excludes().
std::vector<CLI::Option*> add_graph_flags(CLI::App* command, GraphFlags& flags);

// --weights f32|bf16|f16; Error naming the option otherwise.
models::WeightType parse_weights_flag(const std::string& weights);

// Validates the names (Error naming the option) and applies the bucket default.
models::GraphOptions graph_options(const GraphFlags& flags);

}  // namespace xlacel::cli
