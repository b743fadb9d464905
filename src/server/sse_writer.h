#pragma once
// One streamed request's token events as server-sent events: a chunk for each event that adds
// text (chat's first chunk carries the role even without text), then the finish chunk, the usage
// chunk when asked for, and `data: [DONE]`. Kept apart from the HTTP layer so that it can be
// checked (and fuzzed) on its own: the text of the chunks, joined, is exactly the text of the
// events, and it never yields an empty write (an empty write ends an httplib chunked response).
#include <string>
#include <utility>

#include "engine/request.h"
#include "server/openai_response.h"

namespace xlacel::server {

class SseWriter {
 public:
  SseWriter(ResponseHeader header, bool include_usage)
      : header_(std::move(header)), include_usage_(include_usage) {}

  // Appends the SSE text `event` adds to `out` (possibly nothing: a token that ends inside a
  // UTF-8 character adds no text yet). True once it was the last event; a cancelled request's
  // last event becomes an error event carrying `cancel_message`.
  bool append(const engine::TokenEvent& event, const std::string& cancel_message, std::string& out);

  const ResponseHeader& header() const { return header_; }
  const std::string& text() const { return text_; }  // every chunk's text so far, joined
  bool finished() const { return finished_; }

 private:
  ResponseHeader header_;
  bool include_usage_;
  std::string text_;
  bool first_ = true;
  bool finished_ = false;
};

}  // namespace xlacel::server
