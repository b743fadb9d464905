#pragma once
// The weight list of a decoder as its blocks declare it (decoder_layer.h): each block adds its
// tensors, in argument order, with their HF and GGUF names. decoder_weight_specs is THE one
// definition the graph (which declares exactly these arguments) and the weight loader share,
// through Architecture::weight_specs.
#include <cstdint>
#include <string>
#include <vector>

#include "model_files/model_config.h"
#include "models/decoder_family.h"
#include "models/weight_layout.h"

namespace xlacel::models {

class DecoderWeights {
 public:
  DecoderWeights(const ModelConfig& config, const DecoderFamily& family, WeightType weights);

  const ModelConfig& config() const { return config_; }

  // A tensor of the whole model; `split`: how tensor parallelism cuts it (tensor_split.h).
  WeightSpec& add(std::string name, std::string hf, std::string gguf, std::vector<int64_t> shape,
                  Split split = Split::kNone);
  // Layer `layer`'s tensor: argument l<layer>_<name>, HF model.layers.<layer>.<hf>, GGUF
  // blk.<layer>.<gguf>.
  WeightSpec& add_layer(int64_t layer, const std::string& name, const std::string& hf,
                        const std::string& gguf, std::vector<int64_t> shape,
                        Split split = Split::kNone);
  // Rows [row, row + rows) of a layer's fused [total, hidden] tensor (split on the host).
  void add_layer_rows(int64_t layer, const std::string& name, const std::string& hf,
                      const std::string& gguf, int64_t row, int64_t rows, int64_t total,
                      Split split);
  // Layer `layer`'s experts' matrices (or biases) of `shape` each, stacked: argument
  // l<layer>_<name> [E, shape...] (WeightSpec::expert), GGUF's blk.<layer>.<gguf> whole, HF's read
  // expert by expert from model.layers.<layer>.<hf> ("{}" the expert; the caller says how
  // otherwise: WeightSpec::hf_experts).
  WeightSpec& add_layer_experts(int64_t layer, const std::string& name, const std::string& hf,
                                const std::string& gguf, const std::vector<int64_t>& shape,
                                Split split = Split::kNone);
  // A norm's weight of `size` (and its bias after it, for LayerNorms), `hf` and `gguf` naming
  // the weight; GGUF (1 + w) weights restored to w where the family says so.
  void add_norm(const std::string& name, const std::string& hf, const std::string& gguf,
                int64_t size);
  void add_layer_norm(int64_t layer, const std::string& name, const std::string& hf,
                      const std::string& gguf, int64_t size);
  // q/k norms: RMSNorm weights (no bias), GGUF (1 + w) restored as add_norm does.
  void add_layer_qk_norm(int64_t layer, const std::string& name, const std::string& hf,
                         const std::string& gguf, int64_t size);

  std::vector<WeightSpec> take() { return std::move(specs_); }

 private:
  const ModelConfig& config_;
  stablehlo::ElementType element_;
  float norm_add_;
  bool norm_bias_;
  std::vector<WeightSpec> specs_;
};

// Every weight argument of a decoder of `family`, in argument order (resident forms for kAuto:
// weight_layout.h, resident_weight_specs); everyone else asks architecture_for(config).
std::vector<WeightSpec> decoder_weight_specs(const ModelConfig& config, const DecoderFamily& family,
                                             WeightType weights);

}  // namespace xlacel::models
