#include "grammar/utf8_guard.h"

namespace xlacel::grammar {

namespace {

constexpr uint8_t kReject = 0xFF;

// RFC 3629's well-formed sequences. States: 0 between characters; 1, 2, 3: that many
// continuation bytes (80..BF) to come; 4: after E0 (A0..BF next); 5: after ED (80..9F); 6:
// after F0 (90..BF); 7: after F4 (80..8F).
uint8_t next_state(uint8_t state, unsigned char byte) {
  const auto in = [byte](unsigned low, unsigned high) { return byte >= low && byte <= high; };
  switch (state) {
    case 0:
      if (byte < 0x80) return 0;
      if (in(0xC2, 0xDF)) return 1;
      if (byte == 0xE0) return 4;
      if (byte == 0xED) return 5;
      if (in(0xE1, 0xEF)) return 2;
      if (byte == 0xF0) return 6;
      if (in(0xF1, 0xF3)) return 3;
      if (byte == 0xF4) return 7;
      return kReject;
    case 1:
    case 2:
    case 3:
      return in(0x80, 0xBF) ? static_cast<uint8_t>(state - 1) : kReject;
    case 4:
      return in(0xA0, 0xBF) ? 1 : kReject;
    case 5:
      return in(0x80, 0x9F) ? 1 : kReject;
    case 6:
      return in(0x90, 0xBF) ? 2 : kReject;
    case 7:
      return in(0x80, 0x8F) ? 2 : kReject;
    default:
      return kReject;
  }
}

uint8_t run(uint8_t state, std::string_view bytes) {
  for (char c : bytes) {
    state = next_state(state, static_cast<unsigned char>(c));
    if (state == kReject) break;
  }
  return state;
}

bool allowed_bit(std::span<const int32_t> bitmask, int32_t id) {
  return (static_cast<uint32_t>(bitmask[static_cast<std::size_t>(id) / 32]) >> (id % 32) & 1u) != 0;
}

void clear_bit(std::span<int32_t> bitmask, int32_t id) {
  auto& word = bitmask[static_cast<std::size_t>(id) / 32];
  word = static_cast<int32_t>(static_cast<uint32_t>(word) & ~(1u << (id % 32)));
}

}  // namespace

TokenBytes::TokenBytes(std::vector<std::string> vocabulary) : bytes(std::move(vocabulary)) {
  for (std::size_t id = 0; id < bytes.size(); ++id) {
    for (char c : bytes[id]) {
      if (static_cast<unsigned char>(c) >= 0x80) {
        non_ascii.push_back(static_cast<int32_t>(id));
        break;
      }
    }
  }
}

bool Utf8Guard::allows(std::string_view bytes) const {
  return run(state_, bytes) != kReject;
}

void Utf8Guard::feed(std::string_view bytes) {
  const uint8_t state = run(state_, bytes);
  state_ = state == kReject ? 0 : state;  // the mask kept it out; start over if not
}

void Utf8Guard::restrict(const TokenBytes& tokens, std::span<int32_t> bitmask) const {
  const auto limit =
      static_cast<int32_t>(std::min(tokens.bytes.size(), bitmask.size() * std::size_t{32}));
  const auto check = [&](int32_t id) {
    if (allowed_bit(bitmask, id) && !allows(tokens.bytes[static_cast<std::size_t>(id)])) {
      clear_bit(bitmask, id);
    }
  };
  if (state_ == 0) {
    // Between characters, ASCII-only tokens are always fine.
    for (int32_t id : tokens.non_ascii) {
      if (id < limit) check(id);
    }
    return;
  }
  // Inside a character: only continuation bytes may come, so every allowed token is checked
  // (a token with no bytes, a stop id, is left as the grammar says).
  for (int32_t id = 0; id < limit; ++id) {
    if (!tokens.bytes[static_cast<std::size_t>(id)].empty()) check(id);
  }
}

}  // namespace xlacel::grammar
