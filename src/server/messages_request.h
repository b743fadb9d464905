#pragma once
// The body of POST /v1/messages (Anthropic's Messages API) and /v1/messages/count_tokens, checked
// field by field (ApiError 400 naming the field, as Anthropic's own field paths read) and turned
// into the chat request the OpenAI endpoints make, so that both go through one path: `system` a
// system message, an assistant's tool_use blocks its tool_calls, a user's tool_result blocks tool
// messages (before the user's text), `tools` function tools whose `parameters` are the
// `input_schema`, `tool_choice` auto / any / tool / none as auto / required / named / none, and
// `disable_parallel_tool_use` as parallel_tool_calls false, a user's image blocks with base64
// sources as image parts (ImageCollector). Content kinds xlacel cannot read yet
// (documents, URL sources) are refused rather than dropped.
#include <cstdint>

#include "common/json_file.h"
#include "grammar/json_schema_support.h"
#include "server/openai_request.h"

namespace xlacel::server {

// A Messages request (max_tokens required; temperature and top_p in [0, 1], top_k;
// stop_sequences; stream) as a chat GenerationRequest. Thinking blocks of earlier turns are
// dropped, as Anthropic's API drops them from the context.
// `content`: whether the model takes images.
GenerationRequest parse_messages_request(const Json& body, uint64_t default_seed,
                                         const ContentOptions& content = {});

// count_tokens: the fields that make the prompt (model, system, messages, tools, tool_choice).
GenerationRequest parse_count_tokens_request(const Json& body, const ContentOptions& content = {});

// The request's tools in the function shape tool grammars read (chat/tool_call_format.h), their
// schemas' keys in the order of `body` (the request's text, parsed in order).
grammar::OrderedJson function_tools(const grammar::OrderedJson& body);

}  // namespace xlacel::server
