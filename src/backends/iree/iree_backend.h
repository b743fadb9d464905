#pragma once
// IREE: graphs compiled by iree-compile through the compile cache, run by the pip package
// iree-base-runtime's iree.runtime in an embedded Python interpreter (IREE's C runtime is not
// installable here). Python stays inside this folder.
#include <memory>

#include "session/backend.h"

namespace xlacel::backends {

std::unique_ptr<session::Backend> open_iree_backend(const session::BackendOptions& options);

}  // namespace xlacel::backends
