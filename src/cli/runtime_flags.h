#pragma once
// The options `generate` and `bench` share for loading a model on a backend: -m, --backend,
// --device, --weights, --context, --prefill-bucket, --plugin, --cuda-sm, --compiler-flag; and
// turning them into session::BackendOptions.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "model_files/model_files.h"
#include "session/backend.h"

namespace xlacel::cli {

struct RuntimeFlags {
  std::string model;
  std::string backend = "iree";
  std::string device = "cpu";
  std::string weights = "f32";
  int64_t context = 0;  // KV-cache capacity; 0: the smallest of 512, 1024, ... that fits the run
  int64_t prefill_bucket = 64;
  std::string plugin;                       // PJRT plugin (--backend xla)
  std::string cuda_sm;                      // IREE CUDA target (--backend iree --device cuda)
  std::vector<std::string> compiler_flags;  // extra iree-compile flags, for tuning
};

void add_runtime_flags(CLI::App* command, RuntimeFlags& flags);

// Backend options for a run that needs `positions` cache positions (prompt + new tokens);
// validates names and sizes (Error naming the option). Progress lines go to stderr unless quiet.
session::BackendOptions backend_options(const RuntimeFlags& flags, const ModelFiles& model,
                                        int64_t positions, bool quiet);

}  // namespace xlacel::cli
