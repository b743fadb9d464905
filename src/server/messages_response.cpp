#include "server/messages_response.h"

#include <utility>

#include "server/api_error.h"

namespace xlacel::server {

namespace {

// A call's arguments as the tool_use block's `input`: the object they are, or, for a call that
// max_tokens cut off (grammar-constrained calls stream as they are written), an empty one.
Json call_input(const Json& call) {
  Json input = Json::parse(call["function"]["arguments"].get<std::string>(), nullptr, false);
  return input.is_object() ? input : Json::object();
}

Json tool_use_block(const Json& id, const Json& name, Json input) {
  return {{"type", "tool_use"}, {"id", id}, {"name", name}, {"input", std::move(input)}};
}

Json stop_sequence(const Choice& choice) {
  return choice.reason == engine::FinishReason::kStop ? Json(choice.stop) : Json();
}

Json message_json(const ResponseHeader& header) {
  return {{"id", header.id},        {"type", "message"},        {"role", "assistant"},
          {"model", header.model},  {"content", Json::array()}, {"stop_reason", Json()},
          {"stop_sequence", Json()}};
}

}  // namespace

const char* anthropic_stop_reason(const Choice& choice) {
  if (choice.ended_with_calls()) return "tool_use";
  switch (choice.reason) {
    case engine::FinishReason::kEos:
    case engine::FinishReason::kGrammar:
    case engine::FinishReason::kEmbedded:  // not a reply's: for completeness
      return "end_turn";
    case engine::FinishReason::kStop:
      return "stop_sequence";
    case engine::FinishReason::kLength:
    case engine::FinishReason::kCapacity:
    case engine::FinishReason::kCancelled:
      break;
  }
  return "max_tokens";
}

Json messages_usage(const engine::RequestStats& stats) {
  return {{"input_tokens", stats.prompt_tokens - stats.cached_tokens},
          {"output_tokens", stats.output_tokens},
          {"cache_read_input_tokens", stats.cached_tokens},
          {"cache_creation_input_tokens", 0}};
}

MessagesReply::MessagesReply(ResponseHeader header, int64_t prompt_tokens, Choice prototype)
    : header_(std::move(header)), prompt_tokens_(prompt_tokens), choice_(std::move(prototype)) {}

void MessagesReply::open(Block kind, Json start, std::string& out) {
  close(out);
  out += typed_sse_event(
      {{"type", "content_block_start"}, {"index", content_.size()}, {"content_block", start}});
  content_.push_back(std::move(start));
  open_ = kind;
}

void MessagesReply::grow(Block kind, const char* field, const char* delta_type,
                         const std::string& text, std::string& out) {
  if (text.empty()) return;
  if (open_ != kind) {
    Json start = {{"type", kind == Block::kThinking ? "thinking" : "text"}, {field, ""}};
    if (kind == Block::kThinking) start["signature"] = "";  // nothing to sign here
    open(kind, std::move(start), out);
  }
  Json& grown = content_.back()[field];
  grown = grown.get<std::string>() + text;
  out += typed_sse_event({{"type", "content_block_delta"},
                          {"index", content_.size() - 1},
                          {"delta", {{"type", delta_type}, {field, text}}}});
}

void MessagesReply::close(std::string& out) {
  if (open_ == Block::kNone) return;
  out += typed_sse_event({{"type", "content_block_stop"}, {"index", content_.size() - 1}});
  open_ = Block::kNone;
}

bool MessagesReply::append(const engine::TokenEvent& event, std::size_t,
                           const std::string& cancel_message, std::string& out) {
  if (finished_) return true;
  if (!started_) {
    Json message = message_json(header_);
    message["usage"] = {{"input_tokens", prompt_tokens_}, {"output_tokens", 0}};
    out += typed_sse_event({{"type", "message_start"}, {"message", std::move(message)}});
    started_ = true;
  }
  if (event.finished && event.reason == engine::FinishReason::kCancelled) {
    out += typed_sse_event(
        ApiError(503, "unavailable_error", cancel_message).body(ApiShape::kAnthropic));
    finished_ = true;
    return true;
  }
  ReplyDelta delta = choice_.add(event);
  grow(Block::kThinking, "thinking", "thinking_delta", delta.reasoning, out);
  grow(Block::kText, "text", "text_delta", delta.content, out);
  // OpenAI-shaped fragments (ToolReply): a call's first names it, later ones grow its arguments.
  for (const Json& fragment : delta.calls) {
    if (fragment.contains("id")) {
      open(Block::kToolUse,
           tool_use_block(fragment["id"], fragment["function"]["name"], Json::object()), out);
    }
    const std::string arguments = fragment["function"].value("arguments", "");
    if (arguments.empty()) continue;
    out +=
        typed_sse_event({{"type", "content_block_delta"},
                         {"index", content_.size() - 1},
                         {"delta", {{"type", "input_json_delta"}, {"partial_json", arguments}}}});
  }
  if (!event.finished) return false;
  close(out);
  for (Json& block : content_) {
    if (block["type"] != "tool_use") continue;
    for (const Json& call : choice_.tools->calls()) {
      if (call["id"] == block["id"]) block["input"] = call_input(call);
    }
  }
  out += typed_sse_event({{"type", "message_delta"},
                          {"delta",
                           {{"stop_reason", anthropic_stop_reason(choice_)},
                            {"stop_sequence", stop_sequence(choice_)}}},
                          {"usage", messages_usage(choice_.stats)}});
  out += typed_sse_event({{"type", "message_stop"}});
  finished_ = true;
  return true;
}

Json MessagesReply::whole() const {
  Json message = message_json(header_);
  message["content"] = content_;
  message["stop_reason"] = anthropic_stop_reason(choice_);
  message["stop_sequence"] = stop_sequence(choice_);
  message["usage"] = messages_usage(choice_.stats);
  return message;
}

}  // namespace xlacel::server
