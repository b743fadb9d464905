#pragma once
// A vision-language model's image side, loaded once: its image processor, configured from the
// model's preprocessor_config.json as transformers configures it, turning image files into the
// pixel values its vision tower takes (RequestOptions::image_pixels) and the layout of each
// image that its prompt text follows (image_prompt.h).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "engine/image_prompt.h"
#include "images/gemma3_processor.h"
#include "images/idefics3_processor.h"
#include "model_files/model_files.h"

namespace xlacel::engine {

// One image as a request holds it: its file's bytes, and a name for messages ("photo.jpg",
// "messages[0].content[1]").
struct ImageFile {
  std::string name;
  std::vector<uint8_t> bytes;
};

// Images ready for a request: every image's pixel values in order (a whole number of the
// tower's images: Idefics3 gives several tiles per image), and each image's layout.
struct PreparedImages {
  std::shared_ptr<const std::vector<float>> pixels;
  std::vector<ImageLayout> layouts;
};

// Whether the model has a vision tower (and so takes images).
bool has_vision(const ModelFiles& model);

class ModelImages {
 public:
  // Error naming the model when it has no vision tower, or the file when its
  // preprocessor_config.json is missing or malformed.
  explicit ModelImages(const ModelFiles& model);

  const VisionConfig& vision() const { return vision_; }
  // Decodes and preprocesses each image; Error "<image name>: <problem>" for a file that is not
  // an image xlacel reads, or one the model cannot take.
  PreparedImages prepare(std::span<const ImageFile> images) const;

 private:
  VisionConfig vision_;
  std::variant<images::Idefics3Processor, images::Gemma3Processor> processor_;
};

}  // namespace xlacel::engine
