#include "backends/backends.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backends/iree_module.h"
#include "common/error.h"

namespace xlacel::backends {

std::vector<std::string> runtime_names() {
  return {"iree", "xla"};
}

std::unique_ptr<device::Device> open_device(std::string_view runtime,
                                            const device::DeviceOptions& options,
                                            const RuntimeOptions& runtime_options) {
  if (runtime == "iree") return open_iree_device_from_module(options, runtime_options.iree);
  if (runtime == "xla") return open_pjrt_device(options, runtime_options.xla);
  fail("runtime", "unknown runtime '{}' (known: {})", runtime, fmt::join(runtime_names(), ", "));
}

}  // namespace xlacel::backends
