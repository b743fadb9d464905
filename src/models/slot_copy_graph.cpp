#include "models/slot_copy_graph.h"

#include "models/tensor_parallel.h"
#include "stablehlo/ops.h"

namespace xlacel::models {

using namespace stablehlo;

EmittedGraph emit_slot_copy(const ModelConfig& config, const GraphOptions& options,
                            const GraphSignature& signature) {
  Module module(module_name(options.kind));
  Function& f = module.add_function("main");
  Block& b = f.body();
  const TensorType index(ElementType::kI32, {});
  const Value from = f.argument("from", index);
  const Value to = f.argument("to", index);
  std::vector<Value> caches;
  for (const TensorSpec& spec : signature.caches) {
    caches.push_back(f.argument(spec.name, TensorType(spec.element, spec.shape)));
  }
  const Value zero = constant(b, index, 0.0);
  std::vector<Value> copied;
  for (std::size_t i = 0; i < caches.size(); ++i) {
    const TensorSpec& spec = signature.caches[i];
    const Value cache = caches[i];
    // One slot, every head and row: [1, kv_heads, rows, head_dim].
    std::vector<int64_t> one_slot = spec.shape;
    one_slot.front() = 1;
    std::vector<Value> at_from(spec.shape.size(), zero);
    std::vector<Value> at_to(spec.shape.size(), zero);
    at_from.front() = from;
    at_to.front() = to;
    copied.push_back(dynamic_update_slice(cache, dynamic_slice(cache, at_from, one_slot), at_to));
    f.alias_output(cache, static_cast<int64_t>(i));
  }
  f.finish(copied);
  annotate_shardings(module, f, config, signature, options.tensor_parallel);
  return emitted_graph(module);
}

}  // namespace xlacel::models
