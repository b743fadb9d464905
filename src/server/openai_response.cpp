#include "server/openai_response.h"

namespace xlacel::server {

namespace {

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
      return "stop";
    case engine::FinishReason::kLength:
    case engine::FinishReason::kCapacity:
    case engine::FinishReason::kCancelled:
      break;
  }
  return "length";
}

Json usage_json(const engine::RequestStats& stats) {
  return {{"prompt_tokens", stats.prompt_tokens},
          {"completion_tokens", stats.output_tokens},
          {"total_tokens", stats.prompt_tokens + stats.output_tokens},
          {"prompt_tokens_details", {{"cached_tokens", stats.cached_tokens}}}};
}

Json full_response(const ResponseHeader& header, const std::string& text,
                   engine::FinishReason reason, const engine::RequestStats& stats) {
  Json response = header_json(header, false);
  Json choice = {
      {"index", 0}, {"finish_reason", openai_finish_reason(reason)}, {"logprobs", Json()}};
  if (header.endpoint == Endpoint::kChat) {
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  } else {
    choice["text"] = text;
  }
  response["choices"] = Json::array({choice});
  response["usage"] = usage_json(stats);
  return response;
}

Json stream_chunk(const ResponseHeader& header, const std::string& text, bool first,
                  std::optional<engine::FinishReason> finish) {
  Json chunk = header_json(header, true);
  Json choice = {{"index", 0},
                 {"finish_reason", finish ? Json(openai_finish_reason(*finish)) : Json()},
                 {"logprobs", Json()}};
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
