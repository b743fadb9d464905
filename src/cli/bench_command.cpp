// `xlacel bench [-m MODEL] [--prompt-tokens N] [--gen-tokens N] [-r R] [--no-cold-compile]
//  [--backend ...] [--output-format text|json]`: prompt-processing and generation speed, time to
// first token, cold and cached compile time, peak memory, and decode speed against the limit
// the machine's memory bandwidth sets (bytes read per decode step / bandwidth).
#include <fmt/format.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <thread>

#include "backends/backends.h"
#include "cli/commands.h"
#include "cli/model_loading.h"
#include "cli/output_format.h"
#include "cli/runtime_flags.h"
#include "common/error.h"
#include "common/memory_bandwidth.h"
#include "common/process_stats.h"
#include "models/weight_layout.h"
#include "session/generator.h"

namespace xlacel::cli {

namespace {

struct BenchCommandOptions {
  RuntimeFlags runtime;
  int64_t prompt_tokens = 128;
  int64_t gen_tokens = 64;
  int64_t repetitions = 3;
  bool cold_compile = true;
  std::string output_format = "text";
};

struct Spread {
  double mean = 0, stddev = 0, min = 0, max = 0;
};

Spread spread(const std::vector<double>& values) {
  Spread s;
  if (values.empty()) return s;
  for (double v : values) s.mean += v;
  s.mean /= static_cast<double>(values.size());
  for (double v : values) s.stddev += (v - s.mean) * (v - s.mean);
  s.stddev = values.size() > 1 ? std::sqrt(s.stddev / static_cast<double>(values.size() - 1)) : 0;
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  return s;
}

nlohmann::json to_json(const Spread& s) {
  return {{"mean", s.mean}, {"stddev", s.stddev}, {"min", s.min}, {"max", s.max}};
}

// A fixed, ordinary-text prompt of exactly `count` tokens (the text's ids, repeated).
std::vector<int32_t> bench_prompt(const Tokenizer& tokenizer, int64_t count) {
  std::vector<int32_t> text = tokenizer.encode(
      "The lighthouse keeper climbed the spiral stairs each evening, counting the steps, "
      "listening to the sea against the rocks and thinking about the ships far out in the dark. ",
      false);
  std::vector<int32_t> ids;
  while (static_cast<int64_t>(ids.size()) < count) {
    ids.push_back(text[ids.size() % text.size()]);
  }
  return ids;
}

// Bytes one decode step reads from memory: every weight once (the tied embedding as the output
// head; an untied model's embedding table only for one row) and the whole KV cache, which the
// attention reads at every capacity position (masked) in these static-shape graphs.
struct DecodeTraffic {
  uint64_t weight_bytes = 0;
  uint64_t cache_bytes = 0;
  uint64_t total() const { return weight_bytes + cache_bytes; }
};

DecodeTraffic decode_traffic(const ModelConfig& config, const session::BackendOptions& options,
                             uint64_t uploaded_bytes) {
  DecodeTraffic traffic;
  traffic.weight_bytes = uploaded_bytes;
  const uint64_t element = options.weights == models::WeightType::kF32 ? 4 : 2;
  if (!config.tie_word_embeddings) {
    traffic.weight_bytes -= static_cast<uint64_t>(config.vocab_size - 1) *
                            static_cast<uint64_t>(config.hidden_size) * element;
  }
  traffic.cache_bytes = 2ull *
                        static_cast<uint64_t>(config.num_layers * config.num_kv_heads *
                                              options.capacity * config.head_dim) *
                        element;
  return traffic;
}

std::string graphs_text(const session::LoadReport& report) {
  std::string text;
  for (const auto& g : report.graphs) {
    text += fmt::format("{}{} {:.3f} s{}", text.empty() ? "" : ", ", g.graph, g.seconds,
                        g.cached ? " (cached)" : "");
  }
  return text;
}

double gib(uint64_t bytes) {
  return static_cast<double>(bytes) / (1ull << 30);
}
double mib(uint64_t bytes) {
  return static_cast<double>(bytes) / (1ull << 20);
}

void run_bench(const BenchCommandOptions& options) {
  const bool json = json_output(options.output_format);
  if (options.prompt_tokens <= 0) fail("--prompt-tokens", "must be positive");
  if (options.gen_tokens <= 1) fail("--gen-tokens", "must be at least 2");
  if (options.repetitions <= 0) fail("--repetitions", "must be positive");

  ModelFiles model = open_model(options.runtime.model);
  std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(model);
  const std::vector<int32_t> prompt = bench_prompt(*tokenizer, options.prompt_tokens);
  session::BackendOptions backend_options = cli::backend_options(
      options.runtime, model, options.prompt_tokens + options.gen_tokens, json);
  backend_options.argmax_graph = true;

  // Cold compile into an empty cache of our own, then the same graphs from that cache.
  std::filesystem::path cold_dir;
  std::optional<session::LoadReport> cold_report;
  if (options.cold_compile) {
    cold_dir = std::filesystem::temp_directory_path() /
               fmt::format("xlacel-bench-{}", static_cast<long>(::getpid()));
    std::filesystem::remove_all(cold_dir);
    backend_options.compile_cache_dir = cold_dir;
    cold_report = backends::open_backend(options.runtime.backend, backend_options)->load_report();
  }
  std::unique_ptr<session::Backend> backend =
      backends::open_backend(options.runtime.backend, backend_options);
  if (!cold_dir.empty()) std::filesystem::remove_all(cold_dir);
  session::Session session(*backend);

  session::GenerateOptions generate_options;  // greedy, no EOS: always the full length
  generate_options.max_new_tokens = options.gen_tokens;
  {  // warm-up: first calls pay one-time costs (page faults, thread pool start)
    session::GenerateOptions warm = generate_options;
    warm.max_new_tokens = 2;
    session::generate(session, prompt, warm, [](int32_t) { return true; });
  }
  std::vector<double> pp, tg, ttft;
  for (int64_t r = 0; r < options.repetitions; ++r) {
    session.reset();
    session::GenerateResult result =
        session::generate(session, prompt, generate_options, [](int32_t) { return true; });
    pp.push_back(result.prompt_tokens_per_second());
    tg.push_back(result.generation_tokens_per_second());
    ttft.push_back(result.prefill_seconds);
  }

  const uint64_t peak_rss = peak_rss_bytes();  // before the bandwidth probe's own buffer
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  const double bandwidth = measure_read_bandwidth(static_cast<int>(threads));
  const DecodeTraffic traffic =
      decode_traffic(model.config(), backend_options, backend->load_report().weight_bytes);
  const double limit = bandwidth / static_cast<double>(traffic.total());
  const Spread pp_s = spread(pp), tg_s = spread(tg), ttft_s = spread(ttft);
  const auto& caps = backend->capabilities();
  const auto& report = backend->load_report();

  if (json) {
    nlohmann::json out = {{"model", model.path()},
                          {"backend", caps.backend},
                          {"device", caps.device},
                          {"weights", options.runtime.weights},
                          {"context", caps.capacity},
                          {"prefill_bucket", caps.prefill_bucket},
                          {"prompt_tokens", options.prompt_tokens},
                          {"gen_tokens", options.gen_tokens},
                          {"repetitions", options.repetitions},
                          {"prompt_tokens_per_second", to_json(pp_s)},
                          {"generation_tokens_per_second", to_json(tg_s)},
                          {"time_to_first_token_seconds", to_json(ttft_s)},
                          {"compile_cached", graphs_json(report)},
                          {"weights_upload_seconds", report.weights_seconds},
                          {"weight_bytes", report.weight_bytes},
                          {"peak_rss_bytes", peak_rss},
                          {"read_bandwidth_bytes_per_second", bandwidth},
                          {"bandwidth_threads", threads},
                          {"decode_bytes_per_token",
                           {{"weights", traffic.weight_bytes}, {"kv_cache", traffic.cache_bytes}}},
                          {"decode_limit_tokens_per_second", limit},
                          {"decode_fraction_of_limit", tg_s.mean / limit}};
    if (cold_report) out["compile_cold"] = graphs_json(*cold_report);
    fmt::print("{}\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return;
  }
  fmt::print("model: {}\n", model.path());
  fmt::print("backend: {}, device: {}, weights {}, context {}, prefill bucket {}\n", caps.backend,
             caps.device, options.runtime.weights, caps.capacity, caps.prefill_bucket);
  if (cold_report) fmt::print("compile (cold):   {}\n", graphs_text(*cold_report));
  fmt::print("compile (cached): {}\n", graphs_text(report));
  fmt::print("weights: {:.1f} MiB uploaded in {:.2f} s\n", mib(report.weight_bytes),
             report.weights_seconds);
  fmt::print("prompt processing pp{}: {:.1f} ± {:.1f} tok/s (min {:.1f}, max {:.1f}; {} runs)\n",
             options.prompt_tokens, pp_s.mean, pp_s.stddev, pp_s.min, pp_s.max,
             options.repetitions);
  fmt::print("generation tg{}:       {:.2f} ± {:.2f} tok/s (min {:.2f}, max {:.2f})\n",
             options.gen_tokens, tg_s.mean, tg_s.stddev, tg_s.min, tg_s.max);
  fmt::print("time to first token:  {:.3f} ± {:.3f} s\n", ttft_s.mean, ttft_s.stddev);
  fmt::print("peak RSS: {:.2f} GiB\n", gib(peak_rss));
  fmt::print(
      "read bandwidth: {:.1f} GB/s ({} threads) -> decode limit {:.1f} tok/s ({:.1f} MiB read "
      "per token: weights {:.1f} + KV cache {:.1f}); achieved {:.0f}%\n",
      bandwidth / 1e9, threads, limit, mib(traffic.total()), mib(traffic.weight_bytes),
      mib(traffic.cache_bytes), 100 * tg_s.mean / limit);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto* command = app.add_subcommand(
      "bench", "Measure prompt processing, generation, time to first token, compile and memory");
  auto options = std::make_shared<BenchCommandOptions>();
  add_runtime_flags(command, options->runtime);
  command->add_option("--prompt-tokens", options->prompt_tokens, "prompt length (pp)")
      ->capture_default_str();
  command->add_option("--gen-tokens", options->gen_tokens, "tokens generated (tg)")
      ->capture_default_str();
  command->add_option("-r,--repetitions", options->repetitions, "timed runs")
      ->capture_default_str();
  command->add_flag("!--no-cold-compile", options->cold_compile,
                    "skip the cold compile (into an empty temporary cache)");
  command->add_option("--output-format", options->output_format, "text or json")
      ->capture_default_str();
  command->callback([options] { run_bench(*options); });
}

}  // namespace xlacel::cli
