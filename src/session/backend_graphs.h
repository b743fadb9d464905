#pragma once
// What every backend compiles for a BackendOptions: the prefill graph at the bucket size and the
// decode graphs asked for, each emitted as StableHLO text with a source name for diagnostics and
// cache sidecars ("<model>.<graph>.mlir").
#include <string>
#include <vector>

#include "models/graph_options.h"
#include "session/backend.h"

namespace xlacel::session {

struct BackendGraph {
  models::GraphOptions options;
  std::string mlir;
  std::string source;
};

// prefill, then decode (options.argmax_graph), then decode-logits (options.logits_graph).
std::vector<BackendGraph> emit_backend_graphs(const BackendOptions& options);

}  // namespace xlacel::session
