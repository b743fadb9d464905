#pragma once
// The options `generate` and `bench` share for loading a model on a runtime: -m, --backend,
// --device, --threads, --tensor-parallel, --weights, --math, --context, --prefill-bucket,
// --speculative, --draft-max, and the
// options of one runtime (--plugin for xla; --cuda-sm, --compiler-flag for iree); turned into
// engine::EngineOptions.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "model_files/model_files.h"

namespace xlacel::cli {

struct RuntimeFlags {
  std::string model;
  std::string mmproj;  // --mmproj: llama.cpp's image encoder file for a GGUF model
  std::string backend = "iree";
  std::string device = "cpu";
  int threads = 0;          // CPU runtimes: worker threads (0: the runtime's default)
  int tensor_parallel = 1;  // devices each graph is partitioned over (--backend xla)
  std::string weights = "auto";
  std::string math = "exact";  // exact, or fast (int8 products)
  int64_t context = 0;  // KV-cache capacity; 0: the smallest of 512, 1024, ... that fits the run
  int64_t prefill_bucket = 64;
  int64_t small_prefill_bucket = 16;
  int64_t prefill_sequences = 4;  // chunks of the small bucket per prefill call (several slots)
  std::string plugin;             // PJRT plugin (--backend xla)
  std::string cuda_sm;            // IREE CUDA target (--backend iree --device cuda)
  std::vector<std::string> compiler_flags;  // extra iree-compile flags, for tuning
  std::string speculative = "auto";         // speculative decoding: auto, ngram or off
  int64_t draft_max = 3;                    // drafted tokens per verify call, at most
};

void add_runtime_flags(CLI::App* command, RuntimeFlags& flags);

// Engine options for `slots` sequences of up to `positions` cache positions each (prompt + new
// tokens); validates names and sizes (Error naming the option). Progress lines go to stderr
// unless quiet.
engine::EngineOptions engine_options(const RuntimeFlags& flags, const ModelFiles& model,
                                     int64_t positions, int64_t slots, bool quiet);

}  // namespace xlacel::cli
