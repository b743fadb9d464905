#pragma once
// IREE llvm-cpu's decode attention (lowering/attention_kernel.h): kernels/decode_attention.c,
// linked into each graph that uses it through IREE's custom-dispatch extension point
// (iree_custom_dispatch.h).
#include <filesystem>
#include <memory>

#include "lowering/attention_kernel.h"

namespace xlacel::backends {

// nullptr unless this CPU runs the kernel (x86-64 with AVX2 and FMA) and
// $XLACEL_IREE_NO_ATTENTION_KERNEL is unset or empty. The object is written once to
// `<cache_dir>/kernels/decode_attention-<hash>.o`. `workers`: the runtime's worker threads
// (decode splits its keys so that they share the kv heads evenly).
std::unique_ptr<lowering::AttentionKernel> make_iree_cpu_attention_kernel(
    const std::filesystem::path& cache_dir, int workers);

}  // namespace xlacel::backends
