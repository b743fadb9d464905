#include "engine/image_prompt.h"

#include <fmt/format.h>

#include "common/error.h"

namespace xlacel::engine {

namespace {

std::string repeated(std::string_view piece, int64_t times) {
  std::string out;
  out.reserve(piece.size() * static_cast<std::size_t>(times));
  for (int64_t i = 0; i < times; ++i) out += piece;
  return out;
}

bool is_gemma3(const VisionConfig& vision) {
  return vision.projector == VisionProjector::kGemma3AvgPool;
}

}  // namespace

std::string_view image_placeholder(const VisionConfig& vision) {
  return is_gemma3(vision) ? "<start_of_image>" : "<image>";
}

std::string image_prompt_text(const VisionConfig& vision, const ImageLayout& layout) {
  const int64_t tokens = vision.tokens_per_image();
  if (is_gemma3(vision)) {
    return fmt::format("\n\n<start_of_image>{}<end_of_image>\n\n",
                       repeated("<image_soft_token>", tokens));
  }
  // Idefics3Processor: each tile tagged with its row and column, a line per row, then the
  // whole image tagged global, all between <fake_token_around_image> marks.
  constexpr std::string_view around = "<fake_token_around_image>";
  const std::string image = repeated("<image>", tokens);
  const std::string global = fmt::format("{}<global-img>{}{}", around, image, around);
  if (layout.rows == 0 && layout.cols == 0) return global;
  std::string text;
  for (int64_t row = 1; row <= layout.rows; ++row) {
    for (int64_t col = 1; col <= layout.cols; ++col) {
      text += fmt::format("{}<row_{}_col_{}>{}", around, row, col, image);
    }
    text += '\n';
  }
  return text + "\n" + global;
}

std::string expand_image_placeholders(std::string_view text, const VisionConfig& vision,
                                      std::span<const ImageLayout> layouts) {
  const std::string_view placeholder = image_placeholder(vision);
  std::string out;
  std::size_t images = 0;
  std::size_t at = 0;
  for (std::size_t found = text.find(placeholder); found != std::string_view::npos;
       found = text.find(placeholder, at)) {
    out.append(text.substr(at, found - at));
    if (images < layouts.size()) out += image_prompt_text(vision, layouts[images]);
    ++images;
    at = found + placeholder.size();
  }
  if (images != layouts.size()) {
    fail("images", "the prompt has {} image placeholder{} ({}) for {} image{}", images,
         images == 1 ? "" : "s", placeholder, layouts.size(), layouts.size() == 1 ? "" : "s");
  }
  out.append(text.substr(at));
  return out;
}

}  // namespace xlacel::engine
