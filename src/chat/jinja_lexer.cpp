#include "chat/jinja_lexer.h"

#include <cerrno>
#include <cstdlib>

#include "chat/jinja_value.h"
#include "common/error.h"
#include "common/utf8.h"

namespace xlacel::jinja {
namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_name_char(char c) {
  return is_name_start(c) || is_digit(c);
}

int count_newlines(std::string_view s, std::size_t from = 0,
                   std::size_t to = std::string_view::npos) {
  int n = 0;
  to = std::min(to, s.size());
  for (std::size_t i = from; i < to; ++i) n += s[i] == '\n';
  return n;
}

// Position after the Python-whitespace run (\s*) starting at pos.
std::size_t skip_space(std::string_view s, std::size_t pos) {
  while (pos < s.size()) {
    std::size_t next = pos;
    auto c = utf8::decode(s, next);
    if (!c || !is_python_space(*c)) break;
    pos = next;
  }
  return pos;
}

// Length of `text` after str.rstrip().
std::size_t rstripped_length(std::string_view text) {
  std::u32string cps = to_u32(text);
  std::size_t end = cps.size();
  while (end > 0 && is_python_space(cps[end - 1])) --end;
  return from_u32(std::u32string_view(cps).substr(0, end)).size();
}

bool all_space(std::string_view text) {
  if (text.empty()) return false;
  return skip_space(text, 0) == text.size();
}

class Lexer {
 public:
  Lexer(std::string source, std::string_view where) : src_(std::move(source)), where_(where) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      std::size_t tag = find_tag(pos_);
      if (tag == std::string::npos) {
        emit_data(src_.substr(pos_));
        line_ += count_newlines(src_, pos_);
        pos_ = src_.size();
        break;
      }
      char kind = src_[tag + 1];
      std::size_t after = tag + 2;
      char sign = 0;
      if (after < src_.size() && (src_[after] == '-' || src_[after] == '+')) sign = src_[after];
      std::size_t raw_end = 0;
      bool raw = kind == '%' && match_raw_begin(after + (sign ? 1 : 0), raw_end);
      std::string text = src_.substr(pos_, tag - pos_);
      int text_newlines = count_newlines(text);
      apply_strip(text, sign, kind == '{');
      emit_data(std::move(text));
      line_ += text_newlines;
      if (raw) {
        line_ += count_newlines(src_, tag, raw_end);
        line_starting_ = src_[raw_end - 1] == '\n';
        pos_ = raw_end;
        lex_raw();
      } else if (kind == '#') {
        lex_comment(after + (sign ? 1 : 0));
      } else {
        pos_ = after + (sign ? 1 : 0);
        line_starting_ = false;
        lex_tag(kind == '%');
      }
    }
    tokens_.push_back(Token{TokenType::kEof, "", 0, 0.0, line_});
    return std::move(tokens_);
  }

 private:
  [[noreturn]] void error(const std::string& problem) const {
    fail(where_, "line {}: syntax error: {}", line_, problem);
  }

  std::size_t find_tag(std::size_t from) const {
    std::size_t p = from;
    while ((p = src_.find('{', p)) != std::string::npos) {
      if (p + 1 < src_.size() && (src_[p + 1] == '%' || src_[p + 1] == '{' || src_[p + 1] == '#')) {
        return p;
      }
      ++p;
    }
    return std::string::npos;
  }

  // `\s*raw\s*(?:-%}\s*|%})` at pos; raw_end is the position after the match.
  bool match_raw_begin(std::size_t pos, std::size_t& raw_end) const {
    pos = skip_space(src_, pos);
    if (src_.compare(pos, 3, "raw") != 0) return false;
    pos = skip_space(src_, pos + 3);
    if (src_.compare(pos, 3, "-%}") == 0) {
      raw_end = skip_space(src_, pos + 3);
      return true;
    }
    if (src_.compare(pos, 2, "%}") == 0) {
      raw_end = pos + 2;
      return true;
    }
    return false;
  }

  void apply_strip(std::string& text, char sign, bool variable) const {
    if (sign == '-') {
      text.resize(rstripped_length(text));
    } else if (sign != '+' && !variable) {
      std::size_t newline = text.rfind('\n');
      std::size_t l_pos = newline == std::string::npos ? 0 : newline + 1;
      if ((l_pos > 0 || line_starting_) && all_space(std::string_view(text).substr(l_pos))) {
        text.resize(l_pos);
      }
    }
  }

  void emit_data(std::string text) {
    if (text.empty()) return;
    tokens_.push_back(Token{TokenType::kData, std::move(text), 0, 0.0, line_});
  }

  // Block end at pos_: `+%}` | `-%}\s*` | `%}\n?`; variable end: `-}}\s*` | `}}`.
  bool match_end(bool block, std::size_t& end) const {
    const char* close = block ? "%}" : "}}";
    if (block && src_.compare(pos_, 3, "+%}") == 0) {
      end = pos_ + 3;
      return true;
    }
    if (src_.compare(pos_, 1, "-") == 0 && src_.compare(pos_ + 1, 2, close) == 0) {
      end = skip_space(src_, pos_ + 3);
      return true;
    }
    if (src_.compare(pos_, 2, close) == 0) {
      end = pos_ + 2;
      if (block && end < src_.size() && src_[end] == '\n') ++end;
      return true;
    }
    return false;
  }

  void lex_tag(bool block) {
    tokens_.push_back(
        Token{block ? TokenType::kBlockBegin : TokenType::kVariableBegin, "", 0, 0.0, line_});
    std::vector<char> balance;
    while (true) {
      if (pos_ >= src_.size()) return;  // the parser reports the missing end
      std::size_t end = 0;
      if (balance.empty() && match_end(block, end)) {
        tokens_.push_back(
            Token{block ? TokenType::kBlockEnd : TokenType::kVariableEnd, "", 0, 0.0, line_});
        line_ += count_newlines(src_, pos_, end);
        line_starting_ = src_[end - 1] == '\n';
        pos_ = end;
        return;
      }
      std::size_t space_end = skip_space(src_, pos_);
      if (space_end > pos_) {
        line_ += count_newlines(src_, pos_, space_end);
        pos_ = space_end;
        continue;
      }
      char c = src_[pos_];
      if (is_digit(c)) {
        lex_number();
      } else if (is_name_start(c)) {
        std::size_t start = pos_;
        while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
        tokens_.push_back(Token{TokenType::kName, src_.substr(start, pos_ - start), 0, 0.0, line_});
      } else if (c == '\'' || c == '"') {
        lex_string(c);
      } else {
        lex_operator(balance);
      }
    }
  }

  // Digits with single underscores between them; returns false when none.
  bool digits(std::size_t& p) const {
    if (p >= src_.size() || !is_digit(src_[p])) return false;
    while (p < src_.size()) {
      if (is_digit(src_[p])) {
        ++p;
      } else if (src_[p] == '_' && p + 1 < src_.size() && is_digit(src_[p + 1])) {
        ++p;
      } else {
        break;
      }
    }
    return true;
  }

  void lex_number() {
    std::size_t start = pos_;
    // float: digits ((.digits)? e[+-]?digits | .digits), not preceded by '.'
    bool after_dot = start > 0 && src_[start - 1] == '.';
    std::size_t p = start;
    digits(p);
    std::size_t q = p;
    bool has_fraction = false;
    if (q < src_.size() && src_[q] == '.') {
      std::size_t r = q + 1;
      if (digits(r)) {
        has_fraction = true;
        q = r;
      }
    }
    bool has_exponent = false;
    if (q < src_.size() && (src_[q] == 'e' || src_[q] == 'E')) {
      std::size_t r = q + 1;
      if (r < src_.size() && (src_[r] == '+' || src_[r] == '-')) ++r;
      if (digits(r)) {
        has_exponent = true;
        q = r;
      }
    }
    if (!after_dot && (has_fraction || has_exponent)) {
      std::string text;
      for (std::size_t i = start; i < q; ++i) {
        if (src_[i] != '_') text += src_[i];
      }
      Token t{TokenType::kFloat, text, 0, std::strtod(text.c_str(), nullptr), line_};
      tokens_.push_back(std::move(t));
      pos_ = q;
      return;
    }
    // integer
    int base = 10;
    std::size_t digits_start = start;
    if (src_[start] == '0' && start + 1 < src_.size()) {
      char x = static_cast<char>(src_[start + 1] | 0x20);
      if (x == 'b') base = 2;
      if (x == 'o') base = 8;
      if (x == 'x') base = 16;
      if (base != 10) digits_start = start + 2;
    }
    std::string text;
    p = digits_start;
    if (base == 10) {
      if (src_[start] == '0') {  // 0(_?0)*
        p = start + 1;
        while (p < src_.size() &&
               (src_[p] == '0' || (src_[p] == '_' && p + 1 < src_.size() && src_[p + 1] == '0'))) {
          ++p;
        }
        text = "0";
      } else {
        digits(p);
        for (std::size_t i = start; i < p; ++i) {
          if (src_[i] != '_') text += src_[i];
        }
      }
    } else {
      auto valid = [&](char ch) {
        ch = static_cast<char>(ch | 0x20);
        if (base == 2) return ch == '0' || ch == '1';
        if (base == 8) return ch >= '0' && ch <= '7';
        return is_digit(ch) || (ch >= 'a' && ch <= 'f');
      };
      while (p < src_.size() &&
             (valid(src_[p]) || (src_[p] == '_' && p + 1 < src_.size() && valid(src_[p + 1])))) {
        if (src_[p] != '_') text += src_[p];
        ++p;
      }
      if (text.empty()) error("invalid integer literal");
    }
    errno = 0;
    long long value = std::strtoll(text.c_str(), nullptr, base);
    if (errno == ERANGE) error("integer literal too large: " + text);
    tokens_.push_back(
        Token{TokenType::kInteger, text, static_cast<std::int64_t>(value), 0.0, line_});
    pos_ = p;
  }

  void lex_string(char quote) {
    int start_line = line_;
    std::size_t p = pos_ + 1;
    std::string raw;
    while (true) {
      if (p >= src_.size()) error("unexpected char '" + std::string(1, quote) + "'");
      char c = src_[p];
      if (c == quote) break;
      if (c == '\\') {
        if (p + 1 >= src_.size()) error("unterminated string");
        raw += c;
        raw += src_[p + 1];
        p += 2;
        continue;
      }
      raw += c;
      ++p;
    }
    line_ += count_newlines(src_, pos_, p);
    pos_ = p + 1;
    tokens_.push_back(Token{TokenType::kString, unescape(raw), 0, 0.0, start_line});
  }

  // Python's unicode-escape decoding.
  std::string unescape(std::string_view raw) const {
    std::string out;
    for (std::size_t i = 0; i < raw.size(); ++i) {
      char c = raw[i];
      if (c != '\\' || i + 1 >= raw.size()) {
        out += c;
        continue;
      }
      char e = raw[++i];
      auto hex = [&](std::size_t n) {
        std::uint32_t v = 0;
        for (std::size_t k = 1; k <= n; ++k) {
          if (i + k >= raw.size()) error("truncated \\x, \\u or \\U escape");
          char h = static_cast<char>(raw[i + k] | 0x20);
          if (is_digit(raw[i + k])) {
            v = v * 16 + static_cast<std::uint32_t>(raw[i + k] - '0');
          } else if (h >= 'a' && h <= 'f') {
            v = v * 16 + static_cast<std::uint32_t>(h - 'a' + 10);
          } else {
            error("truncated \\x, \\u or \\U escape");
          }
        }
        i += n;
        if (v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) error("invalid escape code point");
        utf8::append(out, v);
      };
      switch (e) {
        case '\n':
          break;
        case '\\':
          out += '\\';
          break;
        case '\'':
          out += '\'';
          break;
        case '"':
          out += '"';
          break;
        case 'a':
          out += '\a';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'v':
          out += '\v';
          break;
        case 'x':
          hex(2);
          break;
        case 'u':
          hex(4);
          break;
        case 'U':
          hex(8);
          break;
        case 'N':
          error("\\N{...} escapes are not supported");
        default:
          if (e >= '0' && e <= '7') {
            std::uint32_t v = static_cast<std::uint32_t>(e - '0');
            for (int k = 0; k < 2 && i + 1 < raw.size() && raw[i + 1] >= '0' && raw[i + 1] <= '7';
                 ++k) {
              v = v * 8 + static_cast<std::uint32_t>(raw[++i] - '0');
            }
            utf8::append(out, v);
          } else {
            out += '\\';
            out += e;
          }
      }
    }
    return out;
  }

  void lex_operator(std::vector<char>& balance) {
    static const char* const kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
    for (const char* op : kTwo) {
      if (src_.compare(pos_, 2, op) == 0) {
        tokens_.push_back(Token{TokenType::kOperator, op, 0, 0.0, line_});
        pos_ += 2;
        return;
      }
    }
    char c = src_[pos_];
    static const std::string_view kOne = "+-/*%~[](){}><=.:|,;";
    if (kOne.find(c) == std::string_view::npos) {
      std::size_t p = pos_;
      auto cp = utf8::decode(src_, p);
      std::string shown = cp ? src_.substr(pos_, p - pos_) : std::string(1, c);
      error("unexpected char '" + shown + "'");
    }
    if (c == '{') balance.push_back('}');
    if (c == '(') balance.push_back(')');
    if (c == '[') balance.push_back(']');
    if (c == '}' || c == ')' || c == ']') {
      if (balance.empty()) error(std::string("unexpected '") + c + "'");
      char expected = balance.back();
      balance.pop_back();
      if (expected != c) {
        error(std::string("unexpected '") + c + "', expected '" + expected + "'");
      }
    }
    tokens_.push_back(Token{TokenType::kOperator, std::string(1, c), 0, 0.0, line_});
    ++pos_;
  }

  void lex_comment(std::size_t from) {
    for (std::size_t p = from; p < src_.size(); ++p) {
      std::size_t end = 0;
      if (src_.compare(p, 3, "+#}") == 0) {
        end = p + 3;
      } else if (src_.compare(p, 3, "-#}") == 0) {
        end = skip_space(src_, p + 3);
      } else if (src_.compare(p, 2, "#}") == 0) {
        end = p + 2;
        if (end < src_.size() && src_[end] == '\n') ++end;
      } else {
        continue;
      }
      line_ += count_newlines(src_, pos_, end);
      line_starting_ = src_[end - 1] == '\n';
      pos_ = end;
      return;
    }
    error("Missing end of comment tag");
  }

  void lex_raw() {
    for (std::size_t p = pos_; p < src_.size(); ++p) {
      if (src_.compare(p, 2, "{%") != 0) continue;
      std::size_t q = p + 2;
      char sign = 0;
      if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) sign = src_[q++];
      q = skip_space(src_, q);
      if (src_.compare(q, 6, "endraw") != 0) continue;
      q = skip_space(src_, q + 6);
      std::size_t end = 0;
      if (src_.compare(q, 3, "+%}") == 0) {
        end = q + 3;
      } else if (src_.compare(q, 3, "-%}") == 0) {
        end = skip_space(src_, q + 3);
      } else if (src_.compare(q, 2, "%}") == 0) {
        end = q + 2;
        if (end < src_.size() && src_[end] == '\n') ++end;
      } else {
        continue;
      }
      std::string text = src_.substr(pos_, p - pos_);
      int newlines = count_newlines(text);
      apply_strip(text, sign, false);
      emit_data(std::move(text));
      line_ += newlines + count_newlines(src_, p, end);
      line_starting_ = src_[end - 1] == '\n';
      pos_ = end;
      return;
    }
    error("Missing end of raw directive");
  }

  std::string src_;
  std::string where_;
  std::size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();  // keep_trailing_newline=False
  return out;
}

}  // namespace

std::vector<Token> tokenize(std::string_view source, std::string_view where) {
  if (!utf8::is_valid(source)) fail(where, "template is not valid UTF-8");
  return Lexer(normalize_newlines(source), where).run();
}

std::string describe(const Token& token) {
  switch (token.type) {
    case TokenType::kData:
      return "template data / text";
    case TokenType::kVariableBegin:
      return "begin of print statement";
    case TokenType::kVariableEnd:
      return "end of print statement";
    case TokenType::kBlockBegin:
      return "begin of statement block";
    case TokenType::kBlockEnd:
      return "end of statement block";
    case TokenType::kName:
      return token.value;
    case TokenType::kString:
      return "string";
    case TokenType::kInteger:
      return "integer";
    case TokenType::kFloat:
      return "float";
    case TokenType::kOperator:
      return token.value;
    case TokenType::kEof:
      return "end of template";
  }
  return "token";
}

}  // namespace xlacel::jinja
