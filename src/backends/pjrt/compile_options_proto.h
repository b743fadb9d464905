#pragma once
// The serialized xla.CompileOptionsProto that PJRT_Client_Compile takes, written by hand in
// protobuf wire format (varints and length-delimited fields), so the backend needs no protobuf.
// Field numbers are those of xla/pjrt/proto/compile_options.proto:
//   CompileOptionsProto.executable_build_options = 3 (ExecutableBuildOptionsProto)
//   ExecutableBuildOptionsProto.num_replicas = 4, num_partitions = 5, use_spmd_partitioning = 6,
//     use_shardy_partitioner = 19
//   CompileOptionsProto.env_option_overrides = 7 (map<string, OptionOverrideProto>, i.e.
//     repeated entries {key = 1, value = 2}); OptionOverrideProto.string_field = 1,
//     bool_field = 2 (a string names an enum value)
// No debug_options: XLA then starts from its own defaults (a partial DebugOptions would zero
// every field it leaves out). The overrides set DebugOptions fields by name on top of those
// defaults: xla_{cpu,gpu}_enable_fast_min_max=false, as jax does, so that stablehlo.maximum
// and minimum propagate NaN as the StableHLO spec says (XLA CPU's default drops a NaN operand).
#include <cstdint>
#include <string>
#include <string_view>

namespace xlacel::pjrt {

// A minimal protobuf writer: fields are appended in the order written.
class ProtoWriter {
 public:
  void varint_field(uint32_t field, uint64_t value);
  void bytes_field(uint32_t field, std::string_view bytes);
  const std::string& bytes() const { return bytes_; }

 private:
  void varint(uint64_t value);

  std::string bytes_;
};

// What one graph's compile asks for beyond the defaults.
struct GraphCompileOptions {
  // XLA CPU: hand the graph's dots to XNNPACK (xla_cpu_experimental_xnn_graph_fusion_mode
  // XNN_GRAPH_FUSION_MODE_BYPASS_COST_MODEL: every supported dot, as XLA's cost model keeps
  // ours). See cpu_kernel_choice.h for when.
  bool xnnpack_dots = false;
};

// Compile options for one replica and one partition (one device).
std::string single_device_compile_options(const GraphCompileOptions& graph = {});

// Compile options for one replica partitioned over `partitions` devices by XLA's SPMD partitioner
// (Shardy: the graph's arguments and results carry sdy.sharding attributes over a mesh
// declared in the module). Without use_spmd_partitioning XLA refuses a program of several
// partitions; without use_shardy_partitioner it does not read sdy attributes. partitions 1:
// single_device_compile_options.
std::string partitioned_compile_options(const GraphCompileOptions& graph, int64_t partitions);

}  // namespace xlacel::pjrt
