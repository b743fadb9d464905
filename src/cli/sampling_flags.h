#pragma once
// The sampling flags `generate` and `chat` share (--temp, --top-k, --top-p, --min-p,
// --repeat-penalty, --repeat-last-n, --seed) and their validation, naming the flag.
#include <CLI/CLI.hpp>

#include "engine/sampler.h"

namespace xlacel::cli {

void add_sampling_flags(CLI::App* command, engine::SamplingOptions& sampling);

// Error naming the flag ("--top-p must be in (0, 1], got 2") when the options are invalid.
void check_sampling_flags(const engine::SamplingOptions& sampling);

}  // namespace xlacel::cli
