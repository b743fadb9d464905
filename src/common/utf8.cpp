#include "common/utf8.h"

namespace xlacel::utf8 {

std::size_t sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

std::optional<char32_t> decode(std::string_view text, std::size_t& pos) {
  if (pos >= text.size()) return std::nullopt;
  auto lead = static_cast<unsigned char>(text[pos]);
  std::size_t length = sequence_length(lead);
  if (length == 0 || pos + length > text.size()) return std::nullopt;
  if (length == 1) {
    ++pos;
    return lead;
  }
  char32_t cp = lead & (0x7F >> length);
  for (std::size_t i = 1; i < length; ++i) {
    auto byte = static_cast<unsigned char>(text[pos + i]);
    if ((byte & 0xC0) != 0x80) return std::nullopt;
    cp = (cp << 6) | (byte & 0x3F);
  }
  // Reject overlong forms, surrogates and values past U+10FFFF.
  static constexpr char32_t kMinimum[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMinimum[length] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) {
    return std::nullopt;
  }
  pos += length;
  return cp;
}

bool is_valid(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    if (!decode(text, pos)) return false;
  }
  return true;
}

std::size_t complete_prefix_length(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t before = pos;
    if (!decode(text, pos)) {
      // An incomplete sequence at the very end is held back; anything else invalid passes
      // through byte by byte so a stream never stalls on garbage.
      std::size_t length = sequence_length(static_cast<unsigned char>(text[before]));
      if (length > 1 && before + length > text.size()) {
        bool continuation_ok = true;
        for (std::size_t i = before + 1; i < text.size(); ++i) {
          continuation_ok &= (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80;
        }
        if (continuation_ok) return before;
      }
      pos = before + 1;
    }
  }
  return pos;
}

void append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace xlacel::utf8
