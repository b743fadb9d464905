// `xlacel serve [-m MODEL] [--host H] [--port P] [--parallel N] [--queue N] [--context N]
//  [--api-key KEY] [--alias NAME] [--reasoning-format auto|none] [--cache-ram MIB]
//  [--pooling model|mean|cls|last] [--slot-save-path DIR] [--max-images-per-request N]
//  [runtime flags]`: an OpenAI- and Anthropic-compatible HTTP server (src/server) over the
//  batching engine. It listens at once and answers 503 until the model is loaded; SIGINT or
//  SIGTERM stop it gracefully (exit 0).
#include <fmt/format.h>
#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "cli/commands.h"
#include "cli/model_loading.h"
#include "cli/runtime_flags.h"
#include "common/error.h"
#include "engine/engine.h"
#include "server/server.h"

namespace xlacel::cli {

namespace {

struct ServeCommandOptions {
  RuntimeFlags runtime;
  std::string host = "127.0.0.1";
  int port = 8080;
  int64_t parallel = 4;
  int64_t queue = 64;
  std::string api_key;
  std::string alias;
  double shutdown_grace = 10;
  std::string reasoning_format = "auto";
  int64_t cache_ram_mib = 0;
  std::string pooling = "model";
  std::string slot_save_path;
  int64_t max_images = static_cast<int64_t>(server::kDefaultMaxImages);
};

void log_line(std::string_view line) {
  static std::mutex mutex;  // whole lines from many threads
  std::lock_guard lock(mutex);
  std::fprintf(stderr, "xlacel serve: %.*s\n", static_cast<int>(line.size()), line.data());
  std::fflush(stderr);
}

// The name clients send as "model": the file name without .gguf, or the directory's name.
std::string model_id(const ModelFiles& model) {
  std::filesystem::path path(model.path());
  if (path.filename().empty()) path = path.parent_path();
  return path.extension() == ".gguf" ? path.stem().string() : path.filename().string();
}

void run_serve(const ServeCommandOptions& options) {
  if (options.parallel < 1) fail("--parallel", "must be at least 1, got {}", options.parallel);
  if (options.queue < 0) fail("--queue", "must be >= 0, got {}", options.queue);
  if (options.port < 0 || options.port > 65535) {
    fail("--port", "must be in [0, 65535], got {}", options.port);
  }
  if (options.shutdown_grace < 0) {
    fail("--shutdown-grace", "must be >= 0, got {}", options.shutdown_grace);
  }
  if (options.cache_ram_mib < 0) {
    fail("--cache-ram", "must be >= 0 MiB, got {}", options.cache_ram_mib);
  }
  if (options.reasoning_format != "auto" && options.reasoning_format != "none") {
    fail("--reasoning-format", "must be auto or none, got '{}'", options.reasoning_format);
  }
  std::optional<Pooling> pooling;
  if (options.pooling != "model") {
    pooling = parse_pooling(options.pooling);
    if (!pooling) fail("--pooling", "must be model, mean, cls or last, got '{}'", options.pooling);
  }
  if (!options.slot_save_path.empty() && !std::filesystem::is_directory(options.slot_save_path)) {
    fail("--slot-save-path", "'{}' is not a directory", options.slot_save_path);
  }
  // A slot's rows come to the host whole: partitioned caches would come in slices.
  if (!options.slot_save_path.empty() && options.runtime.tensor_parallel > 1) {
    fail("--slot-save-path", "needs one device (--tensor-parallel is {})",
         options.runtime.tensor_parallel);
  }
  ModelFiles model = open_model(options.runtime.model, true, options.runtime.mmproj);
  if (!engine::has_tokenizer(model)) fail(model.path(), "the model has no tokenizer to serve text");
  // Without --context each slot holds 1024 positions (or the model's maximum, if smaller).
  engine::EngineOptions engine_options =
      cli::engine_options(options.runtime, model, 1024, options.parallel, false);
  // Every batch size of both decode variants up front (the logits ones with the engine, the
  // argmax ones below): a first compile in the middle of serving would stall every stream.
  const std::vector<int64_t> batch_sizes = executor::decode_buckets(options.parallel);
  engine_options.executor.preload_decode_rows = batch_sizes;
  engine_options.executor.preload_logits = true;
  engine_options.scheduler.prompt_cache_bytes = static_cast<std::size_t>(options.cache_ram_mib)
                                                << 20;

  server::ServerOptions server_options;
  server_options.host = options.host;
  server_options.port = options.port;
  server_options.api_key = options.api_key;
  server_options.model_id = options.alias.empty() ? model_id(model) : options.alias;
  server_options.max_waiting = static_cast<std::size_t>(options.queue);
  server_options.http_threads = static_cast<std::size_t>(options.parallel + options.queue + 16);
  server_options.log = log_line;
  server_options.split_reasoning = options.reasoning_format == "auto";
  server_options.pooling = pooling;
  server_options.slot_save_path = options.slot_save_path;
  server_options.max_images_per_request = static_cast<std::size_t>(options.max_images);

  // Signals are taken by one thread (sigwait) rather than a handler, so shutting down may lock
  // and wait. Blocked before any other thread starts, so every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client that went away is a failed write, not a death

  std::unique_ptr<engine::Engine> engine;  // outlives the server and its scheduler thread
  server::Server server(server_options);
  const int port = server.bind();
  log_line(fmt::format("listening on http://{}:{} (model '{}' loading)", options.host, port,
                       server_options.model_id));
  std::thread http([&server] { server.listen(); });

  enum class Stage { kLoading, kServing, kFailed };
  std::atomic<Stage> stage = Stage::kLoading;
  std::thread signal_thread([&] {
    int signal = 0;
    sigwait(&signals, &signal);
    if (stage == Stage::kFailed) return;  // woken by the main thread below
    if (stage == Stage::kLoading) {
      // Nothing is in flight while the model loads; there is nothing to drain.
      log_line(fmt::format("{} while loading; exiting", strsignal(signal)));
      std::fflush(nullptr);
      std::_Exit(0);
    }
    log_line(fmt::format("{}: finishing requests in flight (up to {} s), then exiting",
                         strsignal(signal), options.shutdown_grace));
    server.shutdown(options.shutdown_grace);
  });

  try {
    engine = std::make_unique<engine::Engine>(std::move(model), engine_options);
    // Greedy requests take the argmax graphs; each batch size at the shortest attention window
    // (a longer window loads when a sequence first reaches it).
    std::vector<models::GraphOptions> argmax_graphs;
    for (int64_t rows : batch_sizes) {
      argmax_graphs.push_back(engine->executor().decode_graph(rows, false, 0));
    }
    engine->executor().prepare(argmax_graphs);
  } catch (...) {
    stage = Stage::kFailed;
    server.shutdown(0);
    http.join();
    pthread_kill(signal_thread.native_handle(), SIGTERM);  // ends its sigwait
    signal_thread.join();
    throw;
  }
  server.attach(*engine);
  stage = Stage::kServing;
  const auto& caps = engine->executor().capabilities();
  log_line(fmt::format("ready: {} slots of {} positions on {}, {}", caps.slots, caps.capacity,
                       caps.runtime, caps.device));
  http.join();
  signal_thread.join();
  log_line("stopped");
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto* command = app.add_subcommand("serve", "Serve the model over an OpenAI-compatible HTTP API");
  auto options = std::make_shared<ServeCommandOptions>();
  add_runtime_flags(command, options->runtime);
  command->add_option("--host", options->host, "address to listen on")->capture_default_str();
  command->add_option("--port", options->port, "port to listen on (0: any free port)")
      ->capture_default_str();
  command->add_option("--parallel", options->parallel, "sequences decoded together (slots)")
      ->capture_default_str();
  command
      ->add_option("--queue", options->queue,
                   "requests that may wait for a slot; more are refused with 429")
      ->capture_default_str();
  command->add_option("--api-key", options->api_key,
                      "require 'Authorization: Bearer KEY' or 'x-api-key: KEY' on /v1/ requests");
  command->add_option("--alias", options->alias,
                      "the model name clients use (default: the model file's name)");
  command
      ->add_option("--cache-ram", options->cache_ram_mib,
                   "MiB of RAM for prompts whose slots went to other requests (their KV rows and "
                   "state), restored for a prompt that starts with one instead of prefilled; 0: "
                   "off")
      ->capture_default_str();
  command
      ->add_option("--reasoning-format", options->reasoning_format,
                   "auto: the thinking of models whose template thinks (<think> blocks) comes "
                   "apart (reasoning_content, thinking blocks); none: left in the text")
      ->capture_default_str();
  command->add_option("--slot-save-path", options->slot_save_path,
                      "a directory for POST /slots/{id}?action=save|restore (a slot's tokens and "
                      "cache rows in a file, as llama.cpp's server); unset: those actions are off");
  command
      ->add_option("--pooling", options->pooling,
                   "how /v1/embeddings pools the tokens' final hidden states: model (as the "
                   "model's files say: a sentence-transformers Pooling module, a GGUF's "
                   "pooling_type; else mean), mean, cls or last")
      ->capture_default_str();
  command
      ->add_option("--max-images-per-request", options->max_images,
                   "images one request's messages may have (a vision-language model's); more "
                   "is a 400")
      ->check(CLI::Range(int64_t{1}, int64_t{1024}))
      ->capture_default_str();
  command
      ->add_option("--shutdown-grace", options->shutdown_grace,
                   "seconds requests in flight may take to finish on SIGINT/SIGTERM")
      ->capture_default_str();
  command->callback([options] { run_serve(*options); });
}

}  // namespace xlacel::cli
