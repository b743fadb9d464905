#include "cli/graph_flags.h"

#include <fmt/format.h>

#include "common/error.h"

namespace xlacel::cli {

std::vector<CLI::Option*> add_graph_flags(CLI::App* command, GraphFlags& flags) {
  return {
      command->add_option("-m,--model", flags.model, "GGUF file or HF model directory"),
      command
          ->add_option(
              "--graph", flags.graph,
              "prefill, decode, decode-logits, copy-slot, save-slot, restore-slot, embed or verify")
          ->capture_default_str(),
      command->add_option("--bucket", flags.bucket,
                          "prefill: tokens per call (default 64); decode: rows, one per slot "
                          "0 .. N-1 (default 1)"),
      command->add_option("--capacity", flags.capacity, "KV-cache positions per slot")
          ->capture_default_str(),
      command
          ->add_option("--weights", flags.weights,
                       "weights: auto (as the file stores them), f32, bf16 or f16")
          ->capture_default_str(),
      command
          ->add_option("--slots", flags.slots,
                       "sequences the KV cache holds (decode: bucket <= slots)")
          ->capture_default_str(),
      command
          ->add_option("--sequences", flags.sequences,
                       "prefill: sequences per call, each its own slot and chunk (<= slots)")
          ->capture_default_str(),
  };
}

models::WeightType parse_weights_flag(const std::string& weights) {
  auto type = models::parse_weight_type(weights);
  if (!type) fail("--weights", "unknown weight type '{}' (auto, f32, bf16, f16)", weights);
  return *type;
}

models::GraphOptions graph_options(const GraphFlags& flags) {
  models::GraphOptions graph;
  auto kind = models::parse_graph_kind(flags.graph);
  if (!kind)
    fail("--graph",
         "unknown graph '{}' (prefill, decode, decode-logits, copy-slot, save-slot, "
         "restore-slot, embed)",
         flags.graph);
  graph.kind = *kind;
  graph.weights = parse_weights_flag(flags.weights);
  if (flags.bucket < 0)
    fail("--bucket", "must be positive (0: the graph's default), got {}", flags.bucket);
  if (flags.capacity <= 0) fail("--capacity", "must be positive, got {}", flags.capacity);
  if (flags.slots <= 0) fail("--slots", "must be positive, got {}", flags.slots);
  if (flags.sequences <= 0) fail("--sequences", "must be positive, got {}", flags.sequences);
  if (flags.sequences > 1 && !models::prefills(*kind)) {
    fail("--sequences", "only a prefill, embed or verify graph runs several sequences' chunks");
  }
  graph.bucket = flags.bucket > 0 ? flags.bucket : (models::prefills(*kind) ? 64 : 1);
  graph.capacity = flags.capacity;
  graph.slots = flags.slots;
  graph.sequences = flags.sequences;
  return graph;
}

}  // namespace xlacel::cli
