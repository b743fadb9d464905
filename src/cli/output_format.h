#pragma once
// What the commands share in printing their results: the --output-format choice and the JSON of
// a backend's load report.
#include <nlohmann/json.hpp>

#include <string>

#include "executor/executor.h"

namespace xlacel::cli {

// True for "json", false for "text"; Error naming --output-format for anything else.
bool json_output(const std::string& output_format);

// [{"graph", "cached", "seconds", "compile_seconds"}, ...] for each graph the backend loaded.
nlohmann::json graphs_json(const executor::LoadReport& report);

}  // namespace xlacel::cli
