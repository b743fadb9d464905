#pragma once
// A vision-language model's image encoder on the executor's device: the vision tower's weights
// uploaded once (f32, as transformers computes them), its graph (models/vision_tower.h) loaded on
// the first image, and one call per image (a tile of Idefics3's split, a Gemma 3 image) turning
// its pixel values into the rows the decoder's prefill takes at its image tokens.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "device/device.h"
#include "model_files/model_files.h"
#include "model_files/vision_config.h"
#include "models/graph_signature.h"

namespace xlacel::executor {

class VisionEncoder {
 public:
  // Uploads the tower's weights to `device`, which must outlive this encoder. Error naming a
  // missing or misshapen tensor.
  VisionEncoder(device::Device& device, const ModelFiles& model, const VisionConfig& config,
                std::function<void(std::string_view)> progress);
  ~VisionEncoder();

  const VisionConfig& config() const { return config_; }
  // The features of `pixel_values` (whole images of VisionConfig::pixels_per_image() floats each,
  // as the image processor gives them), image after image: tokens_per_image() rows of the decoder's
  // hidden size each. Error when the floats are not a whole number of images.
  std::vector<float> encode(std::span<const float> pixel_values);

 private:
  device::Executable& executable();

  device::Device& device_;
  const ModelFiles& model_;
  VisionConfig config_;
  std::function<void(std::string_view)> progress_;
  models::GraphSignature signature_;
  std::vector<device::BufferPtr> weights_;  // in signature_.weights' order
  std::unique_ptr<device::Executable> executable_;
};

}  // namespace xlacel::executor
