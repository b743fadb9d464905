#pragma once
// What the commands share in printing their results: the --output-format choice, the JSON of
// a backend's load report, and a request's timings (JSON, and the stats line on stderr).
#include <nlohmann/json.hpp>

#include <string>

#include "engine/request.h"
#include "executor/executor.h"

namespace xlacel::cli {

// True for "json", false for "text"; Error naming --output-format for anything else.
bool json_output(const std::string& output_format);

// [{"graph", "cached", "seconds", "compile_seconds"}, ...] for each graph the backend loaded.
nlohmann::json graphs_json(const executor::LoadReport& report);

// {"prompt_tokens", "cached_tokens", "prefill_seconds", "time_to_first_token_seconds", ...}.
nlohmann::json timings_json(const engine::RequestStats& stats);

// "xlacel: prompt 37 tokens, ... tok/s | generated 8 tokens, ... tok/s | time to first token
// ... s | stop: eos" (with "(N cached)" after the prompt tokens when some were), no newline.
std::string stats_line(const engine::RequestStats& stats, engine::FinishReason reason);

}  // namespace xlacel::cli
