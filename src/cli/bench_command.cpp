// `xlacel bench [-m MODEL] [--prompt-tokens N] [--gen-tokens N] [-r R] [--batch 1,2,4,8]
//  [--no-cold-compile] [--backend ...] [--threads N] [--output-format text|json]`:
// prompt-processing and generation speed, time to first token, cold and cached compile time,
// peak memory, and decode speed against the limit the machine's memory bandwidth sets (bytes
// read per decode step / bandwidth); with --batch, aggregate and per-sequence decode speed and
// the step time for each batch size, on the engine's continuous-batching scheduler.
#include <fmt/format.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>

#include "cli/commands.h"
#include "cli/model_loading.h"
#include "cli/output_format.h"
#include "cli/runtime_flags.h"
#include "common/error.h"
#include "common/memory_bandwidth.h"
#include "common/process_stats.h"
#include "engine/engine.h"
#include "models/architecture.h"
#include "models/llama_layers.h"
#include "models/weight_layout.h"

namespace xlacel::cli {

namespace {

struct BenchCommandOptions {
  RuntimeFlags runtime;
  int64_t prompt_tokens = 128;
  int64_t gen_tokens = 64;
  int64_t repetitions = 3;
  std::vector<int64_t> batch;  // decode batch sizes to measure (empty: none)
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

// Bytes one decode step over B sequences reads from memory: every weight argument of that
// step's graph once (the tied embedding as the output head; an untied model's embedding table
// only for B rows; with --weights auto, B = 1 may read planes where larger B read f32; a
// mixture's experts at most B * top_k of each layer's, where the step runs only the chosen) and B
// slots' KV cache: the rows the runtime's attention kernel reads, each sequence's up to its
// length (the run's mean), or else the attention window of the run's last position (a sliding
// layer's ring in full once the window reaches it), which the graph's own attention reads at
// every position (masked) in these static-shape graphs.
struct DecodeTraffic {
  std::map<int64_t, uint64_t> weight_bytes;  // by batch size
  uint64_t cache_bytes = 0;                  // one slot
  uint64_t per_step(int64_t batch) const {
    return weight_bytes.at(batch) + static_cast<uint64_t>(batch) * cache_bytes;
  }
};

// The positions the decode steps of the run feed: the prompt takes 0 .. P-1 and prefill gives
// the first token, so the G-1 decode steps feed positions P .. P+G-2.
struct DecodePositions {
  int32_t first = 0, last = 0;
  // The keys a step attends, on average over the run: position p attends p + 1.
  double mean_length() const { return (first + last) / 2.0 + 1; }
};
DecodePositions decode_positions(int64_t prompt_tokens, int64_t gen_tokens) {
  return {static_cast<int32_t>(prompt_tokens),
          static_cast<int32_t>(std::max(prompt_tokens, prompt_tokens + gen_tokens - 2))};
}

uint64_t decode_weight_bytes(const executor::Executor& executor, const ModelConfig& config,
                             int64_t batch, int32_t last_position) {
  const models::GraphOptions graph = executor.decode_graph(batch, false, last_position);
  uint64_t bytes = 0;
  uint64_t expert_bytes = 0;
  for (const models::WeightSpec& spec :
       models::architecture_for(config).signature(config, graph).weights) {
    uint64_t size = device::dense_byte_size(spec.element, spec.shape);
    if (!config.tie_word_embeddings && spec.hf_name == "model.embed_tokens.weight") {
      size = size / static_cast<uint64_t>(spec.shape[0]) * static_cast<uint64_t>(batch);
    }
    (spec.expert ? expert_bytes : bytes) += size;
  }
  if (config.num_experts > 0) {
    const int64_t slots = models::expert_slots(batch, config.experts_per_token, config.num_experts);
    expert_bytes =
        expert_bytes / static_cast<uint64_t>(config.num_experts) * static_cast<uint64_t>(slots);
  }
  return bytes + expert_bytes;
}

DecodeTraffic decode_traffic(const executor::Executor& executor, const ModelConfig& config,
                             std::span<const int64_t> batches, DecodePositions positions) {
  const executor::ExecutorOptions& options = executor.options();
  DecodeTraffic traffic;
  for (int64_t batch : batches) {
    traffic.weight_bytes[batch] = decode_weight_bytes(executor, config, batch, positions.last);
  }
  const models::Architecture& architecture = models::architecture_for(config);
  const std::set<std::string> to_length =
      architecture.emit(config, executor.decode_graph(1, false, positions.last))
          .caches_read_to_length;
  const int64_t window = executor::attention_window(positions.last, options.capacity);
  const auto window_rows = static_cast<double>(window > 0 ? window : options.capacity);
  for (const models::TensorSpec& spec :
       architecture.cache_specs(config, options.weights, options.slots, options.capacity)) {
    const auto rows = static_cast<double>(spec.shape[2]);
    const double read =
        std::min(rows, to_length.contains(spec.name) ? positions.mean_length() : window_rows);
    traffic.cache_bytes += static_cast<uint64_t>(
        static_cast<double>(device::dense_byte_size(spec.element, spec.shape)) /
        static_cast<double>(options.slots) / rows * read);
  }
  return traffic;
}

std::string graphs_text(const executor::LoadReport& report) {
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

// One request of `gen_tokens` new tokens (no EOS) per sequence; returns each one's stats.
std::vector<engine::RequestStats> run_requests(engine::Engine& engine,
                                               const std::vector<int32_t>& prompt,
                                               int64_t sequences, int64_t gen_tokens,
                                               const std::function<void()>& after_step = {}) {
  engine::RequestOptions request;  // greedy, no EOS: always the full length
  request.max_tokens = gen_tokens;
  std::vector<engine::RequestStats> stats(static_cast<std::size_t>(sequences));
  for (int64_t i = 0; i < sequences; ++i) {
    engine.scheduler().submit(prompt, request, [&stats, i](const engine::TokenEvent& event) {
      if (event.finished) stats[static_cast<std::size_t>(i)] = event.stats;
    });
  }
  while (engine.scheduler().step()) {
    if (after_step) after_step();
  }
  return stats;
}

// Decode speed with `batch` sequences in every step: only steps that advanced all of them and
// ran no prefill chunk count.
struct BatchFigures {
  int64_t batch = 0;
  int64_t steps = 0;
  double seconds = 0;
  double step_ms() const { return steps > 0 ? 1000 * seconds / static_cast<double>(steps) : 0; }
  double per_sequence() const { return seconds > 0 ? static_cast<double>(steps) / seconds : 0; }
  double aggregate() const { return per_sequence() * static_cast<double>(batch); }
};

// The decode graphs a batch of up to `batch` sequences takes from position `first` to `last`:
// every batch size, every attention window.
std::vector<models::GraphOptions> batch_decode_graphs(const executor::Executor& executor,
                                                      int64_t batch, int32_t first, int32_t last) {
  std::vector<models::GraphOptions> graphs;
  const int64_t capacity = executor.options().capacity;
  for (int64_t rows = 1; rows <= batch; ++rows) {
    for (int32_t position = first; position <= last;) {
      graphs.push_back(executor.decode_graph(rows, false, position));
      const int64_t window = executor::attention_window(position, capacity);
      if (window == 0) break;                   // the whole cache: the last window
      position = static_cast<int32_t>(window);  // the next window's first position
    }
  }
  return graphs;
}

BatchFigures measure_batch(engine::Engine& engine, const std::vector<int32_t>& prompt,
                           int64_t batch, int64_t gen_tokens, int64_t repetitions) {
  // Every graph the run can take is compiled before the clock runs, then warmed up.
  executor::Executor& executor = engine.executor();
  const auto first = static_cast<int32_t>(prompt.size());
  executor.prepare(batch_decode_graphs(executor, batch, first, decode_positions(first, 2).last));
  // A sequence decodes from the step its prefill ends, one prefill call per step: with many
  // sequences the first would finish its gen_tokens before the last joined, and no step would
  // advance them all (64 x 128 prompt tokens: none did). So each decodes as many more tokens as
  // the batch's prefill takes steps (counted in the warm-up), within the cache.
  int64_t prefill_steps = 0;
  run_requests(engine, prompt, batch, 2, [&] {
    if (engine.scheduler().last_step().prefill_tokens > 0) ++prefill_steps;
  });
  const int64_t tokens = std::min(gen_tokens + prefill_steps,
                                  executor.options().capacity - static_cast<int64_t>(first));
  executor.prepare(
      batch_decode_graphs(executor, batch, first, decode_positions(first, tokens).last));
  BatchFigures figures{batch};
  for (int64_t r = 0; r < repetitions; ++r) {
    run_requests(engine, prompt, batch, tokens, [&] {
      const engine::StepReport& step = engine.scheduler().last_step();
      if (step.prefill_tokens == 0 && step.decode_sequences == batch) {
        ++figures.steps;
        figures.seconds += step.decode_seconds;
      }
    });
  }
  return figures;
}

void run_bench(const BenchCommandOptions& options) {
  const bool json = json_output(options.output_format);
  if (options.prompt_tokens <= 0) fail("--prompt-tokens", "must be positive");
  if (options.gen_tokens <= 1) fail("--gen-tokens", "must be at least 2");
  if (options.repetitions <= 0) fail("--repetitions", "must be positive");
  int64_t slots = 1;
  for (int64_t b : options.batch) {
    if (b < 1) fail("--batch", "batch sizes must be positive, got {}", b);
    slots = std::max(slots, b);
  }

  ModelFiles model = open_model(options.runtime.model, true, options.runtime.mmproj);
  engine::ModelText text(model);
  const std::vector<int32_t> prompt = bench_prompt(text.tokenizer(), options.prompt_tokens);
  engine::EngineOptions engine_options = cli::engine_options(
      options.runtime, model, options.prompt_tokens + options.gen_tokens, slots, json);
  // Every run sends the same prompt: reusing the previous run's KV cache would skip its prefill.
  engine_options.scheduler.prefix_reuse = false;

  // Cold compile into an empty cache of our own, then the same graphs from that cache. The cache
  // lives until the bench ends (declared before the engine, so removed after it): graphs compiled
  // later (longer attention windows, batch sizes) go into it and link the kernel object it holds.
  struct RemovedAtExit {
    std::filesystem::path dir;
    ~RemovedAtExit() {
      std::error_code ignored;
      if (!dir.empty()) std::filesystem::remove_all(dir, ignored);
    }
  } cold_cache;
  std::optional<executor::LoadReport> cold_report;
  if (options.cold_compile) {
    const std::filesystem::path cold_dir =
        std::filesystem::temp_directory_path() /
        fmt::format("xlacel-bench-{}", static_cast<long>(::getpid()));
    std::filesystem::remove_all(cold_dir);
    cold_cache.dir = cold_dir;
    engine_options.device.compile_cache_dir = cold_dir;
    cold_report = engine::Engine(open_model(options.runtime.model, true, options.runtime.mmproj),
                                 engine_options)
                      .executor()
                      .load_report();
  }
  engine::Engine engine(std::move(model), std::move(text), engine_options);
  const executor::LoadReport report = engine.executor().load_report();  // before batch graphs

  run_requests(engine, prompt, 1, 2);  // warm-up: first calls pay one-time costs
  std::vector<double> pp, tg, ttft;
  for (int64_t r = 0; r < options.repetitions; ++r) {
    const engine::RequestStats stats = run_requests(engine, prompt, 1, options.gen_tokens)[0];
    pp.push_back(stats.prompt_tokens_per_second());
    tg.push_back(stats.generation_tokens_per_second());
    ttft.push_back(stats.time_to_first_token());
  }
  std::vector<BatchFigures> batches;
  for (int64_t b : options.batch) {
    batches.push_back(measure_batch(engine, prompt, b, options.gen_tokens, options.repetitions));
  }

  const uint64_t peak_rss = peak_rss_bytes();  // before the bandwidth probe's own buffer
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  const double bandwidth = measure_read_bandwidth(static_cast<int>(threads));
  std::vector<int64_t> traffic_batches = options.batch;
  traffic_batches.push_back(1);
  const DecodeTraffic traffic =
      decode_traffic(engine.executor(), engine.model().config(), traffic_batches,
                     decode_positions(options.prompt_tokens, options.gen_tokens));
  auto limit = [&](int64_t batch) {  // aggregate tok/s the bandwidth allows
    return static_cast<double>(batch) * bandwidth / static_cast<double>(traffic.per_step(batch));
  };
  const Spread pp_s = spread(pp), tg_s = spread(tg), ttft_s = spread(ttft);
  const auto& caps = engine.executor().capabilities();
  const double single = batches.empty() ? tg_s.mean : batches.front().aggregate();

  if (json) {
    nlohmann::json batch_json = nlohmann::json::array();
    for (const BatchFigures& f : batches) {
      batch_json.push_back({{"batch", f.batch},
                            {"steps", f.steps},
                            {"step_ms", f.step_ms()},
                            {"aggregate_tokens_per_second", f.aggregate()},
                            {"per_sequence_tokens_per_second", f.per_sequence()},
                            {"speedup_vs_first", single > 0 ? f.aggregate() / single : 0},
                            {"limit_tokens_per_second", limit(f.batch)},
                            {"fraction_of_limit", f.aggregate() / limit(f.batch)}});
    }
    nlohmann::json out = {
        {"model", engine.model().path()},
        {"backend", caps.runtime},
        {"device", caps.device},
        {"weights", options.runtime.weights},
        {"math", options.runtime.math},
        {"context", caps.capacity},
        {"slots", caps.slots},
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
        {"file_bytes_in_place", report.file_bytes_in_place},
        {"kv_cache_bytes", report.cache_bytes},
        {"tensor_parallel", options.runtime.tensor_parallel},
        {"weight_bytes_per_device", report.weight_bytes_per_device},
        {"kv_cache_bytes_per_device", report.cache_bytes_per_device},
        {"peak_rss_bytes", peak_rss},
        {"read_bandwidth_bytes_per_second", bandwidth},
        {"bandwidth_threads", threads},
        {"decode_bytes_per_token",
         {{"weights", traffic.weight_bytes.at(1)}, {"kv_cache", traffic.cache_bytes}}},
        {"decode_limit_tokens_per_second", limit(1)},
        {"decode_fraction_of_limit", tg_s.mean / limit(1)},
        {"batch", batch_json}};
    if (cold_report) out["compile_cold"] = graphs_json(*cold_report);
    fmt::print("{}\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return;
  }
  fmt::print("model: {}\n", engine.model().path());
  fmt::print(
      "backend: {}, device: {}, weights {}, math {}, context {}, prefill bucket {}, slots {}\n",
      caps.runtime, caps.device, options.runtime.weights, options.runtime.math, caps.capacity,
      caps.prefill_bucket, caps.slots);
  if (cold_report) fmt::print("compile (cold):   {}\n", graphs_text(*cold_report));
  fmt::print("compile (cached): {}\n", graphs_text(report));
  fmt::print(
      "weights: {:.1f} MiB uploaded in {:.2f} s ({:.1f} MiB of the file used in place); KV "
      "cache {:.1f} MiB\n",
      mib(report.weight_bytes), report.weights_seconds, mib(report.file_bytes_in_place),
      mib(report.cache_bytes));
  if (options.runtime.tensor_parallel > 1) {
    fmt::print(
        "tensor parallel over {} devices: each holds weights {:.1f} MiB, KV cache {:.1f} MiB\n",
        options.runtime.tensor_parallel, mib(report.weight_bytes_per_device),
        mib(report.cache_bytes_per_device));
  }
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
      bandwidth / 1e9, threads, limit(1), mib(traffic.per_step(1)), mib(traffic.weight_bytes.at(1)),
      mib(traffic.cache_bytes), 100 * tg_s.mean / limit(1));
  if (batches.empty()) return;
  fmt::print(
      "decode by batch size (tg{}, {} runs each; limit = B x bandwidth / (weights + B x "
      "KV cache of a slot)):\n",
      options.gen_tokens, options.repetitions);
  fmt::print("  {:>5} {:>10} {:>14} {:>14} {:>9} {:>12} {:>9}\n", "batch", "step ms",
             "aggregate t/s", "per-seq t/s", "speedup", "limit t/s", "of limit");
  for (const BatchFigures& f : batches) {
    fmt::print("  {:>5} {:>10.2f} {:>14.1f} {:>14.2f} {:>8.2f}x {:>12.1f} {:>8.0f}%\n", f.batch,
               f.step_ms(), f.aggregate(), f.per_sequence(),
               single > 0 ? f.aggregate() / single : 0, limit(f.batch),
               100 * f.aggregate() / limit(f.batch));
  }
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
  command
      ->add_option("--batch", options->batch,
                   "decode batch sizes to measure, e.g. 1,2,4,8,16 (sequences decoded together)")
      ->delimiter(',');
  command->add_flag("!--no-cold-compile", options->cold_compile,
                    "skip the cold compile (into an empty temporary cache)");
  command->add_option("--output-format", options->output_format, "text or json")
      ->capture_default_str();
  command->callback([options, command] {
    // Its prompt repeats one text, which prompt lookup would guess from the start: the figures
    // are of plain decode steps (as llama-bench's) unless speculation is asked for by name.
    if (command->get_option("--speculative")->count() == 0) options->runtime.speculative = "off";
    run_bench(*options);
  });
}

}  // namespace xlacel::cli
