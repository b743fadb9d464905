#include "models/graph_signature.h"

#include "common/error.h"

namespace xlacel::models {

using stablehlo::ElementType;

namespace {

// A prefill value's shape: one sequence's, led by the sequence count where there are several.
std::vector<int64_t> per_sequence(const GraphOptions& options, std::vector<int64_t> shape = {}) {
  if (options.sequences > 1) shape.insert(shape.begin(), options.sequences);
  return shape;
}

}  // namespace

bool takes_image_embeddings(const GraphOptions& options, const ModelConfig& config) {
  return options.kind == GraphKind::kPrefill && config.vision.has_value();
}

bool attends_images_whole(const GraphOptions& options, const ModelConfig& config) {
  return takes_image_embeddings(options, config) &&
         config.vision->projector == VisionProjector::kGemma3AvgPool;
}

std::vector<TensorSpec> graph_inputs(const GraphOptions& options, const ModelConfig& config) {
  const int64_t bucket = options.bucket;
  if (prefills(options.kind)) {
    const std::vector<int64_t> each = per_sequence(options);
    std::vector<TensorSpec> inputs = {
        {"tokens", ElementType::kI32, per_sequence(options, {bucket})},
        {"slot", ElementType::kI32, each},
        {"start", ElementType::kI32, each},
        {"valid_length", ElementType::kI32, each}};
    if (takes_image_embeddings(options, config)) {
      inputs.push_back({"image_embeddings", ElementType::kF32,
                        per_sequence(options, {bucket, config.hidden_size})});
    }
    return inputs;
  }
  if (options.kind == GraphKind::kCopySlot) {
    return {{"from", ElementType::kI32, {}}, {"to", ElementType::kI32, {}}};
  }
  if (options.kind == GraphKind::kSaveSlot || options.kind == GraphKind::kRestoreSlot) {
    return {{"slot", ElementType::kI32, {}}};
  }
  return {{"tokens", ElementType::kI32, {bucket}}, {"positions", ElementType::kI32, {bucket}}};
}

std::vector<TensorSpec> graph_outputs(const GraphOptions& options, const ModelConfig& config) {
  const int64_t vocab_size = config.vocab_size;
  switch (options.kind) {
    case GraphKind::kPrefill:
      return {{"next_token", ElementType::kI32, per_sequence(options)},
              {"logits", ElementType::kF32, per_sequence(options, {vocab_size})}};
    case GraphKind::kDecode:
      return {{"next_tokens", ElementType::kI32, {options.bucket}}};
    case GraphKind::kDecodeLogits:
      return {{"logits", ElementType::kF32, {options.bucket, vocab_size}}};
    case GraphKind::kVerify:
      return {{"next_tokens", ElementType::kI32, per_sequence(options, {options.bucket})}};
    case GraphKind::kEmbed:
      return {{"hidden", ElementType::kF32,
               per_sequence(options, {options.bucket, config.hidden_size})}};
    case GraphKind::kCopySlot:
    case GraphKind::kSaveSlot:  // its rows' specs follow from the caches (slot_rows_specs)
    case GraphKind::kRestoreSlot:
      return {};
  }
  return {};
}

void check_graph_options(const ModelConfig& config, const GraphOptions& options) {
  const std::string where = graph_name(options);
  if (options.bucket < 1) fail(where, "bucket must be at least 1 (got {})", options.bucket);
  if (options.slots < 1) fail(where, "slots must be at least 1 (got {})", options.slots);
  if (options.capacity < 1) fail(where, "capacity must be at least 1 (got {})", options.capacity);
  if (config.rope_scaling.type == RopeScaling::Type::kLongRope &&
      options.capacity > config.exact_positions()) {
    fail(where,
         "capacity {} is past original_max_position_embeddings {}: xlacel runs LongRoPE's short "
         "factors only, exact up to there (transformers switches to long_factor past it)",
         options.capacity, config.exact_positions());
  }
  if (options.sequences < 1 || (!prefills(options.kind) && options.sequences != 1)) {
    fail(where, "sequences must be 1, or more for a prefill, embed or verify (got {})",
         options.sequences);
  }
  if (options.sequences > options.slots) {
    fail(where, "{} sequences do not fit the {} slots", options.sequences, options.slots);
  }
  if (prefills(options.kind) && options.bucket > options.capacity) {
    fail(where, "bucket ({}) exceeds the KV-cache capacity ({})", options.bucket, options.capacity);
  }
  if (!prefills(options.kind) && options.bucket > options.slots) {
    fail(where, "decode bucket ({}) exceeds the slots ({}): row b runs slot b", options.bucket,
         options.slots);
  }
  if (options.window < 0 || options.window > options.capacity) {
    fail(where, "window ({}) is not in [0, capacity {}]", options.window, options.capacity);
  }
  if (prefills(options.kind) && options.window != 0 && options.window < options.bucket) {
    fail(where, "prefill window ({}) is shorter than the bucket ({})", options.window,
         options.bucket);
  }
  if (config.max_position_embeddings > 0 && options.capacity > config.max_position_embeddings) {
    fail(where, "capacity ({}) exceeds the model's max_position_embeddings ({})", options.capacity,
         config.max_position_embeddings);
  }
}

}  // namespace xlacel::models
