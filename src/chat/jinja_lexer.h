#pragma once
// Splits template source into tokens exactly as jinja2's lexer does with trim_blocks=True and
// lstrip_blocks=True: newline normalization, one trailing newline dropped, `-`/`+` whitespace
// control on tags, {% raw %} blocks, comments dropped.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace xlacel::jinja {

enum class TokenType {
  kData,
  kVariableBegin,
  kVariableEnd,
  kBlockBegin,
  kBlockEnd,
  kName,
  kString,
  kInteger,
  kFloat,
  kOperator,
  kEof,
};

struct Token {
  TokenType type = TokenType::kEof;
  std::string value;  // text, name, unescaped string or operator
  std::int64_t int_value = 0;
  double float_value = 0.0;
  int line = 1;
};

// Throws xlacel::Error "<where>: line N: <problem>".
std::vector<Token> tokenize(std::string_view source, std::string_view where);

std::string describe(const Token& token);

}  // namespace xlacel::jinja
