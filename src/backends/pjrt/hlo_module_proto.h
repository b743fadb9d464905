#pragma once
// Reading the optimized program an executable reports (LoadedExecutable::optimized_program: a
// serialized xla.HloModuleProto), without protobuf: a minimal wire-format walk of the fields
// needed to count instructions by opcode, e.g. the all-reduces the SPMD partitioner inserted.
// Field numbers are those of xla/service/hlo.proto:
//   HloModuleProtoWithConfig.hlo_module = 1 (HloModuleProto)
//   HloModuleProto.computations = 3 (HloComputationProto)
//   HloComputationProto.instructions = 2 (HloInstructionProto)
//   HloInstructionProto.opcode = 2 (string, "all-reduce", "dot", ...)
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace xlacel::pjrt {

// How many instructions of each opcode the module's computations hold (fused computations
// included), from a program of `format` "hlo" (an HloModuleProto) or "hlo_with_config". Throws
// Error on another format or bytes that are not a well-formed protobuf message.
std::map<std::string, int64_t> count_opcodes(std::string_view program, std::string_view format);

}  // namespace xlacel::pjrt
