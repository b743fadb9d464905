#pragma once
// XLA through a PJRT C-API plugin loaded with dlopen, as a device::Device: StableHLO compiled by
// PJRT_Client_Compile (executables kept in the compile cache), buffers on the plugin's first
// device, aliased arguments donated on execute.
//
// Threads (DeviceOptions::threads, CPU only) sizes XLA CPU's thread pools for this device's client
// ($PJRT_NPROC while the client is created; see pjrt_open_client.cpp).
#include <memory>
#include <string>

#include "device/device.h"

namespace xlacel::backends {

// What only XLA has.
struct PjrtOptions {
  std::string plugin_path;  // empty: $XLACEL_PJRT_PLUGIN, else the venv's wheel (pjrt_plugin.h)
};

// Opens the plugin's client (before anything is compiled) or throws Error naming the plugin and
// what is wrong (or the pip package to install).
std::unique_ptr<device::Device> open_pjrt_device(const device::DeviceOptions& options,
                                                 const PjrtOptions& xla);

}  // namespace xlacel::backends
