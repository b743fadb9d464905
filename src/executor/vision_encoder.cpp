#include "executor/vision_encoder.h"

#include <fmt/format.h>

#include "common/error.h"
#include "models/vision_tower.h"
#include "models/weight_loader.h"

namespace xlacel::executor {

namespace {

// One image per call: the graph compiles once for any count of images or tiles.
constexpr int64_t kImagesPerCall = 1;

}  // namespace

VisionEncoder::VisionEncoder(device::Device& device, const ModelFiles& model,
                             const VisionConfig& config,
                             std::function<void(std::string_view)> progress)
    : device_(device),
      model_(model),
      config_(config),
      progress_(std::move(progress)),
      signature_(models::vision_signature(config, kImagesPerCall)) {
  for (const models::WeightSpec& spec : signature_.weights) {
    const models::HostTensor tensor = models::prepare_weight(model_, spec);
    weights_.push_back(device_.upload(tensor.bytes, spec.element, spec.shape));
    if (tensor.file) model_.release(*tensor.file);
  }
}

VisionEncoder::~VisionEncoder() = default;

device::Executable& VisionEncoder::executable() {
  if (executable_) return *executable_;
  const std::string name = fmt::format("vision-i{}-f32", kImagesPerCall);
  models::EmittedGraph graph =
      models::emit_vision_graph(config_, kImagesPerCall, models::WeightType::kF32);
  const device::GraphSource source{name, std::move(graph.mlir), "xlacel_vision",
                                   fmt::format("{}.{}.mlir", model_.name(), name)};
  std::vector<device::GraphLoad> loads;
  std::vector<std::unique_ptr<device::Executable>> loaded =
      device_.load(std::span<const device::GraphSource>(&source, 1), loads);
  if (loaded.size() != 1 || loaded[0]->num_results() != signature_.outputs.size()) {
    fail(source.source, "the vision graph's executable does not have the signature's results");
  }
  executable_ = std::move(loaded[0]);
  if (progress_)
    progress_(fmt::format("{}: vision tower loaded ({:.2f} s)", name, loads[0].seconds));
  return *executable_;
}

std::vector<float> VisionEncoder::encode(std::span<const float> pixel_values) {
  const auto per_image = static_cast<std::size_t>(config_.pixels_per_image());
  if (pixel_values.empty() || pixel_values.size() % per_image != 0) {
    fail("images", "{} pixel values are not a whole number of {}x{}x{} images", pixel_values.size(),
         config_.num_channels, config_.image_size, config_.image_size);
  }
  const models::TensorSpec& input = signature_.inputs.at(0);
  const models::TensorSpec& output = signature_.outputs.at(0);
  const std::size_t output_floats = device::dense_byte_size(output.element, output.shape) / 4;
  device::Executable& graph = executable();
  std::vector<float> features;
  for (std::size_t first = 0; first < pixel_values.size(); first += per_image) {
    device::BufferPtr pixels = device_.upload(std::as_bytes(pixel_values.subspan(first, per_image)),
                                              input.element, input.shape);
    std::vector<device::Buffer*> arguments = {pixels.get()};
    for (const device::BufferPtr& weight : weights_) arguments.push_back(weight.get());
    std::vector<device::BufferPtr> results = device_.execute(graph, arguments);
    const std::size_t at = features.size();
    features.resize(at + output_floats);
    device_.read(*results.at(0),
                 std::as_writable_bytes(std::span<float>(features).subspan(at, output_floats)));
  }
  return features;
}

}  // namespace xlacel::executor
