#include "models/slot_copy_graph.h"

#include "common/error.h"
#include "models/tensor_parallel.h"
#include "stablehlo/ops.h"

namespace xlacel::models {

using namespace stablehlo;

namespace {

std::vector<int64_t> one_slot(std::vector<int64_t> shape) {
  shape.front() = 1;
  return shape;
}

// A KV cache ([slots, kv heads, rows, head dim]) whose rows are every position.
bool holds_every_position(const TensorSpec& cache, int64_t capacity) {
  return (cache.name.starts_with("k_cache_") || cache.name.starts_with("v_cache_")) &&
         cache.shape.size() == 4 && cache.shape[2] == capacity;
}

}  // namespace

std::vector<TensorSpec> slot_rows_specs(const std::vector<TensorSpec>& caches, int64_t window,
                                        int64_t capacity) {
  std::vector<TensorSpec> rows;
  for (const TensorSpec& cache : caches) {
    std::vector<int64_t> shape = one_slot(cache.shape);
    if (window > 0 && holds_every_position(cache, capacity)) shape[2] = window;
    rows.push_back({cache.name + "_rows", cache.element, std::move(shape)});
  }
  return rows;
}

EmittedGraph emit_slot_graph(const ModelConfig& config, const GraphOptions& options,
                             const GraphSignature& signature) {
  if (!moves_slots(options.kind)) fail(graph_name(options), "is not a graph that moves slots");
  Module module(module_name(options.kind));
  Function& f = module.add_function("main");
  Block& b = f.body();
  const TensorType index(ElementType::kI32, {});
  // copy-slot reads slot `from` and writes slot `to`; save-slot reads and restore-slot writes
  // slot `slot`.
  const bool copy = options.kind == GraphKind::kCopySlot;
  const Value from = f.argument(copy ? "from" : "slot", index);
  const Value to = copy ? f.argument("to", index) : from;
  const std::vector<TensorSpec> rows_specs =
      slot_rows_specs(signature.caches, options.window, options.capacity);
  std::vector<Value> saved;
  if (options.kind == GraphKind::kRestoreSlot) {
    for (const TensorSpec& spec : rows_specs) {
      saved.push_back(f.argument(spec.name, TensorType(spec.element, spec.shape)));
    }
  }
  std::vector<Value> caches;
  for (const TensorSpec& spec : signature.caches) {
    caches.push_back(f.argument(spec.name, TensorType(spec.element, spec.shape)));
  }
  const Value zero = constant(b, index, 0.0);
  std::vector<Value> results;
  std::vector<Value> updated;
  for (std::size_t i = 0; i < caches.size(); ++i) {
    const TensorSpec& spec = signature.caches[i];
    // One slot, every head and row (or every state element).
    std::vector<Value> at_from(spec.shape.size(), zero);
    std::vector<Value> at_to(spec.shape.size(), zero);
    at_from.front() = from;
    at_to.front() = to;
    if (options.kind == GraphKind::kSaveSlot) {
      results.push_back(dynamic_slice(caches[i], at_from, rows_specs[i].shape));
      updated.push_back(caches[i]);
    } else if (options.kind == GraphKind::kRestoreSlot) {
      updated.push_back(dynamic_update_slice(caches[i], saved[i], at_to));
    } else {
      updated.push_back(dynamic_update_slice(
          caches[i], dynamic_slice(caches[i], at_from, one_slot(spec.shape)), at_to));
    }
  }
  const auto first_cache = static_cast<int64_t>(results.size());
  for (std::size_t i = 0; i < caches.size(); ++i) {
    f.alias_output(caches[i], first_cache + static_cast<int64_t>(i));
    results.push_back(updated[i]);
  }
  f.finish(results);
  annotate_shardings(module, f, config, signature, options.tensor_parallel);
  return emitted_graph(module);
}

}  // namespace xlacel::models
