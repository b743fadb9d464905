#include "server/sse_writer.h"

#include "server/api_error.h"

namespace xlacel::server {

bool SseWriter::append(const engine::TokenEvent& event, const std::string& cancel_message,
                       std::string& out) {
  if (finished_) return true;
  if (event.finished && event.reason == engine::FinishReason::kCancelled) {
    out += sse_event(ApiError(503, "unavailable_error", cancel_message).body());
    out += kSseDone;
    finished_ = true;
    return true;
  }
  if (!event.text.empty() || first_) {
    out += sse_event(stream_chunk(header_, event.text, first_, std::nullopt));
    first_ = false;
  }
  text_ += event.text;
  if (!event.finished) return false;
  out += sse_event(stream_chunk(header_, "", false, event.reason));
  if (include_usage_) out += sse_event(usage_chunk(header_, event.stats));
  out += kSseDone;
  finished_ = true;
  return true;
}

}  // namespace xlacel::server
