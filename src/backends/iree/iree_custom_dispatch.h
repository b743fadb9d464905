#pragma once
// IREE's custom-dispatch extension point as the hand-written kernels use it (kernels/*.c): an
// object file compiled at build time, written once into the compile cache, linked into a graph
// by a stream.executable whose objects attribute names the file, and called by flow.dispatch.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stablehlo/function.h"

namespace xlacel::backends {

// An embedded kernel object's bytes; empty for one not built (one zero byte: XLACEL_KERNEL_ISAS
// in CMakeLists.txt).
template <std::size_t N>
std::string_view bytes_of(const unsigned char (&object)[N]) {
  if (N == 1) return {};
  return {reinterpret_cast<const char*>(object), N};
}

// `bytes` written once to `<cache_dir>/kernels/<stem>-<hash>.o`: a path that changes with the
// object's content, so the compile cache (keyed on the graph text) never mixes kernels.
std::filesystem::path write_kernel_object(std::string_view bytes, std::string_view stem,
                                          const std::filesystem::path& cache_dir);

// One memref argument of a kernel's entry point: a view of the dispatch's buffer `binding` (a
// name) as `size` elements of `element` (an MLIR element type) from byte `offset`. An argument a
// weight lacks is passed as another view of the same type.
struct KernelMemref {
  std::string binding;
  std::string element;
  int64_t size = 0;
  int64_t offset = 0;
  // Where > 0, the view starts this many bytes further per unit of the call's index
  // (KernelCall::index_binding): one expert of a stack, at the index the graph computed.
  int64_t index_stride = 0;
};

// How a dispatch's export calls its kernel's entry point (kernels/*.c, the MEMREF convention):
// the memrefs, then the index constants in order, then the workgroup's id. The dispatch's buffers
// (its operands', then the result's) are the memrefs' bindings in the order they first appear.
struct KernelCall {
  std::string entry;
  std::vector<KernelMemref> memrefs;
  std::vector<std::pair<std::string, int64_t>> indices;
  // Where not empty, the dispatch's first buffer: an i32 [1] the dispatch reads to place the
  // views with an index_stride, so no slice of their buffers is made (nor the index read back to
  // the host) before the kernel runs.
  std::string index_binding;
};

// Declares executable `name` in the module of `anchor`'s function: `workgroups` workgroups (x
// only) whose export @name makes `call`, linking `object`. Returns a flow.dispatch of it over
// `operands`, of type `result`. One executable per shape, its export named like it (IREE links
// every executable of a module into one library, so export names must be unique): constants are
// static, so a dispatch needs no operands beyond its tensors.
stablehlo::Value custom_dispatch(stablehlo::Value anchor, const std::string& name,
                                 const std::filesystem::path& object, int64_t workgroups,
                                 const KernelCall& call, std::vector<stablehlo::Value> operands,
                                 const stablehlo::TensorType& result);

}  // namespace xlacel::backends
