// `xlacel chat [-m MODEL] [--system TEXT] [-n N] [--temp T ...] [--json-schema FILE |
//  --grammar-json] [--no-prefix-reuse] [--image FILE...]
//  [--backend iree|xla] [--threads N] [--context N] ... [--output-format text|json]`: a
// conversation in the terminal. Each line of stdin is a user turn (a pipe works the same way;
// EOF ends); `/reset` forgets the conversation, `/exit` ends it, `/image FILE` adds an image to
// the next message (as --image does to the first). The reply streams to stdout and
// a stats line per turn goes to stderr; json: one object per turn instead. The conversation
// lives in engine::Conversation; the scheduler's prefix reuse keeps earlier turns' KV cache.
#include <fmt/format.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/grammar_flags.h"
#include "cli/model_loading.h"
#include "cli/output_format.h"
#include "cli/runtime_flags.h"
#include "cli/sampling_flags.h"
#include "common/error.h"
#include "engine/chat_images.h"
#include "engine/conversation.h"
#include "engine/engine.h"

namespace xlacel::cli {

namespace {

// Without --context: room for a conversation of several turns, not just one reply.
constexpr int64_t kDefaultChatPositions = 2048;

struct ChatCommandOptions {
  RuntimeFlags runtime;
  std::string system;
  int64_t max_tokens = 256;
  engine::SamplingOptions sampling;
  GrammarFlags grammar;  // every reply
  bool no_prefix_reuse = false;
  std::string output_format = "text";
  std::vector<std::string> images;  // --image: for the first turn
};

void print_text(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

void run_chat(const ChatCommandOptions& options) {
  const bool json = json_output(options.output_format);
  if (options.max_tokens <= 0) fail("--max-tokens", "must be positive, got {}", options.max_tokens);
  check_sampling_flags(options.sampling);

  ModelFiles model = open_model(options.runtime.model, true, options.runtime.mmproj);
  engine::ModelText text(model);
  if (!text.has_chat_template()) fail(model.path(), "the model has no chat template");
  engine::EngineOptions engine_options =
      cli::engine_options(options.runtime, model, kDefaultChatPositions, 1, false);
  engine_options.executor.preload_logits = options.sampling.needs_logits() || options.grammar.any();
  engine_options.scheduler.prefix_reuse = !options.no_prefix_reuse;
  engine::Engine engine(std::move(model), std::move(text), engine_options);

  engine::RequestOptions request = engine.default_request();
  request.max_tokens = options.max_tokens;
  request.sampling = options.sampling;
  request.grammar = grammar_from_flags(engine, options.grammar);
  engine::Conversation conversation(engine.text(), options.system);
  // Images wait for the next turn: --image's for the first, then each `/image FILE` line's.
  std::optional<engine::ModelImages> model_images;
  std::vector<float> next_pixels;
  std::vector<engine::ImageLayout> next_layouts;
  auto take_image = [&](const std::string& path) {
    if (!model_images) {
      if (!engine::has_vision(engine.model())) {
        fail("--image",
             "the model reads text only (no vision tower; a GGUF model takes its image encoder "
             "from --mmproj FILE)");
      }
      model_images.emplace(engine.model());
    }
    const engine::ImageFile file = engine::read_image_file(path);
    const engine::PreparedImages image = model_images->prepare(std::span(&file, 1));
    next_pixels.insert(next_pixels.end(), image.pixels->begin(), image.pixels->end());
    next_layouts.push_back(image.layouts.at(0));
  };
  for (const std::string& path : options.images) take_image(path);

  const bool interactive = ::isatty(STDIN_FILENO) != 0;
  int turns = 0;
  std::string line;
  while (true) {
    if (interactive) print_text("> ");
    if (!std::getline(std::cin, line)) break;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line == "/exit") break;
    if (line == "/reset") {
      conversation.reset();
      next_pixels.clear();
      next_layouts.clear();
      if (interactive) fmt::print(stderr, "xlacel: the conversation is cleared\n");
      continue;
    }
    if (line.starts_with("/image ")) {
      try {
        take_image(line.substr(7));
        if (interactive) fmt::print(stderr, "xlacel: the image goes with your next message\n");
      } catch (const Error& e) {
        fmt::print(stderr, "xlacel: {}\n", e.what());
      }
      continue;
    }
    engine::ChatTurn turn;
    try {
      const engine::PreparedImages images{std::make_shared<const std::vector<float>>(next_pixels),
                                          next_layouts};
      turn =
          conversation.reply(engine.scheduler(), line, request,
                             json ? std::function<void(std::string_view)>() : print_text, images);
      next_pixels.clear();
      next_layouts.clear();
    } catch (const Error& e) {
      // The turn is dropped and the conversation goes on as it was.
      fmt::print(stderr, "xlacel: {} (/reset starts over; --context sets the room)\n", e.what());
      continue;
    }
    ++turns;
    if (json) {
      const nlohmann::json out = {{"turn", turns},
                                  {"prompt_ids", turn.prompt_ids},
                                  {"output_ids", turn.output_ids},
                                  {"text", turn.reply},
                                  {"stop", engine::finish_reason_name(turn.reason)},
                                  {"stop_message", turn.message},
                                  {"timings", timings_json(turn.stats)}};
      fmt::print("{}\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      std::fflush(stdout);
      continue;
    }
    print_text("\n");
    if (turn.reason == engine::FinishReason::kCapacity) {
      fmt::print(stderr, "xlacel: {}; /reset starts over, --context sets the room\n", turn.message);
    }
    fmt::print(stderr, "{}\n", stats_line(turn.stats, turn.reason));
  }
  if (interactive) print_text("\n");
}

}  // namespace

void add_chat_command(CLI::App& app) {
  auto* command = app.add_subcommand(
      "chat", "Chat in the terminal: one user turn per line of stdin, replies streamed");
  auto options = std::make_shared<ChatCommandOptions>();
  add_runtime_flags(command, options->runtime);
  command->add_option("--system", options->system,
                      "system message (default: the chat template's own, if any)");
  command->add_option("-n,--max-tokens", options->max_tokens, "tokens per reply at most")
      ->capture_default_str();
  add_sampling_flags(command, options->sampling);
  add_grammar_flags(command, options->grammar);
  command->add_option("--image", options->images,
                      "an image file for a vision-language model, with the first message; "
                      "repeat for several (later: a line '/image FILE' adds one to the next)");
  command->add_flag("--no-prefix-reuse", options->no_prefix_reuse,
                    "prefill the whole conversation every turn (for comparisons)");
  command
      ->add_option("--output-format", options->output_format,
                   "text (streamed) or json (one object per turn)")
      ->capture_default_str();
  command->callback([options] { run_chat(*options); });
}

}  // namespace xlacel::cli
