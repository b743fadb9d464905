#pragma once
// The host CPU as a code generator targeting "host" sees it: an artifact compiled with
// --iree-llvmcpu-target-cpu=host may use any instruction this CPU has, so its cache key must
// name the CPU model and its full feature set.
#include <string>

namespace xlacel::compile_cache {

struct HostCpu {
  std::string description;  // short, for people: "x86_64 AMD EPYC (features 1a2b3c4d5e6f7a8b)"
  std::string identity;     // complete: architecture, vendor, family/model/stepping, features
};

// Read once per process from uname and /proc/cpuinfo (the first processor's entry).
const HostCpu& host_cpu();

}  // namespace xlacel::compile_cache
