#pragma once
// The streamed-text round trip that stream_text_test (seeded random ids, in CI) and the
// stream_text fuzzer (scripts/fuzz) share: token ids of a real vocabulary go through the
// StreamDecoder (one feed per token, the flush with the last) into token events, through the
// SseWriter into server-sent events, and are parsed back as a client reads them. Every byte of
// the decoded text must arrive once, in chunks that are each valid JSON and valid UTF-8, ending
// with one finish chunk (then usage, when asked for) and `data: [DONE]`.
#include <exception>
#include <span>
#include <string>
#include <string_view>

#include "common/json_file.h"
#include "common/utf8.h"
#include "engine/request.h"
#include "server/sse_writer.h"
#include "tokenizer/tokenizer.h"

namespace xlacel::testing {

struct StreamCase {
  server::Endpoint endpoint = server::Endpoint::kChat;
  engine::FinishReason reason = engine::FinishReason::kLength;
  bool include_usage = false;
};

// What the client would see go wrong; "" when the round trip is exact.
inline std::string stream_roundtrip_problem(const Tokenizer& tokenizer,
                                            std::span<const int32_t> ids,
                                            const StreamCase& stream) {
  if (ids.empty()) return "";
  try {
    const std::string expected = tokenizer.decode(ids);
    StreamDecoder decoder(tokenizer);
    server::SseWriter writer({stream.endpoint, "chatcmpl-1", 0, "m"}, stream.include_usage);
    std::string sse;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      engine::TokenEvent event;
      event.token = ids[i];
      event.text = decoder.feed(ids[i]);
      if (i + 1 == ids.size()) {
        event.text += decoder.flush();
        event.finished = true;
        event.reason = stream.reason;
      }
      const bool last = writer.append(event, "cancelled", sse);
      if (last != event.finished) return "the writer's last event is not the request's last";
    }
    if (writer.text() != expected) return "the writer's text differs from decode()";

    std::string received;
    int finish_chunks = 0;
    int usage_chunks = 0;
    bool done = false;
    std::size_t pos = 0;
    while (pos < sse.size()) {
      const std::size_t end = sse.find("\n\n", pos);
      if (end == std::string::npos) return "an event does not end with a blank line";
      std::string_view event(sse.data() + pos, end - pos);
      pos = end + 2;
      if (done) return "an event after [DONE]";
      if (!event.starts_with("data: ")) return "an event without 'data: '";
      event.remove_prefix(6);
      if (event == "[DONE]") {
        done = true;
        continue;
      }
      if (!utf8::is_valid(event)) return "a chunk is not valid UTF-8";
      const Json chunk = Json::parse(event);
      if (chunk.contains("usage")) {
        ++usage_chunks;
        continue;
      }
      if (finish_chunks > 0) return "a chunk after the finish chunk";
      const Json& choice = chunk.at("choices").at(0);
      if (!choice.at("finish_reason").is_null()) ++finish_chunks;
      const Json* text =
          stream.endpoint == server::Endpoint::kChat
              ? (choice.at("delta").contains("content") ? &choice.at("delta").at("content")
                                                        : nullptr)
              : &choice.at("text");
      if (text != nullptr) received += text->get<std::string>();
    }
    if (!done) return "no data: [DONE]";
    if (finish_chunks != 1) return "not exactly one finish chunk";
    if (usage_chunks != (stream.include_usage ? 1 : 0)) return "wrong number of usage chunks";
    if (received != expected) return "the chunks' text differs from decode()";
    return "";
  } catch (const std::exception& e) {
    return std::string("exception: ") + e.what();
  }
}

}  // namespace xlacel::testing
