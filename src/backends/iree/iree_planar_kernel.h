#pragma once
// IREE llvm-cpu's planar product (lowering/planar_kernel.h): kernels/planar_matmul.c, compiled at
// build time into an object that each graph links through IREE's custom-dispatch extension
// point (a stream.executable whose objects attribute names the file, called by flow.dispatch).
#include <filesystem>
#include <memory>
#include <string>

#include "lowering/planar_kernel.h"

namespace xlacel::backends {

// Which product a kernel object's `multiply` runs.
enum class PlanarProduct {
  kExact,       // f32 arithmetic on the exact weight values (every CPU with AVX2 and FMA)
  kInt8Panels,  // --math fast, prefill: products of at least 8 x rows and 512 columns quantize x
                // to i8 and multiply with VNNI dot products in panels (AVX-512 VBMI and VNNI);
                // others stay exact
  kInt8Rows,    // --math fast, decode: every product of a width in blocks of 32 quantizes x to
                // i8 and multiplies each x row alone (AVX2; vpdpbusd where VNNI), so a row's result
              // does not depend on the rows it is batched with
};

// nullptr unless this CPU runs `product` (x86-64 with AVX2 and FMA; kInt8Panels: AVX-512 VBMI and
// VNNI too) and $XLACEL_IREE_NO_PLANAR_KERNEL is unset or empty. The object is written once to
// `<cache_dir>/kernels/planar_matmul-<hash>.o`, a path that changes with its content (so the
// compile cache, keyed on the graph text, never mixes kernels). `workers`: the runtime's worker
// threads, which share a product of few rows one workgroup each. The int8 products are not exact.
std::unique_ptr<lowering::PlanarKernel> make_iree_cpu_planar_kernel(
    const std::filesystem::path& cache_dir, int workers,
    PlanarProduct product = PlanarProduct::kExact);

// For people (`xlacel --version`, the device line of `bench`): the instruction set of the kernel
// the IREE CPU runtime uses here ("AVX-512 VBMI", "AVX2"), with --math fast's ("prefill AVX-512
// VNNI, decode AVX-512 VNNI"; "prefill exact, decode AVX2"), or "none (...)" and why.
std::string iree_cpu_kernels();

}  // namespace xlacel::backends
