#pragma once
// xgrammar 0.2.8 decodes UTF-8 leniently: its character classes accept overlong sequences (E0 99
// 88 for U+0648) and UTF-16 surrogates (ED A0 80), which are not UTF-8, so a grammar would let a
// model write bytes that reach the client as U+FFFD (one per byte: strings grow past their
// maxLength). The guard follows the output's bytes with RFC 3629's automaton and takes out of a
// mask every token whose bytes would break it.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace xlacel::grammar {

// A vocabulary's token bytes, and which tokens have a byte >= 0x80 (the only ones that can break
// UTF-8 after a complete character).
struct TokenBytes {
  explicit TokenBytes(std::vector<std::string> vocabulary);

  std::vector<std::string> bytes;  // [vocab]
  std::vector<int32_t> non_ascii;  // ids, ascending
};

class Utf8Guard {
 public:
  // Whether `bytes` may follow what was fed so far.
  bool allows(std::string_view bytes) const;
  void feed(std::string_view bytes);

  // Clears the bit of every allowed token whose bytes may not follow (bit i of word i / 32 of
  // `bitmask`, as xgrammar fills it).
  void restrict(const TokenBytes& tokens, std::span<int32_t> bitmask) const;

 private:
  uint8_t state_ = 0;  // 0: between characters; otherwise which continuation bytes may come
};

}  // namespace xlacel::grammar
