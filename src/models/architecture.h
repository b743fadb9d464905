#pragma once
// The architecture registry: everything the rest of xlacel knows about a model family comes
// through one Architecture. Adding a family = one file that defines an Architecture and one line
// in the registry (architecture.cpp). Nothing outside src/models knows a family's weights, cache
// layout or graphs.
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "model_files/model_config.h"
#include "models/graph_options.h"
#include "models/graph_signature.h"
#include "models/weight_layout.h"

namespace xlacel::stablehlo {
class Module;
}

namespace xlacel::models {

// One graph as emitted.
struct EmittedGraph {
  std::string mlir;  // the StableHLO text
  // The arguments of `main` that only the runtime's hand-written kernels read
  // (stablehlo::arguments_only_foreign_ops_read): a device may keep such a weight at any address,
  // where its compiled code assumes aligned buffers (lowering::Lowering::in_place).
  std::set<std::string> kernel_only_arguments;
  // The caches whose attention the runtime's kernel runs (lowering::AttentionKernel): it reads
  // each sequence's rows up to its length, where the graph's own attention reads every row of its
  // window, masked. For the cost model of `xlacel bench`.
  std::set<std::string> caches_read_to_length;
};

// `module`'s text, and what only kernels read of its function `main`.
EmittedGraph emitted_graph(const stablehlo::Module& module);

class Architecture {
 public:
  virtual ~Architecture() = default;

  virtual std::string name() const = 0;                      // "llama"
  virtual std::vector<std::string> model_types() const = 0;  // {"llama", "mistral", "qwen2"}

  // Every weight argument, in argument order (resident on the device).
  virtual std::vector<WeightSpec> weight_specs(const ModelConfig& config,
                                               WeightType weights) const = 0;
  // The weight arguments of graphs built with `paired_nibbles` (GraphOptions): weight_specs, with
  // 4-bit codes in row pairs where they can be (paired_nibble_specs). The loader uploads what
  // the graph declares from this one list.
  std::vector<WeightSpec> weight_arguments(const ModelConfig& config, WeightType weights,
                                           bool paired_nibbles) const;
  // The cache tensors for `slots` sequences of `capacity` positions, in argument order, each
  // layer's as the layer declares them (DecoderLayer::add_caches): attention's K and V
  // [slots, kv_heads, rows, head_dim], or a recurrent block's state (LFM2's short convolution:
  // [slots, 1, taps, hidden]); rows below `capacity` make a ring holding position p at row
  // p mod rows (models/cache_access.h).
  virtual std::vector<TensorSpec> cache_specs(const ModelConfig& config, WeightType weights,
                                              int64_t slots, int64_t capacity) const = 0;
  // The graph's arguments and results (graph_signature.h); emit() declares exactly these. Error
  // naming the problem for options the config cannot honour (check_graph_options).
  virtual GraphSignature signature(const ModelConfig& config,
                                   const GraphOptions& options) const = 0;
  // One graph; Error naming the problem for options the config cannot honour (bucket >
  // capacity, capacity > max positions, decode bucket > slots, ...).
  virtual EmittedGraph emit(const ModelConfig& config, const GraphOptions& options) const = 0;
};

// The architecture of config.architecture (its model_type); otherwise Error
// "<where>: unknown architecture 'gpt_neox' (supported: llama, mistral, qwen2)", where `where` is
// the model's path when given, else the model_type.
const Architecture& architecture_for(const ModelConfig& config, std::string_view where = {});

// Every supported model_type, sorted, for messages and `xlacel inspect`.
std::vector<std::string> supported_model_types();

}  // namespace xlacel::models
