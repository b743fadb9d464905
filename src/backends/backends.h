#pragma once
// Backend selection: every runtime behind the one session::Backend interface.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "session/backend.h"

namespace xlacel::backends {

std::vector<std::string> backend_names();  // {"iree", "xla"}

// Loads the model on the named backend; Error naming the backend and what is missing (e.g.
// the pip package to install) when it cannot.
std::unique_ptr<session::Backend> open_backend(std::string_view name,
                                               const session::BackendOptions& options);

}  // namespace xlacel::backends
