// The IREE module's entry points (iree_module_entry.h).
#include "backends/iree/iree_module_entry.h"

#include <memory>
#include <type_traits>

#include "backends/iree/iree_device.h"
#include "backends/iree/iree_lowering.h"
#include "backends/iree/iree_planar_kernel.h"

extern "C" __attribute__((visibility("default"))) void xlacel_make_iree_lowering(
    const xlacel::device::DeviceOptions& options,
    std::unique_ptr<xlacel::lowering::Lowering>& lowering) {
  lowering = xlacel::backends::make_iree_lowering(options);
}

extern "C" __attribute__((visibility("default"))) void xlacel_open_iree_device(
    const xlacel::device::DeviceOptions& options, const xlacel::backends::IreeOptions& iree,
    std::unique_ptr<xlacel::device::Device>& device) {
  device = xlacel::backends::open_iree_device(options, iree);
}

extern "C" __attribute__((visibility("default"))) void xlacel_iree_cpu_kernels(
    std::string& kernels) {
  kernels = xlacel::backends::iree_cpu_kernels();
}

// The entry points must keep the types the program calls them through.
static_assert(
    std::is_same_v<decltype(&xlacel_make_iree_lowering), xlacel::backends::IreeLoweringEntry>);
static_assert(
    std::is_same_v<decltype(&xlacel_open_iree_device), xlacel::backends::IreeDeviceEntry>);
static_assert(
    std::is_same_v<decltype(&xlacel_iree_cpu_kernels), xlacel::backends::IreeCpuKernelsEntry>);
