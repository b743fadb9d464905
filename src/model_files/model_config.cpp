#include "model_files/model_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string_view>
#include <tuple>
#include <utility>
#include <variant>

#include "common/error.h"
#include "model_files/gguf_file.h"

namespace xlacel {

namespace {

int64_t json_int(const Json& object, const char* key, const std::string& path) {
  if (!object.contains(key)) fail(path, "missing field '{}'", key);
  const Json& value = object[key];
  if (!value.is_number_integer()) fail(path, "field '{}' must be an integer", key);
  return value.get<int64_t>();
}

std::optional<int64_t> json_optional_int(const Json& object, const char* key,
                                         const std::string& path) {
  if (!object.contains(key) || object[key].is_null()) return std::nullopt;
  return json_int(object, key, path);
}

double json_number(const Json& object, const char* key, const std::string& path) {
  if (!object.contains(key)) fail(path, "missing field '{}'", key);
  if (!object[key].is_number()) fail(path, "field '{}' must be a number", key);
  return object[key].get<double>();
}

// eos_token_id is an int or a list of ints in both config.json and generation_config.json.
std::vector<int64_t> json_id_list(const Json& value, const char* key, const std::string& path) {
  std::vector<int64_t> ids;
  if (value.is_number_integer()) {
    ids.push_back(value.get<int64_t>());
  } else if (value.is_array()) {
    for (const Json& item : value) {
      if (!item.is_number_integer()) fail(path, "field '{}' must hold integers", key);
      ids.push_back(item.get<int64_t>());
    }
  } else if (!value.is_null()) {
    fail(path, "field '{}' must be an integer or a list of integers", key);
  }
  return ids;
}

std::optional<double> json_optional_number(const Json& object, const char* key,
                                           const std::string& path) {
  if (!object.contains(key) || object[key].is_null()) return std::nullopt;
  return json_number(object, key, path);
}

// gpt-oss's layer pattern: sliding and full attention alternating from a sliding layer 0.
std::vector<std::string> alternating_sliding_layers(int64_t layers) {
  std::vector<std::string> types;
  for (int64_t layer = 0; layer < layers; ++layer) {
    types.push_back(layer % 2 == 0 ? "sliding_attention" : "full_attention");
  }
  return types;
}

// true for layers interval-1, 2*interval-1, ...: every interval-th layer.
std::vector<bool> every_nth_layer(int64_t layers, int64_t interval) {
  std::vector<bool> marked;
  for (int64_t layer = 0; layer < layers; ++layer) marked.push_back((layer + 1) % interval == 0);
  return marked;
}

// A number that transformers' config class defaults to `absent` when the key is missing (an
// explicit null stays null).
std::optional<double> json_number_or(const Json& object, const char* key, const std::string& path,
                                     std::optional<double> absent) {
  if (!object.contains(key)) return absent;
  return json_optional_number(object, key, path);
}

// transformers' get_mscale: the YaRN attention factor of a scale.
double yarn_mscale(double scale, double mscale = 1.0) {
  return scale <= 1.0 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

// _compute_yarn_parameters' inputs: the factor, the original context (yarn_defaults), beta_fast /
// beta_slow (32 and 1 when absent or 0), `truncate` (default true), and the attention factor:
// given, or get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim) where both are given,
// else get_mscale(factor).
RopeScaling yarn_scaling(const Json& rope, const std::string& path) {
  RopeScaling scaling;
  scaling.type = RopeScaling::Type::kYarn;
  scaling.factor = json_number(rope, "factor", path);
  // Absent (0 here): the config's (yarn_defaults).
  scaling.original_max_position_embeddings =
      json_optional_int(rope, "original_max_position_embeddings", path).value_or(0);
  for (auto [name, field, fallback] : {std::tuple{"beta_fast", &scaling.beta_fast, 32.0},
                                       std::tuple{"beta_slow", &scaling.beta_slow, 1.0}}) {
    const double value = json_optional_number(rope, name, path).value_or(0.0);
    *field = value != 0.0 ? value : fallback;  // Python's `or`
  }
  if (rope.contains("truncate") && rope["truncate"].is_boolean()) {
    scaling.truncate = rope["truncate"].get<bool>();
  }
  const auto mscale = json_optional_number(rope, "mscale", path);
  const auto mscale_all_dim = json_optional_number(rope, "mscale_all_dim", path);
  if (auto given = json_optional_number(rope, "attention_factor", path)) {
    scaling.attention_factor = *given;
  } else if (mscale && *mscale != 0.0 && mscale_all_dim && *mscale_all_dim != 0.0) {
    scaling.attention_factor =
        yarn_mscale(scaling.factor, *mscale) / yarn_mscale(scaling.factor, *mscale_all_dim);
  } else {
    scaling.attention_factor = yarn_mscale(scaling.factor);
  }
  return scaling;
}

// One RoPE parameter object ({rope_type, rope_theta, factor, ...}): sets `rope_theta` when it
// holds one and returns its scaling.
RopeScaling rope_scaling_from(const Json& rope, const std::string& key, double& rope_theta,
                              const std::string& path) {
  RopeScaling scaling;
  if (!rope.is_object()) fail(path, "field '{}' must be an object", key);
  if (rope.contains("rope_theta")) rope_theta = json_number(rope, "rope_theta", path);
  std::string type = "default";
  for (const char* type_key : {"rope_type", "type"}) {
    if (rope.contains(type_key) && rope[type_key].is_string()) {
      type = rope[type_key].get<std::string>();
      break;
    }
  }
  if (type == "default") return scaling;
  if (type == "linear") {
    scaling.type = RopeScaling::Type::kLinear;
    scaling.factor = json_number(rope, "factor", path);
    return scaling;
  }
  if (type == "longrope" || type == "su") {
    scaling.type = RopeScaling::Type::kLongRope;
    if (!rope.contains("short_factor") || !rope["short_factor"].is_array()) {
      fail(path, "{} longrope needs a list 'short_factor'", key);
    }
    for (const Json& item : rope["short_factor"]) {
      if (!item.is_number()) fail(path, "{}.short_factor must hold numbers", key);
      scaling.short_factor.push_back(item.get<double>());
    }
    if (auto original = json_optional_int(rope, "original_max_position_embeddings", path)) {
      scaling.original_max_position_embeddings = *original;
    }
    // Absent (0 here): derived from the config as transformers does (longrope_defaults).
    scaling.factor = json_optional_number(rope, "factor", path).value_or(0.0);
    scaling.attention_factor = json_optional_number(rope, "attention_factor", path).value_or(0.0);
    return scaling;
  }
  if (type == "yarn") return yarn_scaling(rope, path);
  if (type != "llama3") {
    fail(path, "{} type '{}' is not supported (supported: default, linear, llama3, longrope, yarn)",
         key, type);
  }
  scaling.type = RopeScaling::Type::kLlama3;
  scaling.factor = json_number(rope, "factor", path);
  scaling.low_freq_factor = json_number(rope, "low_freq_factor", path);
  scaling.high_freq_factor = json_number(rope, "high_freq_factor", path);
  scaling.original_max_position_embeddings =
      json_int(rope, "original_max_position_embeddings", path);
  return scaling;
}

// transformers 5 writes `rope_parameters` (rope_theta inside it; per layer type for Gemma 3:
// {"full_attention": {...}, "sliding_attention": {...}}); older configs carry a top-level
// rope_theta (rope_local_base_freq for Gemma 3's sliding layers) and an optional `rope_scaling`
// (of the full-attention layers). Either form is read.
void rope_from_hf(const Json& config, ModelConfig& result, const std::string& path) {
  const char* key = config.contains("rope_parameters") && !config["rope_parameters"].is_null()
                        ? "rope_parameters"
                        : "rope_scaling";
  if (config.contains("rope_theta")) result.rope_theta = json_number(config, "rope_theta", path);
  if (config.contains("rope_local_base_freq")) {
    result.rope_local_theta = json_number(config, "rope_local_base_freq", path);
  }
  if (!config.contains(key) || config[key].is_null()) return;
  const Json& rope = config[key];
  if (rope.is_object() && (rope.contains("full_attention") || rope.contains("sliding_attention"))) {
    for (const char* type : {"full_attention", "sliding_attention"}) {
      if (!rope.contains(type)) continue;
      const bool full = std::string_view(type) == "full_attention";
      RopeScaling scaling =
          rope_scaling_from(rope[type], fmt::format("{}.{}", key, type),
                            full ? result.rope_theta : result.rope_local_theta, path);
      (full ? result.rope_scaling : result.rope_local_scaling) = scaling;
    }
    return;
  }
  result.rope_scaling = rope_scaling_from(rope, key, result.rope_theta, path);
}

// SmolLM3Config: no_rope_layers[l] is 1 where layer l applies RoPE; absent, every
// no_rope_layer_interval-th layer (default 4) skips it, as llama.cpp always does.
std::vector<bool> smollm3_rope_skipped(const Json& config, const ModelConfig& result,
                                       const std::string& path) {
  std::vector<bool> skipped;
  if (config.contains("no_rope_layers") && !config["no_rope_layers"].is_null()) {
    const Json& list = config["no_rope_layers"];
    if (!list.is_array() || static_cast<int64_t>(list.size()) != result.num_layers) {
      fail(path, "field 'no_rope_layers' must list 0 or 1 per layer ({})", result.num_layers);
    }
    for (const Json& item : list) {
      if (!item.is_number_integer() || (item.get<int64_t>() != 0 && item.get<int64_t>() != 1)) {
        fail(path, "field 'no_rope_layers' must list 0 or 1 per layer ({})", result.num_layers);
      }
      skipped.push_back(item.get<int64_t>() == 0);
    }
    return skipped;
  }
  const int64_t interval = json_optional_int(config, "no_rope_layer_interval", path).value_or(4);
  if (interval <= 0) fail(path, "no_rope_layer_interval must be positive, got {}", interval);
  return every_nth_layer(result.num_layers, interval);
}

// _compute_longrope_parameters: original_max_position_embeddings from the config where the
// RoPE parameters lack it; factor max_position_embeddings / original when absent; the
// attention factor sqrt(1 + ln(factor) / ln(original)) (1 for factor <= 1) when absent.
void longrope_defaults(const Json& config, ModelConfig& result, const std::string& path) {
  RopeScaling& s = result.rope_scaling;
  if (s.type != RopeScaling::Type::kLongRope) return;
  if (s.original_max_position_embeddings == 0) {
    s.original_max_position_embeddings =
        json_optional_int(config, "original_max_position_embeddings", path).value_or(0);
  }
  if (s.original_max_position_embeddings <= 0) {
    fail(path, "longrope needs original_max_position_embeddings");
  }
  const auto original = static_cast<double>(s.original_max_position_embeddings);
  if (s.factor == 0.0) s.factor = static_cast<double>(result.max_position_embeddings) / original;
  if (s.attention_factor == 0.0) {
    s.attention_factor =
        s.factor <= 1.0 ? 1.0 : std::sqrt(1.0 + std::log(s.factor) / std::log(original));
  }
  if (static_cast<int64_t>(s.short_factor.size()) != result.rope_dims() / 2) {
    fail(path, "longrope short_factor has {} values, expected rotary dims / 2 = {}",
         s.short_factor.size(), result.rope_dims() / 2);
  }
}

// standardize_rope_params for YaRN: a top-level original_max_position_embeddings wins over the
// RoPE parameters' own, and max_position_embeddings stands in where neither has one.
void yarn_defaults(const Json& config, ModelConfig& result, const std::string& path) {
  RopeScaling& s = result.rope_scaling;
  if (s.type != RopeScaling::Type::kYarn) return;
  if (auto original = json_optional_int(config, "original_max_position_embeddings", path)) {
    s.original_max_position_embeddings = *original;
  }
  if (s.original_max_position_embeddings == 0) {
    s.original_max_position_embeddings = result.max_position_embeddings;
  }
  if (s.original_max_position_embeddings <= 0) {
    fail(path, "yarn's original_max_position_embeddings must be positive");
  }
}

bool is_gemma2(const ModelConfig& c) {
  return c.architecture == "gemma2";
}
bool is_gemma3(const ModelConfig& c) {
  return c.architecture == "gemma3_text" || c.architecture == "gemma3";
}

// What transformers' Gemma2Config / Gemma3TextConfig supply when a value is absent (a GGUF file
// carries none of these but the window): the attention scalar, the window and the layer
// pattern (every `pattern`-th layer global).
void gemma_defaults(ModelConfig& c, int64_t pattern) {
  if (!is_gemma2(c) && !is_gemma3(c)) return;
  if (!c.query_pre_attn_scalar) c.query_pre_attn_scalar = 256;
  if (!c.sliding_window) c.sliding_window = 4096;
  if (c.layer_types.empty()) {
    for (int64_t i = 0; i < c.num_layers; ++i) {
      c.layer_types.push_back((i + 1) % pattern != 0 ? "sliding_attention" : "full_attention");
    }
  }
}

// config.json's layer_types, each one of `kinds` (the two attention kinds, or LFM2's).
std::vector<std::string> layer_types_from_hf(const Json& config, int64_t layers,
                                             const std::string& path,
                                             std::pair<const char*, const char*> kinds = {
                                                 "sliding_attention", "full_attention"}) {
  std::vector<std::string> types;
  if (!config.contains("layer_types") || config["layer_types"].is_null()) return types;
  const Json& list = config["layer_types"];
  if (!list.is_array() || static_cast<int64_t>(list.size()) != layers) {
    fail(path, "field 'layer_types' must list one type per layer ({})", layers);
  }
  for (const Json& item : list) {
    if (!item.is_string() ||
        (item.get<std::string>() != kinds.first && item.get<std::string>() != kinds.second)) {
      fail(path, "field 'layer_types' holds '{}' (supported: {}, {})", item.dump(), kinds.first,
           kinds.second);
    }
    types.push_back(item.get<std::string>());
  }
  return types;
}

// GptOssConfig: every layer a mixture (num_local_experts of intermediate_size, top
// num_experts_per_tok by the router's logits), sliding (window 128) and full attention
// alternating from layer 0, biases on q/k/v/o (attention_bias, default true), YaRN by default
// (factor 32 over 4096, untruncated), an untied head, the clamped SwiGLU's alpha and limit.
void gpt_oss_from_hf(const Json& config, ModelConfig& result, const std::string& path) {
  result.num_experts = json_int(config, "num_local_experts", path);
  result.experts_per_token = json_int(config, "num_experts_per_tok", path);
  result.expert_intermediate_size = result.intermediate_size;
  result.sliding_window = json_optional_int(config, "sliding_window", path).value_or(128);
  result.layer_types = layer_types_from_hf(config, result.num_layers, path);
  if (result.layer_types.empty())
    result.layer_types = alternating_sliding_layers(result.num_layers);
  const bool bias = !config.contains("attention_bias") || !config["attention_bias"].is_boolean() ||
                    config["attention_bias"].get<bool>();
  result.attention_bias = bias;
  result.linear_bias = bias;  // o_proj's
  if (!config.contains("rope_parameters") && !config.contains("rope_scaling")) {
    RopeScaling& s = result.rope_scaling;
    s.type = RopeScaling::Type::kYarn;
    s.factor = 32.0;
    s.original_max_position_embeddings = 4096;
    s.truncate = false;
    s.attention_factor = yarn_mscale(s.factor);
  }
  if (!config.contains("rope_theta") && !config.contains("rope_parameters")) {
    result.rope_theta = 150000.0;
  }
  result.swiglu_alpha = json_optional_number(config, "swiglu_alpha", path).value_or(1.702);
  result.swiglu_limit = json_optional_number(config, "swiglu_limit", path).value_or(7.0);
}

// Lfm2Config: layer_types, or full_attn_idxs (the attention layers; the rest convolve; absent:
// all attention); the feed-forward width adjusted as Lfm2MLP does (2/3 of block_ff_dim, times
// block_ffn_dim_multiplier, rounded up to block_multiple_of); the head tied unless said
// otherwise (tie_embedding is the older key).
void lfm2_from_hf(const Json& config, ModelConfig& result, const std::string& path) {
  result.layer_types =
      layer_types_from_hf(config, result.num_layers, path, {"conv", "full_attention"});
  if (result.layer_types.empty()) {
    result.layer_types.assign(static_cast<size_t>(result.num_layers), "full_attention");
    if (config.contains("full_attn_idxs") && !config["full_attn_idxs"].is_null()) {
      result.layer_types.assign(static_cast<size_t>(result.num_layers), "conv");
      for (int64_t layer : json_id_list(config["full_attn_idxs"], "full_attn_idxs", path)) {
        if (layer < 0 || layer >= result.num_layers) {
          fail(path, "field 'full_attn_idxs' names layer {} of {}", layer, result.num_layers);
        }
        result.layer_types[static_cast<size_t>(layer)] = "full_attention";
      }
    }
  }
  result.conv_kernel = json_optional_int(config, "conv_L_cache", path).value_or(3);
  result.conv_bias = config.contains("conv_bias") && config["conv_bias"].is_boolean() &&
                     config["conv_bias"].get<bool>();
  if (auto width = json_optional_int(config, "block_ff_dim", path)) {
    result.intermediate_size = *width;
  }
  const bool adjust = !config.contains("block_auto_adjust_ff_dim") ||
                      !config["block_auto_adjust_ff_dim"].is_boolean() ||
                      config["block_auto_adjust_ff_dim"].get<bool>();
  if (adjust) {
    auto width = static_cast<int64_t>(2.0 * static_cast<double>(result.intermediate_size) / 3.0);
    if (!config.contains("block_ffn_dim_multiplier") ||
        !config["block_ffn_dim_multiplier"].is_null()) {
      const double multiplier =
          json_optional_number(config, "block_ffn_dim_multiplier", path).value_or(1.0);
      const int64_t multiple = json_optional_int(config, "block_multiple_of", path).value_or(256);
      if (multiple <= 0) fail(path, "block_multiple_of must be positive, got {}", multiple);
      width = static_cast<int64_t>(multiplier * static_cast<double>(width));
      width = multiple * ((width + multiple - 1) / multiple);
    }
    result.intermediate_size = width;
  }
  result.tie_word_embeddings = true;
  for (const char* key : {"tie_word_embeddings", "tie_embedding"}) {
    if (config.contains(key) && config[key].is_boolean()) {
      result.tie_word_embeddings = config[key].get<bool>();
    }
  }
}

bool json_bool_or(const Json& object, const char* key, bool fallback, const std::string& path) {
  if (!object.contains(key) || object[key].is_null()) return fallback;
  if (!object[key].is_boolean()) fail(path, "field '{}' must be a boolean", key);
  return object[key].get<bool>();
}

// GraniteMoeHybridConfig (Granite 4.0-H): layer_types (its older name layers_block_type) of
// "mamba" and "attention" as published, or transformers' own "linear_attention" and
// "full_attention" as it saves them; the Mamba-2 mixer's mamba_* fields with the config class's
// defaults (mamba_d_head "auto": the inner width over the heads); attention without RoPE unless
// position_embedding_type is "rope"; a shared MLP of shared_intermediate_size on every layer,
// beside num_local_experts experts of intermediate_size where there are any (the dense variant
// is that shared MLP alone).
void granite_hybrid_from_hf(const Json& config, ModelConfig& result, const std::string& path) {
  const char* types_key = config.contains("layer_types") ? "layer_types" : "layers_block_type";
  if (!config.contains(types_key) || !config[types_key].is_array() ||
      static_cast<int64_t>(config[types_key].size()) != result.num_layers) {
    fail(path, "field 'layer_types' must list one type per layer ({})", result.num_layers);
  }
  for (const Json& item : config[types_key]) {
    const std::string type = item.is_string() ? item.get<std::string>() : item.dump();
    if (type == "mamba" || type == "linear_attention") {
      result.layer_types.push_back("mamba");
    } else if (type == "attention" || type == "full_attention") {
      result.layer_types.push_back("full_attention");
    } else {
      fail(path, "field 'layer_types' holds '{}' (supported: mamba, attention)", type);
    }
  }
  result.ssm_heads = json_optional_int(config, "mamba_n_heads", path).value_or(128);
  const int64_t expand = json_optional_int(config, "mamba_expand", path).value_or(2);
  const int64_t inner = expand * result.hidden_size;
  if (config.contains("mamba_d_head") && config["mamba_d_head"].is_string()) {
    if (config["mamba_d_head"].get<std::string>() != "auto") {
      fail(path, "field 'mamba_d_head' must be an integer or \"auto\"");
    }
  } else if (auto head = json_optional_int(config, "mamba_d_head", path)) {
    result.ssm_head_dim = *head;
  }
  if (result.ssm_head_dim == 0 && result.ssm_heads > 0)
    result.ssm_head_dim = inner / result.ssm_heads;
  if (result.ssm_inner() != inner) {
    fail(path, "mamba_n_heads ({}) x mamba_d_head ({}) must be mamba_expand x hidden_size ({})",
         result.ssm_heads, result.ssm_head_dim, inner);
  }
  result.ssm_state = json_optional_int(config, "mamba_d_state", path).value_or(256);
  result.ssm_groups = json_optional_int(config, "mamba_n_groups", path).value_or(1);
  result.conv_kernel = json_optional_int(config, "mamba_d_conv", path).value_or(4);
  result.conv_bias = json_bool_or(config, "mamba_conv_bias", true, path);
  result.ssm_proj_bias = json_bool_or(config, "mamba_proj_bias", false, path);
  const bool rope = config.contains("position_embedding_type") &&
                    config["position_embedding_type"] == Json("rope");
  if (!rope) result.rope_skipped.assign(static_cast<size_t>(result.num_layers), true);
  const int64_t shared = json_optional_int(config, "shared_intermediate_size", path).value_or(1024);
  result.num_experts = json_optional_int(config, "num_local_experts", path).value_or(8);
  if (result.num_experts > 0) {
    result.experts_per_token = json_optional_int(config, "num_experts_per_tok", path).value_or(2);
    result.expert_intermediate_size = result.intermediate_size;
    result.shared_expert_intermediate_size = shared;
  } else {
    result.intermediate_size = shared;
  }
}

// llama.cpp's Granite 4.0-H (granitehybrid): the Mamba-2 mixer under ssm.* (time_step_rank is
// the head count), biases found by their tensors, attention without RoPE unless
// rope.scaling.finetuned says otherwise (the converter's flag for Bamba's RoPE), and the shared
// MLP's width; without experts that MLP is the whole feed-forward block.
void granite_hybrid_from_gguf(const GgufFile& gguf, ModelConfig& result) {
  const std::string prefix = result.architecture + ".";
  result.ssm_heads = gguf.get_int(prefix + "ssm.time_step_rank");
  const int64_t inner = gguf.get_int(prefix + "ssm.inner_size");
  result.ssm_head_dim = result.ssm_heads > 0 ? inner / result.ssm_heads : 0;
  result.ssm_state = gguf.get_int(prefix + "ssm.state_size");
  result.ssm_groups = gguf.get_int(prefix + "ssm.group_count");
  result.conv_kernel = gguf.get_int(prefix + "ssm.conv_kernel");
  for (int64_t layer = 0; layer < result.num_layers; ++layer) {
    if (!result.is_mamba_layer(layer)) continue;
    result.conv_bias = gguf.find_tensor(fmt::format("blk.{}.ssm_conv1d.bias", layer)).has_value();
    result.ssm_proj_bias = gguf.find_tensor(fmt::format("blk.{}.ssm_in.bias", layer)).has_value();
    break;
  }
  const std::string rope_key = prefix + "rope.scaling.finetuned";
  if (!gguf.has(rope_key) || !gguf.get_bool(rope_key)) {
    result.rope_skipped.assign(static_cast<size_t>(result.num_layers), true);
  }
  const std::string shared_key = prefix + "expert_shared_feed_forward_length";
  const int64_t shared = gguf.has(shared_key) ? gguf.get_int(shared_key) : 0;
  if (result.num_experts > 0) {
    result.shared_expert_intermediate_size = shared;
  } else if (shared > 0) {
    result.intermediate_size = shared;
  }
}

// transformers saves a model's nested text_config as its difference from the config class's
// defaults (Gemma 3 4B's names only 5 keys): the sizes it leaves out are the class's, filled in
// here for the decoders of the vision-language models xlacel runs (Gemma3TextConfig and
// LlamaConfig, transformers 5.23).
void text_config_defaults(Json& text) {
  using Defaults = std::initializer_list<std::pair<const char*, Json>>;
  const std::string type =
      text["model_type"].is_string() ? text["model_type"].get<std::string>() : "";
  Defaults gemma3 = {{"vocab_size", 262208},      {"hidden_size", 2304},
                     {"intermediate_size", 9216}, {"num_hidden_layers", 26},
                     {"num_attention_heads", 8},  {"num_key_value_heads", 4},
                     {"head_dim", 256},           {"max_position_embeddings", 131072},
                     {"rms_norm_eps", 1e-6}};
  Defaults llama = {{"vocab_size", 32000},        {"hidden_size", 4096},
                    {"intermediate_size", 11008}, {"num_hidden_layers", 32},
                    {"num_attention_heads", 32},  {"max_position_embeddings", 2048},
                    {"rms_norm_eps", 1e-6}};
  const Defaults* defaults = type == "gemma3_text" ? &gemma3 : type == "llama" ? &llama : nullptr;
  if (defaults == nullptr) return;
  for (const auto& [key, value] : *defaults) {
    if (!text.contains(key) || text[key].is_null()) text[key] = value;
  }
}

}  // namespace

const char* rope_scaling_name(RopeScaling::Type type) {
  switch (type) {
    case RopeScaling::Type::kNone:
      return "default";
    case RopeScaling::Type::kLlama3:
      return "llama3";
    case RopeScaling::Type::kFrequencyFactors:
      return "frequency factors (rope_freqs.weight)";
    case RopeScaling::Type::kLinear:
      return "linear";
    case RopeScaling::Type::kLongRope:
      return "longrope";
    case RopeScaling::Type::kYarn:
      return "yarn";
  }
  return "?";
}

ModelConfig config_from_hf(const Json& config, const Json* generation_config,
                           const std::string& path) {
  if (!config.is_object()) fail(path, "config is not a JSON object");
  // A vision-language model (Idefics3, SmolVLM, Gemma 3) nests its decoder's config under
  // text_config; the ids generation stops at and whether the head is tied are the outer
  // config's where it gives them (transformers reads them there).
  if (config.contains("text_config")) {
    if (!config["text_config"].is_object() || !config["text_config"].contains("model_type")) {
      fail(path, "text_config must be an object with a 'model_type'");
    }
    Json text = config["text_config"];
    for (const char* key : {"tie_word_embeddings", "eos_token_id", "bos_token_id"}) {
      if (config.contains(key)) text[key] = config[key];
    }
    text_config_defaults(text);
    ModelConfig result = config_from_hf(text, generation_config, path + ": text_config");
    result.vision = read_vision_config(config, path);
    return result;
  }
  ModelConfig result;
  if (!config.contains("model_type") || !config["model_type"].is_string()) {
    fail(path, "missing field 'model_type'");
  }
  result.architecture = config["model_type"].get<std::string>();

  result.vocab_size = json_int(config, "vocab_size", path);
  result.hidden_size = json_int(config, "hidden_size", path);
  result.intermediate_size = result.architecture == "lfm2" && config.contains("block_ff_dim")
                                 ? json_int(config, "block_ff_dim", path)
                                 : json_int(config, "intermediate_size", path);
  result.num_layers = json_int(config, "num_hidden_layers", path);
  result.num_heads = json_int(config, "num_attention_heads", path);
  result.num_kv_heads =
      json_optional_int(config, "num_key_value_heads", path).value_or(result.num_heads);
  auto head_dim = json_optional_int(config, "head_dim", path);
  result.head_dim =
      head_dim ? *head_dim : (result.num_heads > 0 ? result.hidden_size / result.num_heads : 0);
  result.max_position_embeddings = json_int(config, "max_position_embeddings", path);
  // LayerNorm families name their epsilon otherwise (StableLM, Starcoder2).
  const char* eps_key = "rms_norm_eps";
  for (const char* key : {"layer_norm_eps", "norm_epsilon", "norm_eps"}) {
    if (!config.contains(eps_key) && config.contains(key)) eps_key = key;
  }
  result.rms_norm_eps = json_number(config, eps_key, path);
  // Gemma3TextConfig's global base, and Lfm2Config's.
  if (is_gemma3(result) || result.architecture == "lfm2") result.rope_theta = 1000000.0;
  rope_from_hf(config, result, path);
  // transformers' Llama, Mistral and Qwen2 configs default to an untied head.
  if (config.contains("tie_word_embeddings")) {
    if (!config["tie_word_embeddings"].is_boolean()) {
      fail(path, "field 'tie_word_embeddings' must be a boolean");
    }
    result.tie_word_embeddings = config["tie_word_embeddings"].get<bool>();
  }
  if (result.architecture == "qwen2") {
    result.attention_bias = true;
  } else if (config.contains("attention_bias")) {
    if (!config["attention_bias"].is_boolean()) {
      fail(path, "field 'attention_bias' must be a boolean");
    }
    result.attention_bias = config["attention_bias"].get<bool>();
  }
  result.bos_token_id = json_optional_int(config, "bos_token_id", path);
  result.pad_token_id = json_optional_int(config, "pad_token_id", path);
  if (config.contains("eos_token_id")) {
    result.eos_token_ids = json_id_list(config["eos_token_id"], "eos_token_id", path);
  }
  if (generation_config != nullptr && generation_config->is_object()) {
    const Json& generation = *generation_config;
    if (generation.contains("eos_token_id")) {
      auto ids = json_id_list(generation["eos_token_id"], "eos_token_id", path);
      if (!ids.empty()) result.eos_token_ids = ids;
    }
    if (generation.contains("bos_token_id") && generation["bos_token_id"].is_number_integer()) {
      result.bos_token_id = generation["bos_token_id"].get<int64_t>();
    }
  }

  // Other families' features.
  if (result.architecture == "qwen3" && config.contains("use_sliding_window") &&
      config["use_sliding_window"].is_boolean() && config["use_sliding_window"].get<bool>()) {
    fail(path, "use_sliding_window is not supported for qwen3");
  }
  if (is_gemma2(result) || is_gemma3(result)) {
    if (auto window = json_optional_int(config, "sliding_window", path)) {
      result.sliding_window = *window;
    }
    result.layer_types = layer_types_from_hf(config, result.num_layers, path);
    result.query_pre_attn_scalar = json_optional_number(config, "query_pre_attn_scalar", path);
    const bool gemma2 = is_gemma2(result);
    result.attn_logit_softcapping = json_number_or(config, "attn_logit_softcapping", path,
                                                   gemma2 ? std::optional(50.0) : std::nullopt);
    result.final_logit_softcapping = json_number_or(config, "final_logit_softcapping", path,
                                                    gemma2 ? std::optional(30.0) : std::nullopt);
    auto pattern = json_optional_int(config, "sliding_window_pattern", path);
    gemma_defaults(result, gemma2 ? 2 : pattern.value_or(6));
  }
  // Partial rotary: rope_parameters.partial_rotary_factor (transformers 5) or top-level.
  double partial = 1.0;
  for (const Json* holder :
       {&config, config.contains("rope_parameters") && config["rope_parameters"].is_object()
                     ? &config["rope_parameters"]
                     : nullptr}) {
    if (holder == nullptr) continue;
    if (auto factor = json_optional_number(*holder, "partial_rotary_factor", path)) {
      partial = *factor;
    }
  }
  result.rotary_dim = static_cast<int64_t>(static_cast<double>(result.head_dim) * partial);
  if (result.architecture == "smollm3")
    result.rope_skipped = smollm3_rope_skipped(config, result, path);
  longrope_defaults(config, result, path);
  yarn_defaults(config, result, path);
  if (result.architecture == "lfm2") lfm2_from_hf(config, result, path);
  if (result.architecture == "granitemoehybrid") granite_hybrid_from_hf(config, result, path);
  if (result.architecture == "stablelm") {
    result.attention_bias = config.contains("use_qkv_bias") &&
                            config["use_qkv_bias"].is_boolean() &&
                            config["use_qkv_bias"].get<bool>();
    for (const char* key : {"qk_layernorm", "use_parallel_residual"}) {
      if (config.contains(key) && config[key].is_boolean() && config[key].get<bool>()) {
        fail(path, "{} is not supported for stablelm", key);
      }
    }
  }
  if (result.architecture == "starcoder2") {
    // Starcoder2Config's use_bias (default true): every linear has a bias.
    const bool bias = !config.contains("use_bias") || !config["use_bias"].is_boolean() ||
                      config["use_bias"].get<bool>();
    result.attention_bias = bias;
    result.linear_bias = bias;
  }
  if (result.architecture == "cohere") {
    if (auto scale = json_optional_number(config, "logit_scale", path)) result.logit_scale = *scale;
    if (config.contains("use_qk_norm") && config["use_qk_norm"].is_boolean() &&
        config["use_qk_norm"].get<bool>()) {
      fail(path, "use_qk_norm is not supported for cohere");
    }
    // CohereConfig ties the head by default.
    if (!config.contains("tie_word_embeddings")) result.tie_word_embeddings = true;
  }
  // Mixture of experts (qwen3_moe, olmoe, mixtral), with transformers' config defaults.
  if (result.architecture == "gpt_oss") gpt_oss_from_hf(config, result, path);
  if (result.architecture == "qwen3_moe" || result.architecture == "olmoe" ||
      result.architecture == "mixtral") {
    const bool mixtral = result.architecture == "mixtral";
    // transformers writes num_local_experts for all three (an attribute_map alias).
    const char* experts_key =
        config.contains("num_local_experts") || mixtral ? "num_local_experts" : "num_experts";
    result.num_experts = json_int(config, experts_key, path);
    result.experts_per_token = json_int(config, "num_experts_per_tok", path);
    result.expert_intermediate_size = result.architecture == "qwen3_moe"
                                          ? json_int(config, "moe_intermediate_size", path)
                                          : result.intermediate_size;
    result.norm_topk_prob =
        mixtral || (config.contains("norm_topk_prob") && config["norm_topk_prob"].is_boolean() &&
                    config["norm_topk_prob"].get<bool>());
    if (auto step = json_optional_int(config, "decoder_sparse_step", path); step && *step != 1) {
      fail(path, "decoder_sparse_step {} is not supported (only 1: every layer sparse)", *step);
    }
    if (config.contains("mlp_only_layers") && config["mlp_only_layers"].is_array() &&
        !config["mlp_only_layers"].empty()) {
      fail(path, "mlp_only_layers is not supported (every layer must be sparse)");
    }
    if (config.contains("clip_qkv") && !config["clip_qkv"].is_null()) {
      fail(path, "clip_qkv is not supported");
    }
  }
  // Phi-3 and Starcoder2 apply their sliding_window to every layer.
  if (result.architecture == "phi3" || result.architecture == "starcoder2") {
    if (auto window = json_optional_int(config, "sliding_window", path)) {
      result.sliding_window = *window;
      result.layer_types.assign(static_cast<size_t>(result.num_layers), "sliding_attention");
    }
  }
  // The MLP activation each family's graph computes; a checkpoint asking for another is refused.
  const char* act_key = is_gemma2(result) || is_gemma3(result) ? "hidden_activation" : "hidden_act";
  if (config.contains(act_key) && config[act_key].is_string()) {
    const std::string act = config[act_key].get<std::string>();
    const bool gelu = is_gemma2(result) || is_gemma3(result) || result.architecture == "starcoder2";
    const char* expected = gelu ? "gelu_pytorch_tanh" : "silu";
    if (act != expected) {
      fail(path, "{} '{}' is not supported for {} (supported: {})", act_key, act,
           result.architecture, expected);
    }
  }
  result.attention_multiplier = json_optional_number(config, "attention_multiplier", path);
  for (auto [key, field] : {std::pair{"embedding_multiplier", &result.embedding_multiplier},
                            std::pair{"residual_multiplier", &result.residual_multiplier},
                            std::pair{"logits_scaling", &result.logits_scaling}}) {
    if (auto value = json_optional_number(config, key, path)) *field = *value;
  }
  validate_config(result, path);
  return result;
}

bool gguf_permutes_qk(const std::string& architecture) {
  return architecture == "llama" || architecture == "mistral" || architecture == "granite" ||
         architecture == "smollm3";
}

const char* pooling_name(Pooling pooling) {
  switch (pooling) {
    case Pooling::kMean:
      return "mean";
    case Pooling::kCls:
      return "cls";
    case Pooling::kLast:
      return "last";
  }
  return "?";
}

std::optional<Pooling> parse_pooling(std::string_view name) {
  for (Pooling pooling : {Pooling::kMean, Pooling::kCls, Pooling::kLast}) {
    if (name == pooling_name(pooling)) return pooling;
  }
  return std::nullopt;
}

ModelConfig config_from_gguf(const GgufFile& gguf) {
  ModelConfig result;
  result.architecture = gguf.get_string("general.architecture");
  const std::string prefix = result.architecture + ".";
  auto key = [&](const char* suffix) { return prefix + suffix; };
  auto int_or = [&](const char* suffix, int64_t fallback) {
    return gguf.has(key(suffix)) ? gguf.get_int(key(suffix)) : fallback;
  };

  result.hidden_size = gguf.get_int(key("embedding_length"));
  // llama.cpp's LLAMA_POOLING_TYPE: 1 mean, 2 cls, 3 last (0 none and 4 rank: mean here).
  switch (int_or("pooling_type", 1)) {
    case 2:
      result.pooling = Pooling::kCls;
      break;
    case 3:
      result.pooling = Pooling::kLast;
      break;
    default:
      result.pooling = Pooling::kMean;
  }
  result.intermediate_size = gguf.get_int(key("feed_forward_length"));
  result.num_layers = gguf.get_int(key("block_count"));
  result.num_heads = gguf.get_int(key("attention.head_count"));
  // LFM2's and Granite 4.0-H's converters list kv heads per layer: 0 for a recurrent layer.
  if (const GgufValue* kv = gguf.find(key("attention.head_count_kv"));
      kv != nullptr && std::holds_alternative<GgufArray>(kv->value)) {
    result.num_kv_heads = 0;
    const char* recurrent = result.architecture == "granitehybrid" ? "mamba" : "conv";
    for (int64_t heads : gguf.get_int_array(key("attention.head_count_kv"))) {
      result.layer_types.push_back(heads == 0 ? recurrent : "full_attention");
      result.num_kv_heads = std::max(result.num_kv_heads, heads);
    }
  } else {
    result.num_kv_heads = int_or("attention.head_count_kv", result.num_heads);
  }
  result.head_dim = int_or("attention.key_length",
                           result.num_heads > 0 ? result.hidden_size / result.num_heads : 0);
  result.max_position_embeddings = gguf.get_int(key("context_length"));
  result.rms_norm_eps = gguf.has(key("attention.layer_norm_rms_epsilon"))
                            ? gguf.get_float(key("attention.layer_norm_rms_epsilon"))
                            : gguf.get_float(key("attention.layer_norm_epsilon"));
  if (gguf.has(key("rope.freq_base"))) result.rope_theta = gguf.get_float(key("rope.freq_base"));
  if (gguf.find_tensor("rope_freqs.weight")) {
    result.rope_scaling.type = RopeScaling::Type::kFrequencyFactors;
  }
  // llama.cpp's Phi-3 LongRoPE: factor tensors, the original context and the attention factor
  // under rope.scaling (short factors read with the weights: models/weight_loader.cpp).
  if (gguf.find_tensor("rope_factors_short.weight")) {
    RopeScaling& s = result.rope_scaling;
    s.type = RopeScaling::Type::kLongRope;
    s.original_max_position_embeddings = int_or("rope.scaling.original_context_length", 0);
    if (s.original_max_position_embeddings <= 0) {
      fail(gguf.path(), "LongRoPE factors without {}", key("rope.scaling.original_context_length"));
    }
    s.attention_factor = gguf.has(key("rope.scaling.attn_factor"))
                             ? gguf.get_float(key("rope.scaling.attn_factor"))
                             : 1.0;
  }
  if (gguf.has(key("rope.scaling.type"))) {
    std::string type = gguf.get_string(key("rope.scaling.type"));
    if (type == "yarn") {
      // As the converter writes YaRN (no `truncate` key: transformers' default, true).
      RopeScaling& s = result.rope_scaling;
      s.type = RopeScaling::Type::kYarn;
      s.factor = gguf.get_float(key("rope.scaling.factor"));
      s.original_max_position_embeddings =
          gguf.get_int(key("rope.scaling.original_context_length"));
      if (s.original_max_position_embeddings <= 0) {
        fail(gguf.path(), "{} must be positive", key("rope.scaling.original_context_length"));
      }
      for (auto [suffix, field] : {std::pair{"rope.scaling.yarn_beta_fast", &s.beta_fast},
                                   std::pair{"rope.scaling.yarn_beta_slow", &s.beta_slow}}) {
        if (gguf.has(key(suffix))) *field = gguf.get_float(key(suffix));
      }
      s.attention_factor = gguf.has(key("rope.scaling.yarn_attn_factor"))
                               ? gguf.get_float(key("rope.scaling.yarn_attn_factor"))
                               : yarn_mscale(s.factor);
    } else if (type != "none") {
      fail(gguf.path(), "rope scaling type '{}' is not supported", type);
    }
  }

  // The vocabulary size is the token list's length when the architecture key is absent.
  if (gguf.has(key("vocab_size"))) {
    result.vocab_size = gguf.get_int(key("vocab_size"));
  } else if (const GgufValue* tokens = gguf.find("tokenizer.ggml.tokens")) {
    const auto* array = std::get_if<GgufArray>(&tokens->value);
    if (array == nullptr) fail(gguf.path(), "metadata 'tokenizer.ggml.tokens' is not an array");
    result.vocab_size = static_cast<int64_t>(array->items.size());
  } else {
    fail(gguf.path(), "cannot tell the vocabulary size (no {} and no tokenizer)",
         key("vocab_size"));
  }
  result.tie_word_embeddings = !gguf.find_tensor("output.weight").has_value();
  result.attention_bias = gguf.find_tensor("blk.0.attn_q.bias").has_value();
  if (gguf.has("tokenizer.ggml.bos_token_id")) {
    result.bos_token_id = gguf.get_int("tokenizer.ggml.bos_token_id");
  }
  if (gguf.has("tokenizer.ggml.padding_token_id")) {
    result.pad_token_id = gguf.get_int("tokenizer.ggml.padding_token_id");
  }
  if (gguf.has("tokenizer.ggml.eos_token_id")) {
    result.eos_token_ids.push_back(gguf.get_int("tokenizer.ggml.eos_token_id"));
  }

  // Other families' features, under the keys llama.cpp writes.
  if (gguf.has(key("attention.sliding_window"))) {
    result.sliding_window = gguf.get_int(key("attention.sliding_window"));
  }
  auto optional_float = [&](const char* suffix) -> std::optional<double> {
    if (!gguf.has(key(suffix))) return std::nullopt;
    return gguf.get_float(key(suffix));
  };
  if (is_gemma2(result)) {
    result.attn_logit_softcapping = optional_float("attn_logit_softcapping").value_or(50.0);
    result.final_logit_softcapping = optional_float("final_logit_softcapping").value_or(30.0);
  }
  gemma_defaults(result, is_gemma2(result) ? 2 : 6);
  result.rotary_dim = int_or("rope.dimension_count", result.head_dim);
  result.qk_rows_interleaved =
      gguf_permutes_qk(result.architecture) && result.rope_dims() == result.head_dim;
  result.linear_bias = gguf.find_tensor("blk.0.attn_output.bias").has_value();
  // llama.cpp's SmolLM3 skips RoPE on every 4th layer (n_no_rope_layer_step); no key says so.
  if (result.architecture == "smollm3") result.rope_skipped = every_nth_layer(result.num_layers, 4);
  if (auto scale = optional_float("logit_scale")) result.logit_scale = *scale;
  if (int_or("expert_count", 0) > 0) {
    result.num_experts = gguf.get_int(key("expert_count"));
    result.experts_per_token = gguf.get_int(key("expert_used_count"));
    result.expert_intermediate_size =
        int_or("expert_feed_forward_length", result.intermediate_size);
    // llama.cpp's Mixtral (GGUF llama) renormalises; Qwen3-MoE and OLMoE say so in a key.
    result.norm_topk_prob = gguf.has(key("expert_weights_norm"))
                                ? gguf.get_bool(key("expert_weights_norm"))
                                : result.architecture == "llama";
  }
  // llama.cpp's gpt-oss: sliding and full attention alternate from layer 0. Its YaRN is
  // untruncated in the published config, which the GGUF keys do not say.
  if (result.architecture == "gpt-oss") {
    if (result.sliding_window) result.layer_types = alternating_sliding_layers(result.num_layers);
    result.rope_scaling.truncate = false;
  }
  if ((result.architecture == "phi3" || result.architecture == "starcoder2") &&
      result.sliding_window) {
    result.layer_types.assign(static_cast<size_t>(result.num_layers), "sliding_attention");
  }
  result.conv_kernel = int_or("shortconv.l_cache", 0);
  if (result.architecture == "granitehybrid") granite_hybrid_from_gguf(gguf, result);
  if (auto scale = optional_float("attention.scale")) result.attention_multiplier = *scale;
  if (auto scale = optional_float("embedding_scale")) result.embedding_multiplier = *scale;
  if (auto scale = optional_float("residual_scale")) result.residual_multiplier = *scale;
  if (auto scale = optional_float("logit_scale")) result.logits_scaling = *scale;
  validate_config(result, gguf.path());
  return result;
}

void validate_config(const ModelConfig& c, const std::string& where) {
  auto positive = [&](int64_t value, const char* name) {
    if (value <= 0 || value > (int64_t{1} << 32))
      fail(where, "{} must be positive, got {}", name, value);
  };
  positive(c.vocab_size, "vocab_size");
  positive(c.hidden_size, "hidden_size");
  positive(c.intermediate_size, "intermediate_size");
  positive(c.num_layers, "num_layers");
  positive(c.num_heads, "num_heads");
  positive(c.num_kv_heads, "num_kv_heads");
  positive(c.head_dim, "head_dim");
  positive(c.max_position_embeddings, "max_position_embeddings");
  if (c.num_heads % c.num_kv_heads != 0) {
    fail(where, "num_heads ({}) is not a multiple of num_kv_heads ({})", c.num_heads,
         c.num_kv_heads);
  }
  if (c.head_dim % 2 != 0) fail(where, "head_dim ({}) must be even for RoPE", c.head_dim);
  if (c.num_experts > 0 && (c.experts_per_token < 1 || c.experts_per_token > c.num_experts ||
                            c.expert_intermediate_size < 1)) {
    fail(where, "{} experts with {} per token of size {}: not a valid mixture", c.num_experts,
         c.experts_per_token, c.expert_intermediate_size);
  }
  if (c.rotary_dim % 2 != 0 || c.rotary_dim < 0 || c.rotary_dim > c.head_dim) {
    fail(where, "rotary dims ({}) must be even and within head_dim ({})", c.rotary_dim, c.head_dim);
  }
  if (!(c.rms_norm_eps > 0)) fail(where, "rms_norm_eps must be positive");
  if (!(c.rope_theta > 0)) fail(where, "rope_theta must be positive");
  if (!(c.rope_local_theta > 0)) fail(where, "rope_local_base_freq must be positive");
  if (c.num_layers != static_cast<int64_t>(c.layer_types.size()) && !c.layer_types.empty()) {
    fail(where, "{} layer types for {} layers", c.layer_types.size(), c.num_layers);
  }
  for (int64_t layer = 0; layer < c.num_layers; ++layer) {
    if ((c.is_conv_layer(layer) || c.is_mamba_layer(layer)) && c.conv_kernel < 2) {
      fail(where, "{} layers need a convolution of at least 2 taps, got {}",
           c.layer_types[static_cast<size_t>(layer)], c.conv_kernel);
    }
    if (c.is_mamba_layer(layer) && (c.ssm_heads <= 0 || c.ssm_head_dim <= 0 || c.ssm_state <= 0 ||
                                    c.ssm_groups <= 0 || c.ssm_heads % c.ssm_groups != 0)) {
      fail(where,
           "Mamba layers need positive heads ({}), head dims ({}) and state ({}), the heads a "
           "multiple of the groups ({})",
           c.ssm_heads, c.ssm_head_dim, c.ssm_state, c.ssm_groups);
    }
  }
  if (c.sliding_window && *c.sliding_window <= 0) {
    fail(where, "sliding_window must be positive, got {}", *c.sliding_window);
  }
  for (int64_t id : c.eos_token_ids) {
    if (id < 0 || id >= c.vocab_size) fail(where, "eos token id {} is outside the vocabulary", id);
  }
}

}  // namespace xlacel
