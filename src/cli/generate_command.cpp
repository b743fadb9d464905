// `xlacel generate [-m MODEL] (-p TEXT | --chat TEXT | --messages FILE) [-n N] [--temp T
//  --top-k K --top-p P --min-p P --repeat-penalty R --repeat-last-n N --seed S]
//  [--ignore-eos] [--backend iree|xla] [--device cpu|cuda] [--output-format text|json] ...`:
// tokens stream to stdout as they are produced; compile/load progress and a final stats line go
// to stderr.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>

#include "backends/backends.h"
#include "cli/commands.h"
#include "cli/model_loading.h"
#include "cli/output_format.h"
#include "cli/prompt_input.h"
#include "cli/runtime_flags.h"
#include "common/error.h"
#include "session/generator.h"

namespace xlacel::cli {

namespace {

struct GenerateCommandOptions {
  RuntimeFlags runtime;
  PromptInput prompt;
  int64_t max_new_tokens = 128;
  session::SamplingOptions sampling;
  std::string output_format = "text";
  bool ignore_eos = false;
};

nlohmann::json load_json(const session::LoadReport& report) {
  return {{"graphs", graphs_json(report)},
          {"weights_seconds", report.weights_seconds},
          {"weight_bytes", report.weight_bytes},
          {"total_seconds", report.total_seconds}};
}

void run_generate(const GenerateCommandOptions& options) {
  const bool json = json_output(options.output_format);
  if (options.max_new_tokens <= 0) fail("-n", "must be positive, got {}", options.max_new_tokens);
  if (std::string problem = options.sampling.validate(); !problem.empty()) throw Error(problem);

  ModelFiles model = open_model(options.runtime.model);
  std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(model);
  std::vector<int32_t> prompt = prompt_ids(model, *tokenizer, options.prompt);

  session::BackendOptions backend_options = cli::backend_options(
      options.runtime, model, static_cast<int64_t>(prompt.size()) + options.max_new_tokens, false);
  backend_options.argmax_graph = !options.sampling.needs_logits();
  backend_options.logits_graph = options.sampling.needs_logits();
  if (static_cast<int64_t>(prompt.size()) > backend_options.capacity) {
    fail("prompt", "{} tokens do not fit the context of {} positions (raise --context)",
         prompt.size(), backend_options.capacity);
  }
  std::unique_ptr<session::Backend> backend =
      backends::open_backend(options.runtime.backend, backend_options);
  session::Session session(*backend);

  session::GenerateOptions generate_options;
  generate_options.max_new_tokens = options.max_new_tokens;
  generate_options.sampling = options.sampling;
  if (!options.ignore_eos) {
    generate_options.eos_ids.assign(model.config().eos_token_ids.begin(),
                                    model.config().eos_token_ids.end());
  }

  StreamDecoder stream(*tokenizer, true);
  session::GenerateResult result =
      session::generate(session, prompt, generate_options, [&](int32_t token) {
        if (!json) {
          std::string piece = stream.feed(token);
          std::fwrite(piece.data(), 1, piece.size(), stdout);
          std::fflush(stdout);
        }
        return true;
      });

  const double ttft = result.prefill_seconds;
  if (json) {
    nlohmann::json out = {
        {"model", model.path()},
        {"backend", backend->capabilities().backend},
        {"device", backend->capabilities().device},
        {"context", backend->capabilities().capacity},
        {"prompt_ids", prompt},
        {"output_ids", result.output_ids},
        {"text", tokenizer->decode(result.output_ids, true)},
        {"stop", session::stop_reason_name(result.stop)},
        {"stop_message", result.stop_message},
        {"timings",
         {{"prompt_tokens", result.prompt_tokens},
          {"prefill_seconds", result.prefill_seconds},
          {"time_to_first_token_seconds", ttft},
          {"prompt_tokens_per_second", result.prompt_tokens_per_second()},
          {"decode_steps", result.decode_steps},
          {"decode_seconds", result.decode_seconds},
          {"generation_tokens_per_second", result.generation_tokens_per_second()}}},
        {"load", load_json(backend->load_report())}};
    fmt::print("{}\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return;
  }
  std::string rest = stream.flush();
  std::fwrite(rest.data(), 1, rest.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
  if (result.stop == session::StopReason::kCapacity) {
    fmt::print(stderr, "xlacel: {}\n", result.stop_message);
  }
  fmt::print(stderr,
             "xlacel: prompt {} tokens, {:.1f} tok/s | generated {} tokens, {:.1f} tok/s | "
             "time to first token {:.3f} s | stop: {}\n",
             result.prompt_tokens, result.prompt_tokens_per_second(), result.output_ids.size(),
             result.generation_tokens_per_second(), ttft, session::stop_reason_name(result.stop));
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
  command->add_option("-n,--max-new-tokens", options->max_new_tokens, "tokens to generate at most")
      ->capture_default_str();
  auto& s = options->sampling;
  command->add_option("--temp", s.temperature, "sampling temperature (0: greedy)")
      ->capture_default_str();
  command->add_option("--top-k", s.top_k, "keep the K most likely tokens (0: off)")
      ->capture_default_str();
  command->add_option("--top-p", s.top_p, "nucleus sampling threshold (1: off)")
      ->capture_default_str();
  command->add_option("--min-p", s.min_p, "drop tokens below P x the top probability (0: off)")
      ->capture_default_str();
  command->add_option("--repeat-penalty", s.repeat_penalty, "repetition penalty (1: off)")
      ->capture_default_str();
  command
      ->add_option("--repeat-last-n", s.repeat_last_n,
                   "recent tokens the penalty looks at (0: all)")
      ->capture_default_str();
  command->add_flag("--ignore-eos", options->ignore_eos,
                    "keep generating past end-of-sequence tokens (for tests and benchmarks)");
  command->add_option("--seed", s.seed, "random seed for sampling")->capture_default_str();
  command
      ->add_option("--output-format", options->output_format,
                   "text (streamed) or json (one object)")
      ->capture_default_str();
  command->callback([options] { run_generate(*options); });
}

}  // namespace xlacel::cli
