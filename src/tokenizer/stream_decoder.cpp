#include "common/utf8.h"
#include "tokenizer/tokenizer.h"

namespace xlacel {

namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

// Allowed range of the second byte after `lead` (the rest are always 80..BF).
std::pair<unsigned char, unsigned char> second_byte_range(unsigned char lead) {
  switch (lead) {
    case 0xE0:
      return {0xA0, 0xBF};
    case 0xED:
      return {0x80, 0x9F};
    case 0xF0:
      return {0x90, 0xBF};
    case 0xF4:
      return {0x80, 0x8F};
    default:
      return {0x80, 0xBF};
  }
}

}  // namespace

std::size_t decode_utf8_lossy(std::string_view bytes, bool final, std::string& out) {
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    auto lead = static_cast<unsigned char>(bytes[pos]);
    std::size_t length = utf8::sequence_length(lead);
    if (length == 0) {
      out += kReplacement;
      ++pos;
      continue;
    }
    // How many bytes from pos form a valid (possibly unfinished) prefix of a character.
    std::size_t valid = 1;
    while (valid < length && pos + valid < bytes.size()) {
      auto byte = static_cast<unsigned char>(bytes[pos + valid]);
      auto [low, high] = valid == 1 ? second_byte_range(lead)
                                    : std::pair<unsigned char, unsigned char>{0x80, 0xBF};
      if (byte < low || byte > high) break;
      ++valid;
    }
    if (valid == length) {
      out.append(bytes.substr(pos, length));
      pos += length;
    } else if (pos + valid == bytes.size() && !final) {
      return pos;  // may still be finished by later bytes
    } else {
      out += kReplacement;  // one U+FFFD per maximal invalid subpart
      pos += valid;
    }
  }
  return pos;
}

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(&tokenizer), skip_special_tokens_(skip_special_tokens) {}

std::string StreamDecoder::feed(int32_t id) {
  tokenizer_->append_token_bytes(id, skip_special_tokens_, state_, pending_);
  std::string text;
  std::size_t consumed = decode_utf8_lossy(pending_, false, text);
  pending_.erase(0, consumed);
  return text;
}

std::string StreamDecoder::flush() {
  tokenizer_->finish_decode(state_, pending_);
  std::string text;
  decode_utf8_lossy(pending_, true, text);
  pending_.clear();
  return text;
}

void StreamDecoder::reset() {
  pending_.clear();
  state_ = Tokenizer::DecodeState{};
}

}  // namespace xlacel
