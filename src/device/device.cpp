#include "device/device.h"

#include "common/error.h"

namespace xlacel::device {

const char* device_kind_name(DeviceKind kind) {
  return kind == DeviceKind::kCuda ? "cuda" : "cpu";
}

void DeviceOptions::validate() const {
  if (threads < 0) fail_field("threads", "must be 0 or more, got {}", threads);
  if (kind != DeviceKind::kCpu && threads > 0) {
    fail_field("threads", "applies to the CPU only, got {} for {}", threads,
               device_kind_name(kind));
  }
  if (tensor_parallel < 1)
    fail_field("tensor_parallel", "must be 1 or more, got {}", tensor_parallel);
}

std::optional<DeviceKind> parse_device_kind(std::string_view name) {
  if (name == "cpu") return DeviceKind::kCpu;
  if (name == "cuda") return DeviceKind::kCuda;
  return std::nullopt;
}

std::size_t dense_byte_size(stablehlo::ElementType element, std::span<const int64_t> shape) {
  std::size_t elements = 1;
  for (int64_t dim : shape) {
    if (dim < 0) fail("device", "negative dimension {} in a buffer shape", dim);
    elements *= static_cast<std::size_t>(dim);
  }
  const int bits = stablehlo::bit_width(element);
  return elements * static_cast<std::size_t>(bits < 8 ? 1 : bits / 8);
}

}  // namespace xlacel::device
