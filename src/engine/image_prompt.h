#pragma once
// What a vision-language model's processor writes into a rendered prompt for each image: the
// chat template leaves one placeholder per image part, and the processor replaces it with the
// image's tokens (one per feature row) and the text around them, as transformers' processors
// do (Idefics3Processor, Gemma3Processor).
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "model_files/vision_config.h"

namespace xlacel::engine {

// How one image was cut: Idefics3's grid of tiles (rows x cols, followed by the whole image
// scaled down); 0 x 0 for an image that was not split (and for every Gemma 3 image).
struct ImageLayout {
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t tiles() const { return rows * cols + 1; }  // Idefics3: the global image too
};

// The placeholder the model's chat template writes for an image part: "<image>" (Idefics3,
// SmolVLM), "<start_of_image>" (Gemma 3).
std::string_view image_placeholder(const VisionConfig& vision);

// The text that replaces one image's placeholder.
std::string image_prompt_text(const VisionConfig& vision, const ImageLayout& layout);

// `text` with its placeholders replaced in order by their images' text. Error "images: ..."
// when the count of placeholders differs from the images'.
std::string expand_image_placeholders(std::string_view text, const VisionConfig& vision,
                                      std::span<const ImageLayout> layouts);

}  // namespace xlacel::engine
