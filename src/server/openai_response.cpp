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
    case engine::FinishReason::kEmbedded:  // not a completion's: for completeness
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

ReplyDelta Choice::add(const engine::TokenEvent& event) {
  if (logprobs && event.logprobs) logprobs->add(*event.logprobs, characters);
  ReplyDelta delta;
  std::string content = event.text;
  if (thinking) {
    // Decoding skipped a special think tag: the parser needs it (the answer does not).
    for (const auto& [id, marker] : thinking->markers) {
      if (event.token == id && !thinking->parser.in_content()) content += marker;
    }
    const bool was_thinking = thinking->parser.thinking();
    ReasoningParser::Update update = thinking->parser.feed(content);
    if (was_thinking || thinking->parser.thinking()) ++reasoning_tokens;
    if (event.finished) {
      ReasoningParser::Update last = thinking->parser.finish();
      update.reasoning += last.reasoning;
      update.content += last.content;
    }
    delta.reasoning = std::move(update.reasoning);
    reasoning += delta.reasoning;
    content = std::move(update.content);
  }
  if (tools) {
    ToolReply::Delta split = tools->add(content, event.token, event.finished);
    delta.content = std::move(split.content);
    delta.calls = std::move(split.calls);
  } else {
    delta.content = std::move(content);
  }
  text += delta.content;
  characters += count_code_points(delta.content);
  if (event.finished) {
    finished = true;
    reason = event.reason;
    stop = event.stop;
    stats = event.stats;
  }
  return delta;
}

bool Choice::ended_with_calls() const {
  const bool ended_itself = reason == engine::FinishReason::kEos ||
                            reason == engine::FinishReason::kStop ||
                            reason == engine::FinishReason::kGrammar;
  return tools && !tools->calls().empty() && ended_itself;
}

const char* Choice::finish_reason() const {
  return ended_with_calls() ? "tool_calls" : openai_finish_reason(reason);
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
                   {"finish_reason", from.finish_reason()},
                   {"logprobs", from.logprobs ? from.logprobs->take() : Json()}};
    if (header.endpoint == Endpoint::kChat) {
      choice["message"] = {{"role", "assistant"}, {"content", from.text}};
      if (!from.reasoning.empty()) choice["message"]["reasoning_content"] = from.reasoning;
      if (from.tools && !from.tools->calls().empty()) {
        // As OpenAI: content null when the reply is only calls; calls without stream indices.
        if (from.text.empty()) choice["message"]["content"] = Json();
        Json calls = Json::array();
        for (Json call : from.tools->calls()) {
          call.erase("index");
          calls.push_back(std::move(call));
        }
        choice["message"]["tool_calls"] = std::move(calls);
      }
    } else {
      choice["text"] = from.text;
    }
    response["choices"].push_back(std::move(choice));
  }
  response["usage"] = usage_json(total_usage(choices));
  return response;
}

Json stream_chunk(const ResponseHeader& header, std::size_t index, const std::string& text,
                  bool first, const char* finish_reason, Json logprobs) {
  Json chunk = header_json(header, true);
  Json choice = {{"index", index},
                 {"finish_reason", finish_reason ? Json(finish_reason) : Json()},
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

Json reasoning_chunk(const ResponseHeader& header, std::size_t index, const std::string& reasoning,
                     bool first, Json logprobs) {
  Json chunk = header_json(header, true);
  Json delta = {{"reasoning_content", reasoning}};
  if (first) delta["role"] = "assistant";
  chunk["choices"] = Json::array({{{"index", index},
                                   {"delta", std::move(delta)},
                                   {"finish_reason", Json()},
                                   {"logprobs", std::move(logprobs)}}});
  return chunk;
}

Json tool_call_chunk(const ResponseHeader& header, std::size_t index, Json tool_calls, bool first,
                     Json logprobs) {
  Json chunk = header_json(header, true);
  Json delta = {{"tool_calls", std::move(tool_calls)}};
  if (first) {
    delta["role"] = "assistant";
    delta["content"] = Json();
  }
  chunk["choices"] = Json::array({{{"index", index},
                                   {"delta", std::move(delta)},
                                   {"finish_reason", Json()},
                                   {"logprobs", std::move(logprobs)}}});
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
