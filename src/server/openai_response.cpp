#include "server/openai_response.h"

#include <utility>

namespace xlacel::server {

namespace {

// Characters as Python counts them (code points) in valid UTF-8: bytes that do not continue one.
int64_t count_code_points(const std::string& text) {
  int64_t count = 0;
  for (unsigned char byte : text) count += (byte & 0xC0) != 0x80 ? 1 : 0;
  return count;
}

Json header_json(const ResponseHeader& header, bool chunk) {
  const bool chat = header.endpoint == Endpoint::kChat;
  return {
      {"id", header.id},
      {"object", chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion"},
      {"created", header.created},
      {"model", header.model},
      {"system_fingerprint", Json()}};
}

}  // namespace

const char* openai_finish_reason(engine::FinishReason reason) {
  switch (reason) {
    case engine::FinishReason::kEos:
    case engine::FinishReason::kStop:
    case engine::FinishReason::kGrammar:
      return "stop";
    case engine::FinishReason::kLength:
    case engine::FinishReason::kCapacity:
    case engine::FinishReason::kCancelled:
      break;
  }
  return "length";
}

Choice::Choice(Endpoint endpoint, const Tokenizer* logprobs_tokenizer) {
  if (logprobs_tokenizer != nullptr) logprobs.emplace(endpoint, *logprobs_tokenizer);
}

void Choice::add(const engine::TokenEvent& event) {
  if (logprobs && event.logprobs) logprobs->add(*event.logprobs, characters);
  text += event.text;
  characters += count_code_points(event.text);
  if (!event.finished) return;
  finished = true;
  reason = event.reason;
  stats = event.stats;
}

engine::RequestStats total_usage(const std::vector<Choice>& choices) {
  engine::RequestStats total;
  if (choices.empty()) return total;
  total = choices.front().stats;
  total.output_tokens = 0;
  for (const Choice& choice : choices) total.output_tokens += choice.stats.output_tokens;
  return total;
}

Json usage_json(const engine::RequestStats& stats) {
  return {{"prompt_tokens", stats.prompt_tokens},
          {"completion_tokens", stats.output_tokens},
          {"total_tokens", stats.prompt_tokens + stats.output_tokens},
          {"prompt_tokens_details", {{"cached_tokens", stats.cached_tokens}}}};
}

Json full_response(const ResponseHeader& header, std::vector<Choice>& choices) {
  Json response = header_json(header, false);
  response["choices"] = Json::array();
  for (std::size_t i = 0; i < choices.size(); ++i) {
    Choice& from = choices[i];
    Json choice = {{"index", i},
                   {"finish_reason", openai_finish_reason(from.reason)},
                   {"logprobs", from.logprobs ? from.logprobs->take() : Json()}};
    if (header.endpoint == Endpoint::kChat) {
      choice["message"] = {{"role", "assistant"}, {"content", from.text}};
    } else {
      choice["text"] = from.text;
    }
    response["choices"].push_back(std::move(choice));
  }
  response["usage"] = usage_json(total_usage(choices));
  return response;
}

Json stream_chunk(const ResponseHeader& header, std::size_t index, const std::string& text,
                  bool first, std::optional<engine::FinishReason> finish, Json logprobs) {
  Json chunk = header_json(header, true);
  Json choice = {{"index", index},
                 {"finish_reason", finish ? Json(openai_finish_reason(*finish)) : Json()},
                 {"logprobs", std::move(logprobs)}};
  if (header.endpoint == Endpoint::kChat) {
    Json delta = Json::object();
    if (first) delta["role"] = "assistant";
    if (!text.empty() || first) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  chunk["choices"] = Json::array({choice});
  return chunk;
}

Json usage_chunk(const ResponseHeader& header, const engine::RequestStats& stats) {
  Json chunk = header_json(header, true);
  chunk["choices"] = Json::array();
  chunk["usage"] = usage_json(stats);
  return chunk;
}

std::string sse_event(const Json& data) {
  return "data: " + data.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n\n";
}

}  // namespace xlacel::server
