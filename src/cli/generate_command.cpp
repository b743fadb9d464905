// `xlacel generate [-m MODEL] (-p TEXT | --chat TEXT | --messages FILE | --prompt-ids IDS)
// [--image FILE...] [-n N]
// [--temp T
//  --top-k K --top-p P --min-p P --repeat-penalty R --repeat-last-n N --seed S] [--stop STR]
//  [--ignore-eos] [--json-schema FILE | --grammar-json] [--backend iree|xla] [--device cpu|cuda]
//  [--output-format text|json] ...`:
// one request on the engine (one slot); tokens stream to stdout as they are produced;
// compile/load progress and a final stats line go to stderr.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/grammar_flags.h"
#include "cli/model_loading.h"
#include "cli/output_format.h"
#include "cli/prompt_input.h"
#include "cli/runtime_flags.h"
#include "cli/sampling_flags.h"
#include "common/error.h"
#include "engine/engine.h"
#include "engine/model_text.h"

namespace xlacel::cli {

namespace {

struct GenerateCommandOptions {
  RuntimeFlags runtime;
  PromptInput prompt;
  std::string prompt_ids;  // --prompt-ids: token ids, as given (no tokenizer needed)
  int64_t max_new_tokens = 128;
  engine::SamplingOptions sampling;
  std::vector<std::string> stop;
  GrammarFlags grammar;
  std::string output_format = "text";
  bool ignore_eos = false;
};

nlohmann::json load_json(const executor::LoadReport& report) {
  return {
      {"graphs", graphs_json(report)},       {"weights_seconds", report.weights_seconds},
      {"weight_bytes", report.weight_bytes}, {"file_bytes_in_place", report.file_bytes_in_place},
      {"cache_bytes", report.cache_bytes},   {"total_seconds", report.total_seconds}};
}

// "1 2 3" or "1,2,3": ids inside the vocabulary, at least one.
std::vector<int32_t> parse_token_ids(const std::string& list, int64_t vocab_size) {
  std::vector<int32_t> ids;
  std::string item;
  auto flush = [&] {
    if (item.empty()) return;
    size_t used = 0;
    long long id = -1;
    try {
      id = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || id < 0 || id >= vocab_size) {
      fail("--prompt-ids", "'{}' is not a token id below the vocabulary size {}", item, vocab_size);
    }
    ids.push_back(static_cast<int32_t>(id));
    item.clear();
  };
  for (char ch : list) {
    if (ch == ' ' || ch == ',') {
      flush();
    } else {
      item += ch;
    }
  }
  flush();
  if (ids.empty()) fail("--prompt-ids", "no token ids given");
  return ids;
}

void run_generate(const GenerateCommandOptions& options) {
  const bool json = json_output(options.output_format);
  if (options.max_new_tokens <= 0) fail("-n", "must be positive, got {}", options.max_new_tokens);
  check_sampling_flags(options.sampling);

  ModelFiles model = open_model(options.runtime.model, true, options.runtime.mmproj);
  std::optional<engine::ModelText> text;
  std::vector<int32_t> prompt;
  std::shared_ptr<const std::vector<float>> image_pixels;
  if (!options.prompt_ids.empty()) {
    if (!options.prompt.text.empty() || !options.prompt.chat.empty() ||
        !options.prompt.messages_path.empty() || !options.prompt.images.empty()) {
      fail("--prompt-ids", "give either token ids or -p/--chat/--messages/--image, not both");
    }
    prompt = parse_token_ids(options.prompt_ids, model.config().vocab_size);
    if (engine::has_tokenizer(model)) text.emplace(model);
  } else {
    text.emplace(model);
    Prompt given = cli::prompt(*text, model, options.prompt);
    prompt = std::move(given.ids);
    image_pixels = std::move(given.image_pixels);
  }
  engine::EngineOptions engine_options =
      cli::engine_options(options.runtime, model,
                          static_cast<int64_t>(prompt.size()) + options.max_new_tokens, 1, false);
  engine_options.executor.preload_logits = options.sampling.needs_logits() || options.grammar.any();
  if (static_cast<int64_t>(prompt.size()) > engine_options.executor.capacity) {
    fail("prompt", "{} tokens do not fit the context of {} positions (raise --context)",
         prompt.size(), engine_options.executor.capacity);
  }
  std::optional<engine::Engine> engine_holder;
  if (text) {
    engine_holder.emplace(std::move(model), std::move(*text), engine_options);
  } else {
    engine_holder.emplace(std::move(model), engine_options);
  }
  engine::Engine& engine = *engine_holder;

  engine::RequestOptions request = engine.default_request();
  request.max_tokens = options.max_new_tokens;
  request.sampling = options.sampling;
  request.stop = options.stop;
  if (options.ignore_eos) request.eos_ids.clear();
  request.grammar = grammar_from_flags(engine, options.grammar);
  request.image_pixels = image_pixels;

  std::vector<int32_t> output_ids;
  std::string output_text;
  engine::TokenEvent last;
  engine.scheduler().submit(prompt, request, [&](const engine::TokenEvent& event) {
    if (event.token >= 0) output_ids.push_back(event.token);
    output_text += event.text;
    if (!json && !event.text.empty()) {
      std::fwrite(event.text.data(), 1, event.text.size(), stdout);
      std::fflush(stdout);
    }
    if (event.finished) last = event;
  });
  engine.scheduler().run_until_idle();

  const engine::RequestStats& stats = last.stats;
  const executor::Capabilities& caps = engine.executor().capabilities();
  if (json) {
    nlohmann::json out = {{"model", engine.model().path()},
                          {"backend", caps.runtime},
                          {"device", caps.device},
                          {"context", caps.capacity},
                          {"prompt_ids", prompt},
                          {"output_ids", output_ids},
                          {"text", output_text},
                          {"stop", engine::finish_reason_name(last.reason)},
                          {"stop_message", last.message},
                          {"timings", timings_json(stats)},
                          {"load", load_json(engine.executor().load_report())}};
    fmt::print("{}\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return;
  }
  std::fputc('\n', stdout);
  std::fflush(stdout);
  if (last.reason == engine::FinishReason::kCapacity) {
    fmt::print(stderr, "xlacel: {}; raise --context\n", last.message);
  }
  fmt::print(stderr, "{}\n", stats_line(stats, last.reason));
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto* command = app.add_subcommand("generate", "Generate text from a prompt, streamed");
  auto options = std::make_shared<GenerateCommandOptions>();
  add_runtime_flags(command, options->runtime);
  command->add_option("-p,--prompt", options->prompt.text, "raw prompt text");
  command->add_option("--chat", options->prompt.chat,
                      "one user message, through the model's chat template");
  command->add_option("--messages", options->prompt.messages_path,
                      "JSON file of {role, content} messages, through the chat template");
  command->add_option("--image", options->prompt.images,
                      "an image file (PNG, JPEG, WebP, GIF) for a vision-language model, before "
                      "the text; repeat for several");
  command->add_option(
      "--prompt-ids", options->prompt_ids,
      "the prompt as token ids (\"1 2 3\" or \"1,2,3\"); works without a tokenizer");
  command->add_option("-n,--max-new-tokens", options->max_new_tokens, "tokens to generate at most")
      ->capture_default_str();
  add_sampling_flags(command, options->sampling);
  add_grammar_flags(command, options->grammar);
  command->add_option("--stop", options->stop,
                      "stop before this text (repeatable; the text is not printed)");
  command->add_flag("--ignore-eos", options->ignore_eos,
                    "keep generating past end-of-sequence tokens (for tests and benchmarks)");
  command
      ->add_option("--output-format", options->output_format,
                   "text (streamed) or json (one object)")
      ->capture_default_str();
  command->callback([options] { run_generate(*options); });
}

}  // namespace xlacel::cli
