#pragma once
// The JSON xlacel answers generation requests with, in OpenAI's shapes: a whole response
// ("chat.completion" / "text_completion") or the chunks of a stream (server-sent events).
#include <cstdint>
#include <optional>
#include <string>

#include "common/json_file.h"
#include "engine/request.h"
#include "server/openai_request.h"

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

Json usage_json(const engine::RequestStats& stats);

Json full_response(const ResponseHeader& header, const std::string& text,
                   engine::FinishReason reason, const engine::RequestStats& stats);

// One streamed chunk: new text, and on the last one the finish reason. Chat's first chunk
// carries the role.
Json stream_chunk(const ResponseHeader& header, const std::string& text, bool first,
                  std::optional<engine::FinishReason> finish);

// The chunk stream_options.include_usage asks for, after the last choice chunk.
Json usage_chunk(const ResponseHeader& header, const engine::RequestStats& stats);

// One server-sent event carrying `data`.
std::string sse_event(const Json& data);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";

}  // namespace xlacel::server
