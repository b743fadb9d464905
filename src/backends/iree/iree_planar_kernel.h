#pragma once
// IREE llvm-cpu's planar product (lowering/planar_kernel.h): kernels/planar_matmul.c, compiled at
// build time into an object that each graph links through IREE's custom-dispatch extension
// point (a stream.executable whose objects attribute names the file, called by flow.dispatch).
#include <filesystem>
#include <memory>
#include <string>

#include "lowering/planar_kernel.h"

namespace xlacel::backends {

// nullptr unless this CPU runs the kernel (x86-64 with AVX2 and FMA) and
// $XLACEL_IREE_NO_PLANAR_KERNEL is unset or empty. The object is written
// once to `<cache_dir>/kernels/planar_matmul-<hash>.o`, a path that changes with its content (so
// the compile cache, keyed on the graph text, never mixes kernels). `workers`: the runtime's worker
// threads, which share a product of few rows one workgroup each. `int8` (--math fast): products
// whose width is a multiple of 512 quantize x to i8 and multiply with VNNI dot products, not
// exact; nullptr unless this CPU has AVX-512 with VBMI and VNNI.
std::unique_ptr<lowering::PlanarKernel> make_iree_cpu_planar_kernel(
    const std::filesystem::path& cache_dir, int workers, bool int8 = false);

// For people (`xlacel --version`, the device line of `bench`): the instruction set of the kernel
// the IREE CPU runtime uses here ("AVX-512 VBMI", "AVX2", with --math fast's "AVX-512 VNNI"), or
// "none (...)" and why.
std::string iree_cpu_kernels();

}  // namespace xlacel::backends
