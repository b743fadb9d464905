#include "backends/backends.h"

#include "backends/iree/iree_backend.h"
#include "backends/pjrt/pjrt_backend.h"
#include "common/error.h"

namespace xlacel::backends {

std::vector<std::string> backend_names() {
  return {"iree", "xla"};
}

std::unique_ptr<session::Backend> open_backend(std::string_view name,
                                               const session::BackendOptions& options) {
  if (name == "iree") return open_iree_backend(options);
  if (name == "xla") return open_pjrt_backend(options);
  fail("--backend", "unknown backend '{}' (known: iree, xla)", name);
}

}  // namespace xlacel::backends
