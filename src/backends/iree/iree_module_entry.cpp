// The IREE module's entry point (backends/iree_module.h), with C linkage so the program finds it
// by name with dlsym.
#include <memory>
#include <type_traits>

#include "backends/iree/iree_device.h"
#include "backends/iree_module.h"

extern "C" __attribute__((visibility("default"))) void xlacel_open_iree_device(
    const xlacel::device::DeviceOptions& options, const xlacel::backends::IreeOptions& iree,
    std::unique_ptr<xlacel::device::Device>& device) {
  device = xlacel::backends::open_iree_device(options, iree);
}

// The entry point must keep the type the program calls it through.
static_assert(
    std::is_same_v<decltype(&xlacel_open_iree_device), xlacel::backends::IreeModuleEntry>);
