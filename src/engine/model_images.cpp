#include "engine/model_images.h"

#include <filesystem>

#include "common/error.h"
#include "images/decode.h"

namespace xlacel::engine {

namespace {

// The image processor's settings: the model's preprocessor_config.json (an HF directory's, or
// what a GGUF's mmproj gives: ModelFiles::preprocessor_config), else the "image_processor"
// object of the directory's processor_config.json (as transformers 5 saves a processor).
Json image_processor_config(const ModelFiles& model) {
  if (const std::optional<Json>& config = model.preprocessor_config()) {
    if (!config->is_object()) fail(model.path(), "preprocessor_config.json is not a JSON object");
    return *config;
  }
  const std::filesystem::path processor =
      std::filesystem::path(model.path()) / "processor_config.json";
  if (model.format() == ModelFiles::Format::kHuggingFaceDirectory &&
      std::filesystem::exists(processor)) {
    Json config = read_json_file(processor.string());
    if (!config.is_object() || !config.contains("image_processor") ||
        !config["image_processor"].is_object()) {
      fail(processor.string(), "has no 'image_processor' object");
    }
    return config["image_processor"];
  }
  fail(model.path(),
       "has no image processor settings (preprocessor_config.json; a GGUF model "
       "takes them from its --mmproj file)");
}

std::variant<images::Idefics3Processor, images::Gemma3Processor> processor_for(
    const ModelFiles& model, const VisionConfig& vision) {
  const Json config = image_processor_config(model);
  if (vision.projector == VisionProjector::kIdefics3PixelShuffle) {
    return images::Idefics3Processor::from_config(config);
  }
  if (vision.projector == VisionProjector::kGemma3AvgPool) {
    return images::Gemma3Processor::from_config(config);
  }
  fail(model.path(), "images of this model's family are not supported yet");
}

const VisionConfig& vision_of(const ModelFiles& model) {
  if (!model.config().vision) {
    fail(model.path(), "the model reads text only (no vision_config): it takes no images");
  }
  return *model.config().vision;
}

}  // namespace

bool has_vision(const ModelFiles& model) {
  return model.config().vision.has_value();
}

ModelImages::ModelImages(const ModelFiles& model)
    : vision_(vision_of(model)), processor_(processor_for(model, vision_)) {}

PreparedImages ModelImages::prepare(std::span<const ImageFile> files) const {
  auto pixels = std::make_shared<std::vector<float>>();
  PreparedImages prepared;
  const auto per_image = static_cast<std::size_t>(vision_.pixels_per_image());
  for (const ImageFile& file : files) {
    const images::Image image = images::decode_image(file.bytes, file.name);
    const images::ProcessedImage processed =
        std::visit([&](const auto& processor) { return processor.process(image); }, processor_);
    if (processed.num_crops != 0) {
      fail(file.name, "pan-and-scan crops are not supported (do_pan_and_scan)");
    }
    if (processed.pixel_values.empty() || processed.pixel_values.size() % per_image != 0) {
      fail(file.name,
           "the image processor gave {} values, not whole {}x{} images for the vision "
           "tower",
           processed.pixel_values.size(), vision_.image_size, vision_.image_size);
    }
    pixels->insert(pixels->end(), processed.pixel_values.begin(), processed.pixel_values.end());
    prepared.layouts.push_back({processed.rows, processed.cols});
  }
  prepared.pixels = std::move(pixels);
  return prepared;
}

}  // namespace xlacel::engine
