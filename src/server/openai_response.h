#pragma once
// The JSON xlacel answers generation requests with, in OpenAI's shapes: a whole response
// ("chat.completion" / "text_completion") or the chunks of a stream (server-sent events).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chat/reasoning_parser.h"
#include "common/json_file.h"
#include "engine/request.h"
#include "server/logprobs_json.h"
#include "server/openai_request.h"
#include "server/tool_calls.h"
#include "tokenizer/tokenizer.h"

namespace xlacel::server {

// What every response and chunk of one request shares.
struct ResponseHeader {
  Endpoint endpoint = Endpoint::kChat;
  std::string id;       // "chatcmpl-..." / "cmpl-..."
  int64_t created = 0;  // Unix seconds
  std::string model;
};

// OpenAI's finish_reason: "stop" (EOS or a stop string) or "length" (the token budget or the
// context ran out).
const char* openai_finish_reason(engine::FinishReason reason);

// How a reply's thinking is split from its answer (chat/reasoning_parser.h): the parser, and the
// think tags' token ids where text decoding skips them (special tokens), which it needs back.
struct ThinkingSplit {
  ReasoningParser parser;
  std::vector<std::pair<int32_t, std::string>> markers;
};

// What one token event adds to a reply: thinking, answer text, tool call fragments (ToolReply).
struct ReplyDelta {
  std::string reasoning;
  std::string content;
  std::vector<Json> calls;
};

// One choice of a response, built up from its request's events.
struct Choice {
  // `logprobs_tokenizer`: when not null, the choice reports the events' logprobs.
  Choice(Endpoint endpoint, const Tokenizer* logprobs_tokenizer);

  // Adds an event's text and logprobs; the last event also gives how the choice ended. Returns
  // what the event adds to the reply: its text, or with `thinking` its reasoning apart, and with
  // `tools` its content and the tool call fragments.
  ReplyDelta add(const engine::TokenEvent& event);
  // The reply called tools and ended by itself (not cut off).
  bool ended_with_calls() const;
  // "tool_calls" when ended_with_calls(), else openai_finish_reason.
  const char* finish_reason() const;

  std::optional<ToolReply> tools;         // set when the reply is parsed for tool calls
  std::optional<ThinkingSplit> thinking;  // set when the reply's thinking is split off
  std::string reasoning;                  // with `thinking`: the thinking
  int64_t reasoning_tokens = 0;           // with `thinking`: tokens inside the block
  std::string text;                       // with `tools` or `thinking`: the content
  int64_t characters = 0;                 // code points of `text`, for the completions' text_offset
  std::optional<LogprobsJson> logprobs;
  bool started = false;  // a chunk was streamed (chat's first carries the role)
  bool finished = false;
  engine::FinishReason reason = engine::FinishReason::kLength;
  std::string stop;  // kStop: the stop string that ended the text
  engine::RequestStats stats;
};

Json usage_json(const engine::RequestStats& stats);
// One request's usage over its choices: the prompt once, the completion tokens of all.
engine::RequestStats total_usage(const std::vector<Choice>& choices);

// The whole response; takes the choices' logprobs.
Json full_response(const ResponseHeader& header, std::vector<Choice>& choices);

// One streamed chunk of choice `index`: new text, and on the last one the finish reason (null
// before). Chat's first chunk carries the role. `logprobs`: the chunk's tokens' (null when none).
Json stream_chunk(const ResponseHeader& header, std::size_t index, const std::string& text,
                  bool first, const char* finish_reason, Json logprobs = Json());
// A chat chunk whose delta carries thinking (`reasoning_content`).
Json reasoning_chunk(const ResponseHeader& header, std::size_t index, const std::string& reasoning,
                     bool first, Json logprobs = Json());
// A chat chunk of choice `index` whose delta carries tool call fragments ({"index", "id",
// "type", "function": {"name", "arguments"}}, later ones {"index", "function": {"arguments"}}).
Json tool_call_chunk(const ResponseHeader& header, std::size_t index, Json tool_calls, bool first,
                     Json logprobs = Json());

// The chunk stream_options.include_usage asks for, after the last choice chunk.
Json usage_chunk(const ResponseHeader& header, const engine::RequestStats& stats);

// One server-sent event carrying `data`.
std::string sse_event(const Json& data);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";

}  // namespace xlacel::server
