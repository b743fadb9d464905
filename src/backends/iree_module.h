#pragma once
// The IREE backend lives in a module of its own (xlacel-iree.so), loaded with dlopen the first
// time an IREE device is opened: it links libpython (iree.runtime runs in an embedded
// interpreter), and keeping that out of the program lets xlacel start, and run XLA, on a machine
// without libpython. The program exports its symbols, so the module uses the program's own
// copies of what they share (Error, the device types, the compile cache).
#include <memory>
#include <string>

#include "backends/iree/iree_device.h"
#include "device/device.h"
#include "lowering/lowering.h"

namespace xlacel::backends {

// The module's file name, looked for next to the running program.
inline constexpr const char* kIreeModuleName = "xlacel-iree.so";

// Load the module once per process (it is never unloaded) and make the lowering, or open a
// device, through it. Each looks at $XLACEL_IREE_MODULE (only there when set), then next to the
// running program, then where the build put it. Throws Error "iree backend: cannot load <path>:
// <why>" (e.g. the missing libpython) when it cannot be loaded, and the module's own Errors after
// that.
std::unique_ptr<lowering::Lowering> make_iree_lowering_from_module(
    const device::DeviceOptions& options);
std::unique_ptr<device::Device> open_iree_device_from_module(const device::DeviceOptions& options,
                                                             const IreeOptions& iree);
// The instruction set of IREE's CPU kernels here (iree_planar_kernel.h, iree_cpu_kernels).
std::string iree_cpu_kernels_from_module();

}  // namespace xlacel::backends
