#include "cli/runtime_flags.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "cli/graph_flags.h"
#include "common/error.h"
#include "models/graph_options.h"

namespace xlacel::cli {

void add_runtime_flags(CLI::App* command, RuntimeFlags& flags) {
  command->add_option("-m,--model", flags.model,
                      "GGUF file or HF model directory (default: the model scripts/setup fetched)");
  command->add_option("--backend", flags.backend, "iree or xla")->capture_default_str();
  command->add_option("--device", flags.device, "cpu or cuda")->capture_default_str();
  command
      ->add_option("--weights", flags.weights, "weight and KV-cache type: f32 (exact), bf16 or f16")
      ->capture_default_str();
  command->add_option("--context", flags.context,
                      "KV-cache positions (default: the smallest power of two from 512 that "
                      "holds prompt and new tokens)");
  command->add_option("--prefill-bucket", flags.prefill_bucket, "prompt tokens per prefill call")
      ->capture_default_str();
  command->add_option("--plugin", flags.plugin, "PJRT plugin .so for --backend xla");
  command->add_option("--cuda-sm", flags.cuda_sm, "CUDA architecture for IREE (default sm_80)");
  command->add_option("--compiler-flag", flags.compiler_flags,
                      "extra compiler flag (repeatable; part of the cache key), for tuning");
}

session::BackendOptions backend_options(const RuntimeFlags& flags, const ModelFiles& model,
                                        int64_t positions, bool quiet) {
  session::BackendOptions options;
  options.model = &model;
  auto device = session::parse_device_kind(flags.device);
  if (!device) fail("--device", "unknown device '{}' (cpu, cuda)", flags.device);
  options.device = *device;
  options.weights = parse_weights_flag(flags.weights);

  const int64_t max_positions = model.config().max_position_embeddings;
  int64_t capacity = flags.context;
  if (capacity < 0) fail("--context", "must be positive, got {}", capacity);
  if (capacity == 0) {
    capacity = 512;
    while (capacity < positions && capacity < max_positions) capacity *= 2;
    if (max_positions > 0) capacity = std::min(capacity, max_positions);
  } else if (max_positions > 0 && capacity > max_positions) {
    fail("--context", "{} is more than the model's {} positions", capacity, max_positions);
  }
  options.capacity = capacity;
  if (flags.prefill_bucket <= 0) {
    fail("--prefill-bucket", "must be positive, got {}", flags.prefill_bucket);
  }
  options.prefill_bucket = std::min(flags.prefill_bucket, capacity);
  options.plugin_path = flags.plugin;
  options.cuda_sm = flags.cuda_sm;
  options.extra_compiler_flags = flags.compiler_flags;
  if (!quiet) {
    options.progress = [](std::string_view line) {
      std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
    };
  }
  return options;
}

}  // namespace xlacel::cli
