#include "backends/pjrt/hlo_module_proto.h"

#include <functional>

#include "common/error.h"

namespace xlacel::pjrt {

namespace {

constexpr uint32_t kWithConfigModule = 1;
constexpr uint32_t kModuleComputations = 3;
constexpr uint32_t kComputationInstructions = 2;
constexpr uint32_t kInstructionOpcode = 2;

// Calls `field(number, bytes)` for each length-delimited field of `message` and skips the others
// (varints, fixed 32/64-bit); Error on a truncated or malformed message.
void for_each_bytes_field(std::string_view message,
                          const std::function<void(uint32_t, std::string_view)>& field) {
  std::size_t at = 0;
  auto varint = [&] {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at >= message.size()) throw Error("xla: optimized program: truncated varint");
      const auto byte = static_cast<uint8_t>(message[at++]);
      value |= uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80u) == 0) return value;
    }
    throw Error("xla: optimized program: varint longer than 64 bits");
  };
  while (at < message.size()) {
    const uint64_t key = varint();
    const auto number = static_cast<uint32_t>(key >> 3);
    std::size_t skip = 0;
    switch (key & 7) {
      case 0:
        varint();
        break;
      case 1:
        skip = 8;
        break;
      case 5:
        skip = 4;
        break;
      case 2: {
        const uint64_t size = varint();
        if (size > message.size() - at) throw Error("xla: optimized program: truncated field");
        field(number, message.substr(at, size));
        skip = size;
        break;
      }
      default:
        throw Error("xla: optimized program: unsupported wire type");
    }
    if (skip > message.size() - at) throw Error("xla: optimized program: truncated field");
    at += skip;
  }
}

}  // namespace

std::map<std::string, int64_t> count_opcodes(std::string_view program, std::string_view format) {
  std::string_view module;
  if (format == "hlo") {
    module = program;
  } else if (format == "hlo_with_config") {
    for_each_bytes_field(program, [&](uint32_t number, std::string_view field) {
      if (number == kWithConfigModule) module = field;
    });
  } else {
    throw Error("xla: optimized program of unknown format '" + std::string(format) + "'");
  }
  std::map<std::string, int64_t> counts;
  for_each_bytes_field(module, [&](uint32_t number, std::string_view computation) {
    if (number != kModuleComputations) return;
    for_each_bytes_field(computation, [&](uint32_t field, std::string_view instruction) {
      if (field != kComputationInstructions) return;
      for_each_bytes_field(instruction, [&](uint32_t part, std::string_view opcode) {
        if (part == kInstructionOpcode) ++counts[std::string(opcode)];
      });
    });
  });
  return counts;
}

}  // namespace xlacel::pjrt
