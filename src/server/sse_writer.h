#pragma once
// One streamed request's token events as server-sent events: a chunk for each event that adds
// text (chat's first chunk of each choice carries the role even without text), then each
// choice's finish chunk, the usage chunk when asked for (after every choice finished), and
// `data: [DONE]`. With logprobs, a chunk carries those of the tokens since the previous chunk
// of its choice (a token that adds no text yet waits for the next chunk, the finish chunk at the
// latest). Kept apart from the HTTP layer so that it can be checked (and fuzzed) on its own: the
// text of the chunks, joined, is exactly the text of the events, and it never yields an empty
// write (an empty write ends an httplib chunked response).
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/request.h"
#include "server/openai_response.h"
#include "server/stream_writer.h"
#include "tokenizer/tokenizer.h"

namespace xlacel::server {

class SseWriter : public StreamWriter {
 public:
  // `choices`: how many (n), each starting as `prototype` (default: plain text, no logprobs).
  // A prototype with logprobs makes chunks carry them; with tools, each choice's reply is
  // parsed for tool calls, which stream as delta.tool_calls (tool_call_chunk) and withhold text
  // that may start one; with thinking, the thinking streams as delta.reasoning_content.
  SseWriter(ResponseHeader header, bool include_usage, std::size_t choices = 1,
            const std::optional<Choice>& prototype = std::nullopt);

  bool append(const engine::TokenEvent& event, std::size_t index, const std::string& cancel_message,
              std::string& out) override;
  bool append(const engine::TokenEvent& event, const std::string& cancel_message,
              std::string& out) {
    return append(event, 0, cancel_message, out);
  }

  const ResponseHeader& header() const { return header_; }
  // Every chunk's text of a choice so far, joined.
  const std::string& text(std::size_t index = 0) const { return choices_.at(index).text; }
  bool finished() const { return finished_; }

 private:
  ResponseHeader header_;
  bool include_usage_;
  std::vector<Choice> choices_;
  std::size_t unfinished_;
  bool finished_ = false;
};

}  // namespace xlacel::server
