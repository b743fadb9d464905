#pragma once
// The answers of POST /v1/responses in the Responses API's shapes: the response object
// ({"object": "response", "status", "output": [reasoning, message and function_call items],
// "usage", and the request's settings repeated}) or its stream of typed events, each with its
// sequence_number: response.created, response.in_progress, then per output item
// response.output_item.added, its content part's added / deltas (output_text,
// reasoning_text, function_call_arguments) / done events and response.output_item.done, and last
// response.completed (response.incomplete when max_output_tokens or the context ran out). One
// ResponsesReply builds both from the token events, the items in the order the model wrote them,
// so the two agree; the reply is parsed by the same Choice as the other APIs' answers.
#include <cstdint>
#include <string>

#include "common/json_file.h"
#include "server/openai_response.h"
#include "server/stream_writer.h"

namespace xlacel::server {

class ResponsesReply : public TypedReply {
 public:
  // `echo`: the request's settings the response object repeats (ResponsesRequest::echo);
  // `prototype`: how the reply is parsed (tools, thinking); no logprobs.
  ResponsesReply(ResponseHeader header, Json echo, Choice prototype);

  // The stream's events for a token event (one choice only: index 0).
  bool append(const engine::TokenEvent& event, std::size_t index, const std::string& cancel_message,
              std::string& out) override;

  // The response object (header.id "resp_..."), once the last event was appended.
  Json whole() const override;

  // The reply as the next turn's conversation has it: an assistant message as templates read
  // it (content, tool_calls, reasoning_content).
  Json assistant_turn() const;

 private:
  enum class Item { kNone, kReasoning, kMessage, kFunctionCall };
  Json response(const char* status) const;
  // Adds an event with the next sequence number.
  void emit(Json event, std::string& out);
  // Opens an output item of `kind` (closing the open one).
  void open(Item kind, Json item, std::string& out);
  void close(std::string& out);
  // Appends `text` to the open item (opening a `kind` item first where needed).
  void grow(Item kind, const std::string& text, std::string& out);

  ResponseHeader header_;
  Json echo_;
  Choice choice_;
  Json output_ = Json::array();  // the items so far
  Item open_ = Item::kNone;
  int64_t sequence_ = 0;
  bool started_ = false;
  bool finished_ = false;
};

}  // namespace xlacel::server
