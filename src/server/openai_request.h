#pragma once
// The body of POST /v1/chat/completions and /v1/completions, checked field by field: every
// problem is an ApiError naming the field, before anything reaches the engine. Options xlacel
// does not implement are refused with a 400 rather than silently ignored. Sampling fields
// (temperature, top_p, top_k, min_p, frequency_penalty, presence_penalty, logit_bias, seed) and
// logprobs (chat: `logprobs` + `top_logprobs`; completions: `logprobs` as a count) land in
// `sampling`; token ids of logit_bias are checked against the vocabulary by the server.
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/json_file.h"
#include "engine/sampler.h"
#include "server/response_format.h"
#include "server/tool_calls.h"

namespace xlacel::server {

enum class Endpoint { kChat, kCompletion };

inline constexpr int64_t kMaxChoices = 128;  // `n` at most, as OpenAI

struct GenerationRequest {
  Endpoint endpoint = Endpoint::kChat;
  std::string model;
  // chat: [{"role", "content": string}], content parts joined into one string; assistant
  // tool_calls and tool messages as templates read them (server/tool_calls.h)
  Json messages;
  ToolOptions tools;  // chat: tools, tool_choice, parallel_tool_calls
  // chat: variables the chat template also sees (e.g. {"enable_thinking": false})
  Json chat_template_kwargs = Json::object();
  // chat: whether the reply's thinking comes apart (reasoning_format "auto") or stays inline
  // ("none"); unset: as the server was started (--reasoning-format)
  std::optional<bool> split_reasoning;
  // completions: the prompt as text, or as token ids
  std::variant<std::string, std::vector<int32_t>> prompt;
  int64_t max_tokens = 0;  // 0: until the context is full
  engine::SamplingOptions sampling;
  // Choices to generate; choice i samples with seed sampling.seed + i (wrapping), so a request
  // with n = 2 and seed s gives the tokens of two requests with seeds s and s + 1.
  int64_t n = 1;
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  ResponseFormat response_format;
};

// temperature (1 when absent, at most `max_temperature`), top_p and top_k: the sampling fields
// OpenAI's and Anthropic's APIs share.
void parse_basic_sampling(const Json& body, double max_temperature,
                          engine::SamplingOptions& sampling);
// A 400 naming the field when the options are invalid together (SamplingOptions::validate).
void check_sampling(const engine::SamplingOptions& sampling);

// How hard a reasoning model should think (`field`: reasoning_effort, reasoning.effort,
// output_config.effort): none, minimal, low, medium, high, xhigh or max. It reaches the template
// as `reasoning_effort` (gpt-oss's read it), and "none" also as `enable_thinking: false` (Qwen
// 3's, SmolLM3's), unless the request's chat_template_kwargs set them.
void apply_reasoning_effort(const Json& effort, const std::string& field, Json& template_kwargs);

// `default_seed` is used when the request names none (OpenAI samples differently each time).
GenerationRequest parse_generation_request(Endpoint endpoint, const Json& body,
                                           uint64_t default_seed);

}  // namespace xlacel::server
