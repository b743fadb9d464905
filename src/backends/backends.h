#pragma once
// Runtime selection: every runtime behind the one device::Device interface, with its
// lowering::Lowering.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/iree/iree_device.h"
#include "backends/pjrt/pjrt_device.h"
#include "backends/runtime.h"
#include "device/device.h"

namespace xlacel::backends {

// The options only one runtime has, for each runtime; open_device reads the named runtime's.
struct RuntimeOptions {
  IreeOptions iree;
  PjrtOptions xla;
};

std::vector<std::string> runtime_names();  // {"iree", "xla"}

// One line per runtime for `xlacel --version`: the IREE compiler and runtime packages of the
// venv, and the XLA PJRT plugins (the CPU plugin is loaded to ask its API and XLA versions; the
// CUDA one is only looked up, since loading it wants a GPU). Never throws: what is missing says so.
std::vector<std::string> runtime_versions();

// The named runtime's lowering for devices opened with `options` (it opens none), and a device of
// the runtime. Error naming the runtime and the known ones when there is no such runtime, the
// field of `options` the runtime cannot honour, or what is missing (e.g. the pip package to
// install) when it cannot start.
std::unique_ptr<lowering::Lowering> make_lowering(std::string_view runtime,
                                                  const device::DeviceOptions& options);
std::unique_ptr<device::Device> open_device(std::string_view runtime,
                                            const device::DeviceOptions& options,
                                            const RuntimeOptions& runtime_options);
// Both.
Runtime open_runtime(std::string_view runtime, const device::DeviceOptions& options,
                     const RuntimeOptions& runtime_options);

}  // namespace xlacel::backends
