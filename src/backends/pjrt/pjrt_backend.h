#pragma once
// XLA through a PJRT C-API plugin loaded with dlopen: the same emitted StableHLO compiled by
// PJRT_Client_Compile, weights uploaded once as device buffers, KV caches donated each call.
#include <memory>

#include "session/backend.h"

namespace xlacel::backends {

std::unique_ptr<session::Backend> open_pjrt_backend(const session::BackendOptions& options);

}  // namespace xlacel::backends
