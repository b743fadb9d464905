#pragma once
// The answers of POST /v1/messages in Anthropic's shapes: the whole message ({"type": "message",
// "content": [thinking, text and tool_use blocks], "stop_reason", "usage"}) or its stream of
// typed server-sent events (message_start, then per content block content_block_start, its
// deltas (thinking_delta, text_delta, input_json_delta) and content_block_stop, then message_delta
// with the stop reason and usage, and message_stop). One MessagesReply builds both from the token
// events, the blocks in the order the model wrote them, so the two agree; the reply's text and tool
// calls are parsed by the same Choice as OpenAI's answers.
#include <cstdint>
#include <optional>
#include <string>

#include "common/json_file.h"
#include "server/openai_response.h"
#include "server/stream_writer.h"
#include "server/tool_calls.h"

namespace xlacel::server {

// "tool_use" (the reply called tools and ended by itself), "end_turn", "stop_sequence" or
// "max_tokens" (the token budget or the context ran out).
const char* anthropic_stop_reason(const Choice& choice);

// {"input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"}:
// as Anthropic counts them, input_tokens leave out the prompt tokens found in the cache.
Json messages_usage(const engine::RequestStats& stats);

class MessagesReply : public TypedReply {
 public:
  // `prompt_tokens`: the prompt's length, which message_start reports before any token.
  // `prototype`: how the reply is parsed (tools, thinking); no logprobs.
  MessagesReply(ResponseHeader header, int64_t prompt_tokens, Choice prototype);

  // The stream's events for a token event (one choice only: index 0).
  bool append(const engine::TokenEvent& event, std::size_t index, const std::string& cancel_message,
              std::string& out) override;

  // The whole message (header.id "msg_..."), once the last event was appended.
  Json whole() const override;

 private:
  enum class Block { kNone, kThinking, kText, kToolUse };
  // Appends `text` to the open block's `field`, opening a `kind` block first where needed, and
  // writes the delta.
  void grow(Block kind, const char* field, const char* delta_type, const std::string& text,
            std::string& out);
  // Opens a block of `kind` (closing the open one) with `start` as its content_block.
  void open(Block kind, Json start, std::string& out);
  void close(std::string& out);

  ResponseHeader header_;
  int64_t prompt_tokens_;
  Choice choice_;
  Json content_ = Json::array();  // the blocks so far, tool_use inputs set when the reply ends
  bool started_ = false;
  bool finished_ = false;
  Block open_ = Block::kNone;
};

}  // namespace xlacel::server
