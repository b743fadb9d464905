// `xlacel inspect [MODEL]`: configuration, tensors by dtype and size, tokenizer and template.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

#include "cli/commands.h"
#include "cli/model_loading.h"
#include "models/architecture.h"

namespace xlacel::cli {

namespace {

std::string optional_id(const std::optional<int64_t>& id) {
  return id ? std::to_string(*id) : "none";
}

std::string mebibytes(uint64_t bytes) {
  return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

void run_inspect(const std::string& path) {
  ModelFiles model = open_model(path);
  const ModelConfig& c = model.config();
  if (model.gguf() != nullptr) {
    fmt::print("model: {} (GGUF v{})\n", model.path(), model.gguf()->version());
  } else {
    fmt::print("model: {} (Hugging Face directory)\n", model.path());
  }
  fmt::print("architecture: {}\n", c.architecture);
  fmt::print("family: {}  (supported model types: {})\n",
             models::architecture_for(c, model.path()).name(),
             fmt::join(models::supported_model_types(), ", "));
  if (c.sliding_window) {
    int64_t sliding = 0;
    for (int64_t l = 0; l < c.num_layers; ++l) sliding += c.is_sliding_layer(l) ? 1 : 0;
    fmt::print("sliding window: {}  sliding layers: {} of {}  local rope theta: {:g}\n",
               *c.sliding_window, sliding, c.num_layers, c.rope_local_theta);
  }
  fmt::print("layers: {}  hidden: {}  intermediate: {}\n", c.num_layers, c.hidden_size,
             c.intermediate_size);
  std::vector<int64_t> conv_layers;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    if (c.is_conv_layer(l)) conv_layers.push_back(l);
  }
  if (!conv_layers.empty()) {
    fmt::print("short-convolution layers: {} of {} ({}), {} taps{}\n", conv_layers.size(),
               c.num_layers, fmt::join(conv_layers, ", "), c.conv_kernel,
               c.conv_bias ? ", with biases" : "");
  }
  fmt::print("heads: {}  kv heads: {}  head dim: {}\n", c.num_heads, c.num_kv_heads, c.head_dim);
  fmt::print("vocab: {}  context: {}\n", c.vocab_size, c.max_position_embeddings);
  fmt::print("rms norm eps: {:g}  rope theta: {:g}  rope scaling: {}", c.rms_norm_eps, c.rope_theta,
             rope_scaling_name(c.rope_scaling.type));
  if (c.rope_scaling.type == RopeScaling::Type::kLlama3) {
    fmt::print(" (factor {:g}, low {:g}, high {:g}, original context {})", c.rope_scaling.factor,
               c.rope_scaling.low_freq_factor, c.rope_scaling.high_freq_factor,
               c.rope_scaling.original_max_position_embeddings);
  } else if (c.rope_scaling.type == RopeScaling::Type::kYarn) {
    fmt::print(" (factor {:g}, original context {}, beta fast {:g}, slow {:g}{}, cos/sin x {:g})",
               c.rope_scaling.factor, c.rope_scaling.original_max_position_embeddings,
               c.rope_scaling.beta_fast, c.rope_scaling.beta_slow,
               c.rope_scaling.truncate ? "" : ", untruncated", c.rope_scaling.attention_factor);
  }
  fmt::print("\n");
  fmt::print("tied embeddings: {}  attention bias: {}\n", c.tie_word_embeddings ? "yes" : "no",
             c.attention_bias ? "yes" : "no");
  std::string eos;
  for (int64_t id : c.eos_token_ids) eos += (eos.empty() ? "" : ",") + std::to_string(id);
  fmt::print("bos: {}  eos: {}  pad: {}\n", optional_id(c.bos_token_id), eos.empty() ? "none" : eos,
             optional_id(c.pad_token_id));

  struct Totals {
    int count = 0;
    uint64_t bytes = 0;
    int64_t elements = 0;
  };
  std::map<std::string, Totals> by_dtype;
  uint64_t total_bytes = 0;
  for (const TensorView& tensor : model.tensors()) {
    Totals& totals = by_dtype[dtype_name(tensor.dtype)];
    ++totals.count;
    totals.bytes += tensor.data.size();
    totals.elements += tensor.element_count();
    total_bytes += tensor.data.size();
  }
  fmt::print("tensors: {}, {}\n", model.tensors().size(), mebibytes(total_bytes));
  for (const auto& [dtype, totals] : by_dtype) {
    fmt::print("  {:<5} {:>4} tensors  {:>12} elements  {:>10}\n", dtype, totals.count,
               totals.elements, mebibytes(totals.bytes));
  }
  if (engine::has_tokenizer(model)) {
    fmt::print("tokenizer: {}\n", load_tokenizer(model)->describe());
  } else {
    fmt::print("tokenizer: none\n");
  }
  if (model.chat_template()) {
    const std::string& text = model.chat_template()->text;
    long lines = std::count(text.begin(), text.end(), '\n') + 1;
    load_chat_template(model);  // parse now so a broken template shows up here
    fmt::print("chat template: {} chars, {} lines, from {}\n", text.size(), lines,
               model.chat_template()->origin);
  } else {
    fmt::print("chat template: none\n");
  }
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto* command = app.add_subcommand("inspect",
                                     "Show a model's configuration, tensors, "
                                     "tokenizer and chat template");
  auto path = std::make_shared<std::string>();
  command->add_option("model", *path, "GGUF file or HF model directory (default: setup's model)");
  command->callback([path] { run_inspect(*path); });
}

}  // namespace xlacel::cli
