#pragma once
// IREE's custom-dispatch extension point as the hand-written kernels use it (kernels/*.c): an
// object file compiled at build time, written once into the compile cache, linked into a graph
// by a stream.executable whose objects attribute names the file, and called by flow.dispatch.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "stablehlo/function.h"

namespace xlacel::backends {

template <std::size_t N>
std::string_view bytes_of(const unsigned char (&object)[N]) {
  return {reinterpret_cast<const char*>(object), N};
}

// Whether this CPU runs the kernels' AVX-512 objects (F, BW, VL and DQ, as they are built with);
// the AVX2 ones otherwise.
bool cpu_runs_avx512_kernels();

// `bytes` written once to `<cache_dir>/kernels/<stem>-<hash>.o`: a path that changes with the
// object's content, so the compile cache (keyed on the graph text) never mixes kernels.
std::filesystem::path write_kernel_object(std::string_view bytes, std::string_view stem,
                                          const std::filesystem::path& cache_dir);

// Declares executable `name` in the module of `anchor`'s function: `workgroups` workgroups (x
// only) over `functions` (the builtin module's body: the kernel's import and the export @name
// calling it), linking `object`. Returns a flow.dispatch of it over `operands`, of type `result`.
// One executable per shape, its export named like it (IREE links every executable of a module
// into one library, so export names must be unique): constants are static, so a dispatch needs
// no operands beyond its tensors.
stablehlo::Value custom_dispatch(stablehlo::Value anchor, const std::string& name,
                                 const std::filesystem::path& object, int64_t workgroups,
                                 const std::string& functions,
                                 std::vector<stablehlo::Value> operands,
                                 const stablehlo::TensorType& result);

}  // namespace xlacel::backends
