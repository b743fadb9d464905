#include "models/decoder_graph.h"

#include <fmt/format.h>

#include "models/decoder_layer.h"
#include "models/tensor_parallel.h"
#include "stablehlo/ops.h"

namespace xlacel::models {

using namespace stablehlo;

namespace {

TensorType type_of(const TensorSpec& spec) {
  return {spec.element, spec.shape};
}

}  // namespace

DecoderGraph::DecoderGraph(const ModelConfig& config, const DecoderFamily& family,
                           const GraphOptions& options, const GraphSignature& signature)
    : config_(config),
      family_(family),
      options_(options),
      signature_(signature),
      module_(module_name(options.kind)),
      function_(&module_.add_function("main")) {
  Function& f = *function_;
  Block& b = f.body();
  for (const TensorSpec& spec : signature.inputs) {
    inputs_[spec.name] = f.argument(spec.name, type_of(spec));
  }
  for (const WeightSpec& spec : signature.weights) {
    weights_[spec.name] = f.argument(spec.name, TensorType(spec.element, spec.shape));
  }
  for (const TensorSpec& spec : signature.caches) {
    cache_index_[spec.name] = caches_.size();
    caches_.push_back(f.argument(spec.name, type_of(spec)));
  }
  new_caches_ = caches_;

  const bool prefill = prefills(options.kind);
  sequences_ = prefill ? options.sequences : options.bucket;
  tokens_ = prefill ? options.bucket * sequences_ : options.bucket;
  per_sequence_ = tokens_ / sequences_;
  token_ids_ = inputs_.at("tokens");
  if (prefill) {
    // Positions start .. start + bucket - 1 of each sequence; keys at or beyond its start +
    // valid_length are masked.
    std::vector<PrefillChunkRows> chunks;
    std::vector<Value> chunk_positions, ends;
    for (int64_t s = 0; s < sequences_; ++s) {
      PrefillChunkRows chunk{of_sequence("slot", s), of_sequence("start", s),
                             of_sequence("valid_length", s)};
      chunk_positions.push_back(iota(b, TensorType(ElementType::kI32, {per_sequence_}), 0) +
                                broadcast_in_dim(chunk.start, {per_sequence_}, {}));
      ends.push_back(reshape(chunk.start + chunk.valid_length, {1}));
      chunks.push_back(chunk);
    }
    positions_ = sequences_ == 1 ? chunk_positions[0] : concatenate(chunk_positions, 0);
    end_ = sequences_ == 1 ? ends[0] : concatenate(ends, 0);
    access_ = CacheAccess::prefill(std::move(chunks), per_sequence_, options.window);
    if (sequences_ > 1) token_ids_ = reshape(token_ids_, {tokens_});
    if (attends_images_whole(options, config)) sees_through_ = image_runs_end();
  } else {
    positions_ = inputs_.at("positions");
    access_ = CacheAccess::decode(positions_, options.window);
  }
  // Adjacent pairs turn where the attention says so, or where q/k rows are as GGUF interleaves
  // them.
  const AttentionOptions& attention = family.layer->attention().options();
  const bool interleaved = attention.interleaved_rope || config.qk_rows_interleaved;
  // cos/sin times the scaling's attention factor (LongRoPE's, YaRN's; 1 for the others).
  rope_ = rotary(positions_, weights_.at("rope_inv_freq"), interleaved,
                 config.rope_scaling.attention_factor);
  if (attention.local_rope) {
    local_rope_ = rotary(positions_, weights_.at("rope_local_inv_freq"), interleaved);
  }
}

// transformers' block mask of image tokens (Gemma 3's token_type_ids): a run of image tokens
// is one block, and a query in it also sees the block's later keys. Each query sees through the
// end of its run (the last j with as many text tokens at or before it: that count stays flat
// over a run), a text query through itself. The scheduler keeps each run inside one chunk.
Value DecoderGraph::image_runs_end() {
  Block& b = block();
  const TensorType rows(ElementType::kI32, {sequences_, per_sequence_});
  const TensorType pairs(ElementType::kI32, {sequences_, per_sequence_, per_sequence_});
  Value ids = reshape(token_ids_, rows.shape());
  Value image = compare(ids, constant(b, rows, static_cast<double>(config_.vision->image_token_id)),
                        Direction::kEQ);
  // text[s, t]: text tokens among rows 0..t of sequence s.
  Value is_text = convert(logical_not(image), ElementType::kI32);
  Value upto = compare(iota(b, pairs, 2), iota(b, pairs, 1), Direction::kLE);  // [s, t, j]: j <= t
  Value text = reduce_sum(
      select(upto, broadcast_in_dim(is_text, pairs.shape(), {0, 2}), constant(b, pairs, 0.0)), {2});
  Value same_or_less = compare(broadcast_in_dim(text, pairs.shape(), {0, 2}),
                               broadcast_in_dim(text, pairs.shape(), {0, 1}), Direction::kLE);
  Value run_end = reduce_sum(convert(same_or_less, ElementType::kI32), {2}) -
                  constant(b, rows, 1.0);  // the index of the run's last row
  Value positions = reshape(positions_, rows.shape());
  Value first = positions - iota(b, rows, 1);  // each sequence's start
  return select(image, first + run_end, positions);
}

// Sequence s's value of a prefill input (a scalar when the call has one sequence).
Value DecoderGraph::of_sequence(const char* name, int64_t s) {
  Value value = inputs_.at(name);
  if (sequences_ == 1) return value;
  return reshape(slice(value, {s}, {s + 1}), {});
}

Value DecoderGraph::layer_weight(int64_t layer, const std::string& name) const {
  return weights_.at(fmt::format("l{}_{}", layer, name));
}

std::optional<Value> DecoderGraph::optional_layer_weight(int64_t layer,
                                                         const std::string& name) const {
  auto found = weights_.find(fmt::format("l{}_{}", layer, name));
  if (found == weights_.end()) return std::nullopt;
  return found->second;
}

Weight DecoderGraph::matrix(const std::string& name) const {
  return resident_weight(weights_, name, options_.weights == WeightType::kAuto,
                         options_.planar_kernel());
}

Weight DecoderGraph::layer_matrix(int64_t layer, const std::string& name) const {
  return matrix(fmt::format("l{}_{}", layer, name));
}

Value DecoderGraph::norm_weight(Value scale) {
  if (family_.norm != NormKind::kRmsOnePlus) return scale;
  if (scale.element() != ElementType::kF32) scale = convert(scale, ElementType::kF32);
  return scale + constant(block(), scale.type(), 1.0);
}

Value DecoderGraph::norm(Value x, const std::string& name) {
  const double eps = config_.rms_norm_eps;
  switch (family_.norm) {
    case NormKind::kLayerNorm:
      return models::layer_norm(x, weights_.at(name), weights_.at(name + "_bias"), eps);
    case NormKind::kCohere:
      return cohere_layer_norm(x, weights_.at(name), eps);
    case NormKind::kRms:
    case NormKind::kRmsOnePlus:
      break;
  }
  return rms_norm(x, norm_weight(weights_.at(name)), eps);
}

Value DecoderGraph::layer_norm(int64_t layer, Value x, const std::string& name) {
  return norm(x, fmt::format("l{}_{}", layer, name));
}

Value DecoderGraph::scaled(Value x, double scale) {
  return scale == 1.0 ? x : x * constant(block(), x.type(), scale);
}

CacheRead DecoderGraph::update_cache(int64_t layer, Value k, Value v) {
  const std::size_t k_index = cache_index_.at(fmt::format("k_cache_{}", layer));
  const std::size_t v_index = cache_index_.at(fmt::format("v_cache_{}", layer));
  CacheUpdate cache = access_->update(caches_[k_index], caches_[v_index], k, v, options_.capacity);
  new_caches_[k_index] = cache.k_cache;
  new_caches_[v_index] = cache.v_cache;
  return cache.read;
}

Value DecoderGraph::recent_inputs(int64_t layer, Value x) {
  const std::size_t index = cache_index_.at(fmt::format("conv_cache_{}", layer));
  RecentInputs recent = access_->recent_inputs(caches_[index], x);
  new_caches_[index] = recent.cache;
  return recent.window;
}

std::optional<Value> DecoderGraph::valid_lengths() {
  if (!prefills(options_.kind)) return std::nullopt;
  Value valid = inputs_.at("valid_length");  // a scalar, or i32 [N] over several sequences
  return sequences_ == 1 ? reshape(valid, {1}) : valid;
}

Value DecoderGraph::state_before(int64_t layer) {
  const std::size_t index = cache_index_.at(fmt::format("ssm_cache_{}", layer));
  return access_->state_before(caches_[index]);
}

void DecoderGraph::store_state(int64_t layer, Value after) {
  const std::size_t index = cache_index_.at(fmt::format("ssm_cache_{}", layer));
  new_caches_[index] = access_->store_state(new_caches_[index], after);
}

Value DecoderGraph::query_positions() {
  return reshape(positions_, {sequences_, per_sequence_});
}

Value DecoderGraph::by_sequence(Value x) {
  std::vector<int64_t> shape = x.type().shape();
  shape.erase(shape.begin());
  shape.insert(shape.begin(), {sequences_, per_sequence_});
  return reshape(x, shape);
}

Value DecoderGraph::embed() {
  Value h = take_rows(matrix("embed_tokens"), token_ids_);  // f32 [T, hidden]
  h = scaled(h, family_.embedding_scale);
  if (!takes_image_embeddings(options_, config_)) return h;
  // The image tokens' rows are the vision tower's features, unscaled (transformers scatters
  // them into the scaled embeddings).
  Value images = inputs_.at("image_embeddings");
  if (sequences_ > 1) images = reshape(images, {tokens_, config_.hidden_size});
  const TensorType ids = token_ids_.type();
  Value is_image = compare(
      token_ids_, constant(block(), ids, static_cast<double>(config_.vision->image_token_id)),
      Direction::kEQ);
  return select(broadcast_in_dim(is_image, {tokens_, config_.hidden_size}, {0}), images, h);
}

EmittedGraph DecoderGraph::finish(Value h) {
  if (options_.kind == GraphKind::kEmbed) {
    Value hidden = norm(h, "final_norm");  // [sequences x bucket, hidden]
    if (sequences_ > 1) hidden = reshape(hidden, {sequences_, per_sequence_, config_.hidden_size});
    return finish_with({{"hidden", hidden}});
  }
  const ModelConfig& c = config_;
  Block& b = block();
  const bool prefill = options_.kind == GraphKind::kPrefill;
  const bool verify = options_.kind == GraphKind::kVerify;
  const TensorType scalar_i32(ElementType::kI32, {});
  // Logits: prefill's last valid token of each sequence; every row for decode and verify.
  Value last = h;
  if (prefill && tokens_ > 1) {
    std::vector<Value> lasts;
    for (int64_t s = 0; s < sequences_; ++s) {
      Value row = of_sequence("valid_length", s) +
                  constant(b, scalar_i32, static_cast<double>(s * per_sequence_ - 1));
      lasts.push_back(dynamic_slice(h, {row, constant(b, scalar_i32, 0.0)}, {1, c.hidden_size}));
    }
    last = sequences_ == 1 ? lasts[0] : concatenate(lasts, 0);
  }
  last = norm(last, "final_norm");
  Value logits = linear(last, matrix(c.tie_word_embeddings ? "embed_tokens" : "lm_head"));
  const LogitTransform& transform = family_.logits;
  if (transform.divisor != 1.0) logits = logits / constant(b, logits.type(), transform.divisor);
  if (transform.multiplier != 1.0) {
    logits = logits * constant(b, logits.type(), transform.multiplier);
  }
  if (transform.softcap) logits = softcap(logits, *transform.softcap);
  // Prefill returns the logits and their argmax. Fused into one dispatch, IREE's llvm-cpu keeps
  // the whole transformed row on the stack (vocab x 4 bytes: over its 32 KiB limit past 8192
  // tokens); the barrier has the transform write the logits and the argmax read them back, as
  // it does when no transform comes between the head and the argmax.
  if ((prefill || verify) && transform.any()) logits = optimization_barrier(logits);
  std::map<std::string, Value> produced;
  if (verify) {
    Value next = argmax(logits, 1).indices;  // [sequences x bucket]
    produced["next_tokens"] = sequences_ == 1 ? next : reshape(next, {sequences_, per_sequence_});
    return finish_with(produced);
  }
  if (prefill && sequences_ == 1) {
    logits = reshape(logits, {c.vocab_size});
    produced["logits"] = logits;
    produced["next_token"] = argmax(logits, 0).indices;
  } else if (prefill) {
    produced["logits"] = logits;
    produced["next_token"] = argmax(logits, 1).indices;
  } else if (options_.kind == GraphKind::kDecode) {
    produced["next_tokens"] = argmax(logits, 1).indices;
  } else {
    produced["logits"] = logits;
  }
  return finish_with(produced);
}

EmittedGraph DecoderGraph::finish_with(const std::map<std::string, Value>& produced) {
  const ModelConfig& c = config_;
  Function& f = *function_;
  std::vector<Value> results;
  for (const TensorSpec& spec : signature_.outputs) {
    Value value = produced.at(spec.name);
    if (value.type() != type_of(spec)) {
      build_fail("func.func", "@main: output {} is {} but the signature says {}", spec.name,
                 value.type().str(), type_of(spec).str());
    }
    results.push_back(value);
  }
  const auto first_cache = static_cast<int64_t>(results.size());
  for (size_t i = 0; i < new_caches_.size(); ++i) {
    f.alias_output(caches_[i], first_cache + static_cast<int64_t>(i));
    results.push_back(new_caches_[i]);
  }
  f.finish(results);
  annotate_shardings(module_, f, c, signature_, options_.tensor_parallel);
  EmittedGraph emitted = emitted_graph(module_);
  emitted.caches_read_to_length = caches_read_to_length_;
  return emitted;
}

EmittedGraph emit_decoder_graph(const ModelConfig& config, const DecoderFamily& family,
                                const GraphOptions& options, const GraphSignature& signature) {
  DecoderGraph graph(config, family, options, signature);
  Value h = graph.embed();
  for (int64_t layer = 0; layer < config.num_layers; ++layer) {
    h = family.layer->emit(graph, layer, h);
  }
  return graph.finish(h);
}

}  // namespace xlacel::models
