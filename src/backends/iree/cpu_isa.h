#pragma once
// The x86-64 instruction sets the IREE CPU runtime's code may use: all this CPU has, or at most
// what $XLACEL_CPU_ISA names, so that the code a CPU without AVX-512 runs (most laptops' and
// desktops') can be run, tested and measured on any machine that has more. It decides both the
// hand-written kernels' objects (iree_planar_kernel.cpp, iree_attention_kernel.cpp) and the
// CPU iree-compile generates code for (iree_device.cpp).
#include <string>

namespace xlacel::backends {

// Ordered: each takes the ones before it.
enum class CpuIsa {
  kNone,        // not x86-64 with AVX2 and FMA: llvm-cpu's code only, no hand-written kernel
  kAvx2,        // AVX2, FMA and F16C
  kAvx512,      // and AVX-512 F, BW, VL and DQ
  kAvx512Vbmi,  // and AVX-512 VBMI
};

struct CpuIsaChoice {
  CpuIsa isa = CpuIsa::kNone;
  bool vnni = false;            // AVX-512 VNNI too (--math fast's int8 product)
  bool avx_vnni = false;        // AVX-VNNI (the same vpdpbusd, VEX) without AVX-512
  std::string llvm_cpu;         // --iree-llvmcpu-target-cpu: "host", or the capped level's
  std::string name = "native";  // for people: "native", "avx2", "avxvnni", "avx512"
};

// Read once: this CPU's, capped by $XLACEL_CPU_ISA (avx2, avxvnni: AVX2 and AVX-VNNI, avx512;
// native or unset: no cap).
// Throws Error for an unknown value or one this CPU does not run.
const CpuIsaChoice& iree_cpu_isa();

}  // namespace xlacel::backends
