#pragma once
// XLA through a PJRT C-API plugin loaded with dlopen, as a device::Device: StableHLO compiled by
// PJRT_Client_Compile (executables kept in the compile cache), buffers on the plugin's first
// device, aliased arguments donated on execute.
//
// Tensor parallelism (DeviceOptions::tensor_parallel N > 1): the client's first N devices (CPU:
// N devices in this process, cpu_device_count), every graph compiled for N partitions by XLA's
// SPMD partitioner (Shardy) from the sdy.sharding attributes the graph carries, every buffer one
// PJRT buffer per device (its slice, or a copy), executed with one argument list per device.
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
