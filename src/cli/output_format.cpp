#include "cli/output_format.h"

#include <fmt/format.h>

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

nlohmann::json timings_json(const engine::RequestStats& stats) {
  return {{"prompt_tokens", stats.prompt_tokens},
          {"cached_tokens", stats.cached_tokens},
          {"prefill_seconds", stats.prefill_seconds},
          {"time_to_first_token_seconds", stats.time_to_first_token()},
          {"prompt_tokens_per_second", stats.prompt_tokens_per_second()},
          {"decode_steps", stats.decode_steps},
          {"drafted_tokens", stats.drafted_tokens},
          {"accepted_tokens", stats.accepted_tokens},
          {"images_encoded", stats.images_encoded},
          {"image_seconds", stats.image_seconds},
          {"decode_seconds", stats.decode_seconds},
          {"generation_tokens_per_second", stats.generation_tokens_per_second()}};
}

std::string stats_line(const engine::RequestStats& stats, engine::FinishReason reason) {
  const std::string cached =
      stats.cached_tokens > 0 ? fmt::format(" ({} cached)", stats.cached_tokens) : "";
  const std::string drafted =
      stats.drafted_tokens > 0
          ? fmt::format(" ({} of {} drafted accepted)", stats.accepted_tokens, stats.drafted_tokens)
          : "";
  const std::string images =
      stats.images_encoded > 0
          ? fmt::format(" ({} image{} encoded in {:.3f} s)", stats.images_encoded,
                        stats.images_encoded == 1 ? "" : "s", stats.image_seconds)
          : "";
  return fmt::format(
      "xlacel: prompt {} tokens{}{}, {:.1f} tok/s | generated {} tokens{}, {:.1f} tok/s | "
      "time to first token {:.3f} s | stop: {}",
      stats.prompt_tokens, cached, images, stats.prompt_tokens_per_second(), stats.output_tokens,
      drafted, stats.generation_tokens_per_second(), stats.time_to_first_token(),
      engine::finish_reason_name(reason));
}

}  // namespace xlacel::cli
