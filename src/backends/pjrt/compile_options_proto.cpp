#include "backends/pjrt/compile_options_proto.h"

namespace xlacel::pjrt {

namespace {

constexpr uint32_t kWireVarint = 0;
constexpr uint32_t kWireLengthDelimited = 2;

constexpr uint32_t kCompileOptionsExecutableBuildOptions = 3;
constexpr uint32_t kBuildOptionsNumReplicas = 4;
constexpr uint32_t kBuildOptionsNumPartitions = 5;
constexpr uint32_t kBuildOptionsUseSpmdPartitioning = 6;
constexpr uint32_t kBuildOptionsUseShardyPartitioner = 19;
constexpr uint32_t kCompileOptionsEnvOptionOverrides = 7;
constexpr uint32_t kMapEntryKey = 1;
constexpr uint32_t kMapEntryValue = 2;
constexpr uint32_t kOptionOverrideString = 1;
constexpr uint32_t kOptionOverrideBool = 2;

// One entry of env_option_overrides: name -> the serialized OptionOverrideProto.
void add_override(ProtoWriter& options, std::string_view name, const ProtoWriter& value) {
  ProtoWriter entry;
  entry.bytes_field(kMapEntryKey, name);
  entry.bytes_field(kMapEntryValue, value.bytes());
  options.bytes_field(kCompileOptionsEnvOptionOverrides, entry.bytes());
}

void bool_override(ProtoWriter& options, std::string_view name, bool value) {
  ProtoWriter override_value;
  override_value.varint_field(kOptionOverrideBool, value ? 1 : 0);  // oneof: written even if 0
  add_override(options, name, override_value);
}

void string_override(ProtoWriter& options, std::string_view name, std::string_view value) {
  ProtoWriter override_value;
  override_value.bytes_field(kOptionOverrideString, value);
  add_override(options, name, override_value);
}

}  // namespace

void ProtoWriter::varint(uint64_t value) {
  while (value >= 0x80) {
    bytes_.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  bytes_.push_back(static_cast<char>(value));
}

void ProtoWriter::varint_field(uint32_t field, uint64_t value) {
  varint((uint64_t{field} << 3) | kWireVarint);
  varint(value);
}

void ProtoWriter::bytes_field(uint32_t field, std::string_view bytes) {
  varint((uint64_t{field} << 3) | kWireLengthDelimited);
  varint(bytes.size());
  bytes_.append(bytes);
}

std::string partitioned_compile_options(const GraphCompileOptions& graph, int64_t partitions) {
  ProtoWriter build;
  build.varint_field(kBuildOptionsNumReplicas, 1);
  build.varint_field(kBuildOptionsNumPartitions, static_cast<uint64_t>(partitions));
  if (partitions > 1) {
    build.varint_field(kBuildOptionsUseSpmdPartitioning, 1);
    build.varint_field(kBuildOptionsUseShardyPartitioner, 1);
  }
  ProtoWriter options;
  options.bytes_field(kCompileOptionsExecutableBuildOptions, build.bytes());
  bool_override(options, "xla_cpu_enable_fast_min_max", false);
  bool_override(options, "xla_gpu_enable_fast_min_max", false);
  if (graph.xnnpack_dots) {
    string_override(options, "xla_cpu_experimental_xnn_graph_fusion_mode",
                    "XNN_GRAPH_FUSION_MODE_BYPASS_COST_MODEL");
  }
  return options.bytes();
}

std::string single_device_compile_options(const GraphCompileOptions& graph) {
  return partitioned_compile_options(graph, 1);
}

}  // namespace xlacel::pjrt
