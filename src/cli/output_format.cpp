#include "cli/output_format.h"

#include "common/error.h"

namespace xlacel::cli {

bool json_output(const std::string& output_format) {
  if (output_format != "text" && output_format != "json") {
    fail("--output-format", "unknown format '{}' (text, json)", output_format);
  }
  return output_format == "json";
}

nlohmann::json graphs_json(const executor::LoadReport& report) {
  nlohmann::json graphs = nlohmann::json::array();
  for (const auto& g : report.graphs) {
    graphs.push_back({{"graph", g.graph},
                      {"cached", g.cached},
                      {"seconds", g.seconds},
                      {"compile_seconds", g.compile_seconds}});
  }
  return graphs;
}

}  // namespace xlacel::cli
