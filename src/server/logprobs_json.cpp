#include "server/logprobs_json.h"

#include <algorithm>
#include <utility>

namespace xlacel::server {

namespace {

// JSON has no -inf: a token that cannot occur gets OpenAI's floor, -9999.
double json_logprob(double logprob) {
  return std::max(logprob, -9999.0);
}

}  // namespace

std::string token_bytes(const Tokenizer& tokenizer, int32_t id) {
  Tokenizer::DecodeState state;
  state.first = false;  // mid-text: no decoder strips a leading space
  state.at_text_start = false;
  std::string bytes;
  tokenizer.append_token_bytes(id, false, state, bytes);
  tokenizer.finish_decode(state, bytes);
  return bytes;
}

Json LogprobsJson::entry(const engine::TokenLogprob& token) const {
  const std::string bytes = token_bytes(*tokenizer_, token.id);
  std::string text;
  decode_utf8_lossy(bytes, true, text);
  Json byte_values = Json::array();
  for (unsigned char byte : bytes) byte_values.push_back(byte);
  return {{"token", text}, {"logprob", json_logprob(token.logprob)}, {"bytes", byte_values}};
}

void LogprobsJson::add(const engine::TokenLogprobs& logprobs, int64_t text_offset) {
  Json chosen = entry(logprobs.chosen);
  Json top = Json::array();
  for (const engine::TokenLogprob& token : logprobs.top) top.push_back(entry(token));
  chosen["top_logprobs"] = std::move(top);
  if (endpoint_ == Endpoint::kCompletion) chosen["text_offset"] = text_offset;
  entries_.push_back(std::move(chosen));
}

Json LogprobsJson::take() {
  Json entries = std::exchange(entries_, Json::array());
  if (endpoint_ == Endpoint::kChat) {
    return {{"content", std::move(entries)}, {"refusal", Json()}};
  }
  Json tokens = Json::array();
  Json token_logprobs = Json::array();
  Json top_logprobs = Json::array();
  Json text_offset = Json::array();
  for (const Json& chosen : entries) {
    tokens.push_back(chosen["token"]);
    token_logprobs.push_back(chosen["logprob"]);
    // Two tokens with the same string (parts of characters) share one key, as in OpenAI's.
    Json alternatives = Json::object();
    for (const Json& token : chosen["top_logprobs"]) {
      alternatives[token["token"].get<std::string>()] = token["logprob"];
    }
    top_logprobs.push_back(std::move(alternatives));
    text_offset.push_back(chosen["text_offset"]);
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(token_logprobs)},
          {"top_logprobs", std::move(top_logprobs)},
          {"text_offset", std::move(text_offset)}};
}

}  // namespace xlacel::server
