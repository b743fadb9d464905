#include "backends/iree/cpu_isa.h"

#include <cstdlib>
#include <string_view>

#include "common/error.h"

namespace xlacel::backends {

namespace {

// Whether this CPU has AVX-VNNI (with or without AVX-512).
bool has_avx_vnni() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avxvnni");
#else
  return false;
#endif
}

// What this CPU runs, uncapped.
CpuIsaChoice native_isa() {
  CpuIsaChoice choice;
  choice.llvm_cpu = "host";
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") ||
      !__builtin_cpu_supports("f16c")) {
    return choice;
  }
  choice.isa = CpuIsa::kAvx2;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
    choice.isa = __builtin_cpu_supports("avx512vbmi") ? CpuIsa::kAvx512Vbmi : CpuIsa::kAvx512;
    choice.vnni = choice.isa == CpuIsa::kAvx512Vbmi && __builtin_cpu_supports("avx512vnni");
  } else {
    choice.avx_vnni = has_avx_vnni();
  }
#endif
  return choice;
}

CpuIsaChoice chosen_isa() {
  CpuIsaChoice choice = native_isa();
  const char* value = std::getenv("XLACEL_CPU_ISA");
  const std::string_view cap = value == nullptr ? "" : value;
  if (cap.empty() || cap == "native") return choice;
  // The psABI levels name exactly these sets: x86-64-v3 is AVX2, FMA, F16C (and BMI), v4 adds
  // AVX-512 F, BW, CD, DQ and VL. avxvnni: AVX2's level plus AVX-VNNI, which only the kernel's
  // --math fast decode product uses.
  CpuIsa level;
  bool avx_vnni = false;
  if (cap == "avx2" || cap == "avxvnni") {
    level = CpuIsa::kAvx2;
    choice.llvm_cpu = "x86-64-v3";
    avx_vnni = cap == "avxvnni";
  } else if (cap == "avx512") {
    level = CpuIsa::kAvx512;
    choice.llvm_cpu = "x86-64-v4";
  } else {
    throw Error(fmt::format(
        "XLACEL_CPU_ISA: unknown instruction set '{}' (native, avx2, avxvnni, avx512)", cap));
  }
  if (choice.isa < level || (avx_vnni && !has_avx_vnni())) {
    throw Error(fmt::format("XLACEL_CPU_ISA={}: this CPU does not run it", cap));
  }
  choice.isa = level;
  choice.vnni = false;
  choice.avx_vnni = avx_vnni;
  choice.name = std::string(cap);
  return choice;
}

}  // namespace

const CpuIsaChoice& iree_cpu_isa() {
  static const CpuIsaChoice choice = chosen_isa();
  return choice;
}

}  // namespace xlacel::backends
