#pragma once
// A choice's `logprobs` in OpenAI's shapes. Chat: {"content": [{"token", "logprob", "bytes",
// "top_logprobs": [{"token", "logprob", "bytes"}]}], "refusal": null}. Completions (the legacy
// shape): {"tokens", "token_logprobs", "top_logprobs": [{token: logprob}], "text_offset"}.
// A token's string is its own bytes (as the decoder gives them mid-text, so a SentencePiece
// token keeps its leading space) made valid UTF-8: a token holding part of a character shows
// U+FFFD there, and `bytes` (chat) gives its exact bytes, as OpenAI does.
#include <cstdint>
#include <string>

#include "common/json_file.h"
#include "engine/token_logprobs.h"
#include "server/openai_request.h"
#include "tokenizer/tokenizer.h"

namespace xlacel::server {

// The bytes token `id` stands for in the middle of a text.
std::string token_bytes(const Tokenizer& tokenizer, int32_t id);

class LogprobsJson {
 public:
  LogprobsJson(Endpoint endpoint, const Tokenizer& tokenizer)
      : endpoint_(endpoint), tokenizer_(&tokenizer) {}

  // One generated token's logprobs; `text_offset` counts the characters (code points) of the
  // choice's text before it.
  void add(const engine::TokenLogprobs& logprobs, int64_t text_offset);
  bool empty() const { return entries_.empty(); }
  // The entries added since the last take(), in the endpoint's shape; starts over.
  Json take();

 private:
  Json entry(const engine::TokenLogprob& token) const;  // chat: {"token", "logprob", "bytes"}

  Endpoint endpoint_;
  const Tokenizer* tokenizer_;
  Json entries_ = Json::array();  // chat: content entries; completions: [entry, offset] pairs
};

}  // namespace xlacel::server
