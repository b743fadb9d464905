#pragma once
// The IREE module's entry points (backends/iree_module.h loads the module and calls them), with C
// linkage so that the program finds them by name with dlsym.
#include <memory>
#include <string>

#include "backends/iree/iree_device.h"
#include "device/device.h"
#include "lowering/lowering.h"

namespace xlacel::backends {

// Each entry point's name and type. Errors they throw reach the caller unchanged.
// make_iree_lowering (iree_lowering.h):
inline constexpr const char* kIreeLoweringEntry = "xlacel_make_iree_lowering";
using IreeLoweringEntry = void (*)(const device::DeviceOptions& options,
                                   std::unique_ptr<lowering::Lowering>& lowering);
// open_iree_device (iree_device.h):
inline constexpr const char* kIreeDeviceEntry = "xlacel_open_iree_device";
using IreeDeviceEntry = void (*)(const device::DeviceOptions& options, const IreeOptions& iree,
                                 std::unique_ptr<device::Device>& device);
// iree_cpu_kernels (iree_planar_kernel.h):
inline constexpr const char* kIreeCpuKernelsEntry = "xlacel_iree_cpu_kernels";
using IreeCpuKernelsEntry = void (*)(std::string& kernels);

}  // namespace xlacel::backends
