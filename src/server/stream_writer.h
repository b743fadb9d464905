#pragma once
// A streamed response's writer: one request's token events as server-sent events in the shape of
// the API the request came through (OpenAI's chunks: sse_writer.h; Anthropic's typed events:
// messages_response.h). The server hands events to it and writes what it returns.
#include <cstddef>
#include <string>

#include "common/json_file.h"
#include "engine/request.h"

namespace xlacel::server {

class StreamWriter {
 public:
  virtual ~StreamWriter() = default;

  // Appends the SSE text an event of choice `index` adds to `out` (possibly nothing: a token
  // that ends inside a UTF-8 character adds no text yet). True once the stream ended: every
  // choice's last event was handled, or one was cancelled, which becomes an error event
  // carrying `cancel_message`.
  virtual bool append(const engine::TokenEvent& event, std::size_t index,
                      const std::string& cancel_message, std::string& out) = 0;
};

// A reply in an API of typed events (Anthropic's Messages, OpenAI's Responses): one object builds
// both the stream's events and, once the last event was appended, the whole body.
class TypedReply : public StreamWriter {
 public:
  virtual Json whole() const = 0;
};

// One event of the typed streams (Anthropic's Messages, OpenAI's Responses): "event: <its
// type>\ndata: <json>\n\n".
std::string typed_sse_event(const Json& data);

}  // namespace xlacel::server
