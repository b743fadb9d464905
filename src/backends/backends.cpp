#include "backends/backends.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backends/iree/iree_backend.h"
#include "backends/pjrt/pjrt_backend.h"
#include "common/error.h"

namespace xlacel::backends {

std::vector<std::string> runtime_names() {
  return {"iree", "xla"};
}

std::unique_ptr<device::Device> open_device(std::string_view runtime,
                                            const device::DeviceOptions& options,
                                            const RuntimeOptions& runtime_options) {
  if (runtime == "iree") return open_iree_device(options, runtime_options.iree);
  if (runtime == "xla") return open_pjrt_device(options, runtime_options.xla);
  fail("--backend", "unknown runtime '{}' (known: {})", runtime, fmt::join(runtime_names(), ", "));
}

std::vector<std::string> backend_names() {
  return runtime_names();
}

std::unique_ptr<session::Backend> open_backend(std::string_view name,
                                               const session::BackendOptions& options) {
  if (name == "iree") return open_iree_backend(options);
  if (name == "xla") return open_pjrt_backend(options);
  fail("--backend", "unknown backend '{}' (known: {})", name, fmt::join(backend_names(), ", "));
}

}  // namespace xlacel::backends
