#pragma once
// Which of XLA CPU's kernels a graph's matrix products get, chosen from the graph itself.
//
// XLA CPU runs a dot of a matrix with a vector (decode of one sequence: activations [1, K] times
// a weight [N, K]^T) as its own generated code, which streams the weight once at memory
// bandwidth. A dot of two matrices (a decode batch or a prefill chunk, [B, K] x [N, K]^T with
// B > 1) goes to Eigen, which re-packs the whole weight on every call with a strided gather
// (the weight is the transposed operand; perf: gemm_pack_colmajor_block was most of the step).
// Measured on SmolLM2-135M (docs/PERFORMANCE.md, "XLA CPU kernel choice"): decode steps of a few
// rows took several times one row's time. XNNPACK also packs the weight per call, but
// contiguously and panel by panel; with it, steps of several rows and prefill chunks took far
// less time than with Eigen. For a vector it is slower than XLA's own code, hence the choice per
// graph.
//
// The catch: this plugin cannot serialize executables that contain XNNPACK fusions, so those
// graphs compile in every process (the compile cache reports them as not cached).
#include <string_view>

#include "backends/pjrt/compile_options_proto.h"
#include "device/device.h"

namespace xlacel::pjrt {

// Whether the StableHLO text has a dot_general without batching dimensions whose result is a
// matrix with at least two rows and two columns (a matrix-matrix product, not matrix-vector).
bool has_matrix_product(std::string_view mlir);

// The per-graph compile options for a graph on `device`: XNNPACK dots on the CPU when the graph
// has a matrix-matrix product.
GraphCompileOptions graph_compile_options(device::DeviceKind device, std::string_view mlir);

}  // namespace xlacel::pjrt
