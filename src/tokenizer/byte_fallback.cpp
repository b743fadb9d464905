#include "tokenizer/byte_fallback.h"

namespace xlacel::tokenizer {

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

int16_t fallback_byte(std::string_view token) {
  if (token.size() != 6 || !token.starts_with("<0x") || token.back() != '>') return -1;
  char high = token[3];
  char low = token[4];
  // from_str_radix takes a leading '+', so "<0x+F>" is the byte 0x0F.
  if (high == '+') return static_cast<int16_t>(hex_digit(low));
  int h = hex_digit(high);
  int l = hex_digit(low);
  if (h < 0 || l < 0) return -1;
  return static_cast<int16_t>(h * 16 + l);
}

std::string replace_all(std::string_view text, std::string_view pattern, std::string_view content) {
  if (pattern.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size());
  std::size_t pos = 0;
  for (std::size_t found; (found = text.find(pattern, pos)) != std::string_view::npos;
       pos = found + pattern.size()) {
    out.append(text.substr(pos, found - pos));
    out.append(content);
  }
  out.append(text.substr(pos));
  return out;
}

}  // namespace xlacel::tokenizer
