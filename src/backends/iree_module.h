#pragma once
// The IREE backend lives in a module of its own (xlacel-iree.so), loaded with dlopen the first
// time an IREE device is opened: it links libpython (iree.runtime runs in an embedded
// interpreter), and keeping that out of the program lets xlacel start, and run XLA, on a machine
// without libpython. The program exports its symbols, so the module uses the program's own
// copies of what they share (Error, the device types, the compile cache).
#include <memory>

#include "backends/iree/iree_device.h"
#include "device/device.h"

namespace xlacel::backends {

// The module's entry point, looked up by this name; it wraps open_iree_device (iree_device.h).
// Errors it throws reach the caller unchanged.
inline constexpr const char* kIreeModuleEntry = "xlacel_open_iree_device";
using IreeModuleEntry = void (*)(const device::DeviceOptions& options, const IreeOptions& iree,
                                 std::unique_ptr<device::Device>& device);

// The module's file name, looked for next to the running program.
inline constexpr const char* kIreeModuleName = "xlacel-iree.so";

// Loads the module once per process (it is never unloaded) and opens a device through it.
// Looks at $XLACEL_IREE_MODULE (only there when set), then next to the running program, then
// where the build put it. Throws Error "iree backend: cannot load <path>: <why>" (e.g. the
// missing libpython) when it cannot be loaded, and the module's own Errors after that.
std::unique_ptr<device::Device> open_iree_device_from_module(const device::DeviceOptions& options,
                                                             const IreeOptions& iree);

}  // namespace xlacel::backends
