#include "server/sse_writer.h"

#include "server/api_error.h"

namespace xlacel::server {

SseWriter::SseWriter(ResponseHeader header, bool include_usage, std::size_t choices,
                     const std::optional<Choice>& prototype)
    : header_(std::move(header)),
      include_usage_(include_usage),
      choices_(choices, prototype ? *prototype : Choice(header_.endpoint, nullptr)),
      unfinished_(choices) {}

bool SseWriter::append(const engine::TokenEvent& event, std::size_t index,
                       const std::string& cancel_message, std::string& out) {
  if (finished_) return true;
  Choice& choice = choices_.at(index);
  if (choice.finished) return false;
  if (event.finished && event.reason == engine::FinishReason::kCancelled) {
    out += sse_event(ApiError(503, "unavailable_error", cancel_message).body());
    out += kSseDone;
    finished_ = true;
    return true;
  }
  ReplyDelta delta = choice.add(event);
  const auto pending_logprobs = [&] {
    return choice.logprobs && !choice.logprobs->empty() ? choice.logprobs->take() : Json();
  };
  if (!delta.reasoning.empty()) {
    out += sse_event(
        reasoning_chunk(header_, index, delta.reasoning, !choice.started, pending_logprobs()));
    choice.started = true;
  }
  if (!delta.content.empty() || !choice.started) {
    out += sse_event(
        stream_chunk(header_, index, delta.content, !choice.started, nullptr, pending_logprobs()));
    choice.started = true;
  }
  for (Json& fragment : delta.calls) {
    out += sse_event(tool_call_chunk(header_, index, Json::array({std::move(fragment)}), false,
                                     pending_logprobs()));
  }
  if (!event.finished) return false;
  out += sse_event(
      stream_chunk(header_, index, "", false, choice.finish_reason(), pending_logprobs()));
  if (--unfinished_ > 0) return false;
  if (include_usage_) out += sse_event(usage_chunk(header_, total_usage(choices_)));
  out += kSseDone;
  finished_ = true;
  return true;
}

std::string typed_sse_event(const Json& data) {
  return "event: " + data["type"].get<std::string>() + "\n" + sse_event(data);
}

}  // namespace xlacel::server
