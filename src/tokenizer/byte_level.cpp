#include "tokenizer/byte_level.h"

#include <array>

#include "common/utf8.h"

namespace xlacel::tokenizer {

namespace {

struct Tables {
  std::array<char32_t, 256> code_point{};
  std::array<std::string, 256> spelling;
  std::array<int, 0x144> byte_of{};  // the alphabet ends below U+0144; -1 = not in it

  Tables() {
    byte_of.fill(-1);
    // Printable bytes keep their code point; the other 68 are moved to U+0100 onwards.
    auto printable = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      code_point[b] = printable(b) ? static_cast<char32_t>(b) : next++;
      utf8::append(spelling[b], code_point[b]);
      byte_of[code_point[b]] = b;
    }
  }
};

const Tables& tables() {
  static const Tables instance;
  return instance;
}

}  // namespace

std::string_view byte_to_char(unsigned char byte) {
  return tables().spelling[byte];
}

std::string bytes_to_byte_level(std::string_view bytes) {
  const Tables& t = tables();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += t.spelling[static_cast<unsigned char>(c)];
  return out;
}

std::optional<unsigned char> char_to_byte(char32_t c) {
  const Tables& t = tables();
  if (c >= t.byte_of.size() || t.byte_of[c] < 0) return std::nullopt;
  return static_cast<unsigned char>(t.byte_of[c]);
}

std::optional<std::string> byte_level_to_bytes(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  std::size_t pos = 0;
  while (pos < token.size()) {
    auto c = utf8::decode(token, pos);
    if (!c) return std::nullopt;
    auto byte = char_to_byte(*c);
    if (!byte) return std::nullopt;
    out += static_cast<char>(*byte);
  }
  return out;
}

bool is_byte_level_spelling(std::string_view token) {
  return byte_level_to_bytes(token).has_value();
}

}  // namespace xlacel::tokenizer
