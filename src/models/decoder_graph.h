#pragma once
// The graph context a decoder's layers are built in (as llama.cpp's graph context): one graph's
// arguments (exactly its signature's, in order), the rows it computes, their positions and RoPE
// tables, the KV caches' access, the family's norms, and the results. emit_decoder_graph stacks
// the family's layers (decoder_layer.h) between embed() and finish(); see graph_options.h for
// what each graph kind computes.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "model_files/model_config.h"
#include "models/architecture.h"
#include "models/cache_access.h"
#include "models/decoder_family.h"
#include "models/graph_options.h"
#include "models/graph_signature.h"
#include "models/llama_layers.h"
#include "stablehlo/module.h"

namespace xlacel::models {

class DecoderGraph {
 public:
  DecoderGraph(const ModelConfig& config, const DecoderFamily& family, const GraphOptions& options,
               const GraphSignature& signature);

  const ModelConfig& config() const { return config_; }
  const GraphOptions& options() const { return options_; }
  stablehlo::Block& block() { return function_->body(); }
  // T activation rows: prefill's bucket of each of its sequences, or decode's one token of each
  // of N = bucket sequences.
  int64_t tokens() const { return tokens_; }
  int64_t sequences() const { return sequences_; }

  // Weight arguments by name, and layer `layer`'s l<layer>_<name>.
  Value weight(const std::string& name) const { return weights_.at(name); }
  Value layer_weight(int64_t layer, const std::string& name) const;
  // The layer's weight where the weight list has it (a bias the config asks for), else none.
  std::optional<Value> optional_layer_weight(int64_t layer, const std::string& name) const;
  // A matrix, possibly kept as planes of a block format (resident_weight.h).
  Weight matrix(const std::string& name) const;
  Weight layer_matrix(int64_t layer, const std::string& name) const;

  // The family's norm of x whose weight is `name` (its bias <name>_bias for LayerNorms).
  Value norm(Value x, const std::string& name);
  Value layer_norm(int64_t layer, Value x, const std::string& name);
  // A norm weight as the family applies it: w, or 1 + w in f32.
  Value norm_weight(Value scale);
  Value scaled(Value x, double scale);  // x unchanged for 1

  // RoPE tables of these rows: the global ones, or sliding layers' (local_rope).
  const Rotary& rope(bool local) const { return local ? *local_rope_ : rope_; }
  // Writes this call's k and v [T, kv_heads, head_dim] into layer `layer`'s cache; what
  // attention reads.
  CacheRead update_cache(int64_t layer, Value k, Value v);
  // Writes this call's inputs x f32 [T, D] of layer `layer`'s short convolution into its cache;
  // each row's window of inputs (CacheAccess::recent_inputs): f32 [T, taps, D].
  Value recent_inputs(int64_t layer, Value x);
  // Layer `layer`'s recurrent state (ssm_cache_<L>, CacheAccess::state_before): each sequence's
  // state before this call's rows, f32 [N, S]; store_state writes each one's state after its
  // last real row.
  Value state_before(int64_t layer);
  void store_state(int64_t layer, Value after);
  // i32 [N]: each prefill sequence's real rows (valid_length); none for decode, whose rows are
  // all real.
  std::optional<Value> valid_lengths();
  Value query_positions();                               // i32 [N, T per sequence]
  std::optional<Value> key_end() const { return end_; }  // prefill: start + valid_length
  // i32 [N, T]: the last key position each query sees where a query sees past its own position
  // (AttentionInputs::sees_through): Gemma 3's image tokens see their whole image in prefill.
  std::optional<Value> sees_through() const { return sees_through_; }
  Value by_sequence(Value x);  // [T, ...] -> [N, T per sequence, ...]

  Value embed();  // the rows' token embeddings, scaled: f32 [T, hidden]
  // Final norm, then logits and their argmax (or the normed hidden states: embed), and the
  // updated caches.
  EmittedGraph finish(Value h);

  // Notes that only the runtime's attention kernel reads cache `name`, to each sequence's
  // length (EmittedGraph::caches_read_to_length).
  void read_to_length(const std::string& name) { caches_read_to_length_.insert(name); }

 private:
  // The function's results: `produced` by the signature's output names, then the caches.
  EmittedGraph finish_with(const std::map<std::string, Value>& produced);
  Value of_sequence(const char* name, int64_t s);
  Value image_runs_end();  // sees_through_ of a prefill over whole image runs

  const ModelConfig& config_;
  const DecoderFamily& family_;
  const GraphOptions& options_;
  const GraphSignature& signature_;
  stablehlo::Module module_;
  stablehlo::Function* function_;
  std::map<std::string, Value> inputs_, weights_;
  // The caches in signature order, their values after this call's writes so far (unwritten:
  // the argument), and their positions by name (k_cache_<L>, v_cache_<L>, conv_cache_<L>,
  // ssm_cache_<L>).
  std::vector<Value> caches_, new_caches_;
  std::map<std::string, std::size_t> cache_index_;
  std::set<std::string> caches_read_to_length_;
  int64_t sequences_ = 1, tokens_ = 1, per_sequence_ = 1;
  Value positions_, token_ids_;
  std::optional<Value> end_;
  std::optional<Value> sees_through_;
  std::optional<CacheAccess> access_;
  Rotary rope_;
  std::optional<Rotary> local_rope_;
};

// The graph of `options` of a decoder of `family`, whose `main` declares exactly `signature`'s
// arguments and results (DecoderArchitecture::signature, which has checked the options).
EmittedGraph emit_decoder_graph(const ModelConfig& config, const DecoderFamily& family,
                                const GraphOptions& options, const GraphSignature& signature);

}  // namespace xlacel::models
