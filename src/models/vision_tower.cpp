// The vision graph: its weights and signature, and main() from the encoder and the projector.
#include "models/vision_tower.h"

#include <fmt/format.h>

#include "common/error.h"

namespace xlacel::models {

using namespace stablehlo;

namespace {

ElementType vision_element(WeightType weights) {
  return weights == WeightType::kAuto ? ElementType::kF32 : element_of(weights);
}

void check_images(const VisionConfig& config, int64_t images) {
  if (config.per_grid()) {
    throw Error(fmt::format("{}: the vision graph is one image grid's (pass its VisionGrid)",
                            config.model_type));
  }
  if (images < 1)
    throw Error(fmt::format("vision graph: images must be at least 1 (got {})", images));
}

void check_grid(const VisionConfig& config, const VisionGrid& grid) {
  if (!config.per_grid()) {
    throw Error(fmt::format("{}: the vision graph takes images of one size, not a grid",
                            config.model_type));
  }
  config.check_grid(grid);
}

// main(pixel_values, weights...) -> the features `emit` computes from them.
template <typename Emit>
EmittedGraph vision_graph(const GraphSignature& signature, Emit emit) {
  const TensorSpec& input = signature.inputs.at(0);
  Module module("xlacel_vision");
  Function& main = module.add_function("main");
  Value pixels = main.argument(input.name, TensorType(input.element, input.shape));
  VisionWeights arguments;
  for (const WeightSpec& spec : signature.weights) {
    arguments[spec.name] = main.argument(spec.name, TensorType(spec.element, spec.shape));
  }
  main.finish({emit(arguments, pixels)});
  return emitted_graph(module);
}

// The signature's weights of `weights`' element type.
GraphSignature with_weights(GraphSignature signature, const VisionConfig& config,
                            WeightType weights) {
  signature.weights = vision_weight_specs(config, weights);
  return signature;
}

}  // namespace

WeightSpec vision_weight(std::string name, std::string hf_name, std::string gguf_name,
                         std::vector<int64_t> shape, ElementType element) {
  WeightSpec spec;
  spec.name = std::move(name);
  spec.hf_name = std::move(hf_name);
  spec.gguf_name = std::move(gguf_name);
  spec.shape = std::move(shape);
  spec.element = element;
  return spec;
}

std::vector<WeightSpec> vision_weight_specs(const VisionConfig& config, WeightType weights) {
  std::vector<WeightSpec> specs;
  if (config.per_grid()) {
    add_qwen_vision_weights(specs, config, vision_element(weights));
    return specs;
  }
  add_encoder_weights(specs, config, vision_element(weights));
  add_projector_weights(specs, config, vision_element(weights));
  return specs;
}

GraphSignature vision_signature(const VisionConfig& config, int64_t images) {
  check_images(config, images);
  GraphSignature signature;
  signature.inputs.push_back({"pixel_values",
                              ElementType::kF32,
                              {images, config.num_channels, config.image_size, config.image_size}});
  signature.weights = vision_weight_specs(config, WeightType::kF32);
  signature.outputs.push_back({"image_features",
                               ElementType::kF32,
                               {images, config.tokens_per_image(), config.text_hidden_size}});
  return signature;
}

EmittedGraph emit_vision_graph(const VisionConfig& config, int64_t images, WeightType weights) {
  return vision_graph(with_weights(vision_signature(config, images), config, weights),
                      [&](const VisionWeights& arguments, Value pixels) {
                        Value encoded = emit_encoder(config, arguments, pixels);
                        return emit_projector(config, arguments, encoded, images);
                      });
}

GraphSignature vision_signature(const VisionConfig& config, const VisionGrid& grid) {
  check_grid(config, grid);
  GraphSignature signature;
  signature.inputs.push_back(
      {"pixel_values", ElementType::kF32, {grid.patches(), config.patch_values()}});
  signature.weights = vision_weight_specs(config, WeightType::kF32);
  signature.outputs.push_back({"image_features",
                               ElementType::kF32,
                               {config.tokens_for_grid(grid), config.text_hidden_size}});
  return signature;
}

EmittedGraph emit_vision_graph(const VisionConfig& config, const VisionGrid& grid,
                               WeightType weights) {
  return vision_graph(with_weights(vision_signature(config, grid), config, weights),
                      [&](const VisionWeights& arguments, Value pixels) {
                        return emit_qwen_vision(config, grid, arguments, pixels);
                      });
}

}  // namespace xlacel::models
