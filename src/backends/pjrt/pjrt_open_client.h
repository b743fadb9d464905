#pragma once
// Opening a PJRT client the way every xlacel user of a plugin does: find the plugin for the
// device (pjrt_plugin.h), preload the NVIDIA libraries for CUDA, create the client with the
// CPU thread count asked for, and check that its platform is the device asked for.
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "backends/pjrt/pjrt_client.h"
#include "device/device.h"

namespace xlacel::pjrt {

// The client on `kind`'s plugin (`plugin_path`, or found as find_plugin does), using its first
// `devices` devices (CPU: the plugin makes that many in this process). `threads` > 0 sizes XLA
// CPU's thread pools (see pjrt_open_client.cpp); an Error for a GPU. One progress line names the
// plugin. Throws Error naming the plugin and what is wrong.
std::shared_ptr<const Client> open_client(device::DeviceKind kind, const std::string& plugin_path,
                                          int threads, int devices,
                                          const std::function<void(std::string_view)>& progress);

}  // namespace xlacel::pjrt
