#pragma once
// IREE as a device::Device: graphs compiled by iree-compile through the compile cache, run by the
// pip package iree-base-runtime's iree.runtime in the embedded Python interpreter (IREE's C
// runtime is not installable here). Python stays inside this folder.
//
// Threads (DeviceOptions::threads) sets the local-task driver's worker count, which IREE fixes
// when the process's first CPU device is opened: a later device may ask for 0 (whatever runs) or
// the same count, anything else is an Error.
//
// $XLACEL_IREE_ALSO_COMPILE_CUDA=sm_80[,sm_86...]: every graph a device loads is also compiled
// for those CUDA targets into the same cache, so that a machine without a GPU can prepare, by
// running commands on its CPU, the modules the same commands load on a GPU (scripts/gpu-bundle;
// the graphs must not depend on the device, as with --weights f32).
#include <memory>
#include <string>
#include <vector>

#include "device/device.h"

namespace xlacel::backends {

// What only IREE has.
struct IreeOptions {
  std::string cuda_sm;                      // CUDA target for --device cuda; empty: sm_80
  std::vector<std::string> compiler_flags;  // appended to iree-compile's (part of the cache key)
};

// The CPU device's worker threads for `options`: DeviceOptions::threads, or one per hardware
// thread (the kernels of iree_lowering.h split their work over the same workers).
int iree_cpu_workers(const device::DeviceOptions& options);

// Opens the device (before anything is compiled, so a missing runtime or GPU fails fast) or
// throws Error naming what is missing.
std::unique_ptr<device::Device> open_iree_device(const device::DeviceOptions& options,
                                                 const IreeOptions& iree);

}  // namespace xlacel::backends
