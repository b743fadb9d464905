#include "session/backend_graphs.h"

#include <fmt/format.h>

#include "common/error.h"
#include "models/architecture.h"

namespace xlacel::session {

std::vector<BackendGraph> emit_backend_graphs(const BackendOptions& options) {
  if (options.model == nullptr) fail("backend", "no model given");
  std::vector<models::GraphOptions> kinds;
  kinds.push_back(
      {models::GraphKind::kPrefill, options.prefill_bucket, options.capacity, options.weights});
  if (options.argmax_graph) {
    kinds.push_back({models::GraphKind::kDecode, 1, options.capacity, options.weights});
  }
  if (options.logits_graph) {
    kinds.push_back({models::GraphKind::kDecodeLogits, 1, options.capacity, options.weights});
  }
  std::vector<BackendGraph> graphs;
  const ModelConfig& config = options.model->config();
  const models::Architecture& architecture =
      models::architecture_for(config, options.model->path());
  for (const models::GraphOptions& graph : kinds) {
    graphs.push_back({graph, architecture.emit(config, graph),
                      fmt::format("{}.{}.mlir", options.model->name(), models::graph_name(graph))});
  }
  return graphs;
}

}  // namespace xlacel::session
