#pragma once
// The body of POST /v1/responses (OpenAI's Responses API), checked field by field (ApiError 400
// naming the field, `input[2].content[0].text`) and turned into the chat request Chat Completions
// makes, so that both go through one path: `input` as a string (one user message) or items
// (messages of user, system, developer and assistant with input_text / output_text parts, and a
// user's input_image parts as data: URLs; function_call items as an assistant's tool_calls,
// consecutive ones one turn; function_call_output items as tool messages; earlier reasoning
// items dropped), function
// `tools` (flat: {"type": "function", "name", "parameters"}) and `tool_choice`, `text.format`
// (text, json_object, json_schema on the grammar of response_format), `max_output_tokens`,
// `temperature`, `top_p`, `stream`. `instructions` and the conversation of
// `previous_response_id` are put in front by the server, which keeps stored responses.
#include <cstdint>
#include <string>

#include "common/json_file.h"
#include "grammar/json_schema_support.h"
#include "server/openai_request.h"

namespace xlacel::server {

struct ResponsesRequest {
  GenerationRequest generation;  // messages: the input items only
  std::string instructions;      // a system message before everything, this turn only
  std::string previous_response_id;
  bool store = true;
  // The request's fields a response object repeats (tools, tool_choice, text, temperature, ...).
  Json echo = Json::object();
};

// `content`: whether the model takes images (input_image parts of user messages).
ResponsesRequest parse_responses_request(const Json& body, uint64_t default_seed,
                                         const ContentOptions& content = {});

// The request's tools in the nested function shape tool grammars read (chat/tool_call_format.h),
// their schemas' keys in the order of `body` (the request's text, parsed in order).
grammar::OrderedJson nested_function_tools(const grammar::OrderedJson& body);

}  // namespace xlacel::server
