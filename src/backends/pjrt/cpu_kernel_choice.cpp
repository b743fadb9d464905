#include "backends/pjrt/cpu_kernel_choice.h"

#include <cctype>
#include <cstdint>
#include <vector>

namespace xlacel::pjrt {

namespace {

// The dimensions of the first "tensor<AxBx...xTYPE>" in `text` (a '?' dimension as -1); empty
// when there is none or it is a scalar.
std::vector<int64_t> tensor_dims(std::string_view text) {
  std::vector<int64_t> dims;
  const std::size_t open = text.find("tensor<");
  if (open == std::string_view::npos) return dims;
  std::string_view rest = text.substr(open + 7);
  while (!rest.empty()) {
    if (rest.front() == '?') {
      dims.push_back(-1);
      rest.remove_prefix(1);
    } else if (std::isdigit(static_cast<unsigned char>(rest.front()))) {
      int64_t value = 0;
      while (!rest.empty() && std::isdigit(static_cast<unsigned char>(rest.front()))) {
        value = value * 10 + (rest.front() - '0');
        rest.remove_prefix(1);
      }
      dims.push_back(value);
    } else {
      break;  // the element type
    }
    if (rest.empty() || rest.front() != 'x') break;
    rest.remove_prefix(1);
  }
  return dims;
}

}  // namespace

bool has_matrix_product(std::string_view mlir) {
  constexpr std::string_view kDot = "stablehlo.dot_general";
  for (std::size_t at = mlir.find(kDot); at != std::string_view::npos;
       at = mlir.find(kDot, at + kDot.size())) {
    std::size_t end = mlir.find('\n', at);
    const std::string_view line = mlir.substr(at, end == std::string_view::npos ? end : end - at);
    if (line.find("batching") != std::string_view::npos) continue;
    const std::size_t arrow = line.rfind("->");
    if (arrow == std::string_view::npos) continue;
    const std::vector<int64_t> result = tensor_dims(line.substr(arrow));
    if (result.size() == 2 && result[0] >= 2 && result[1] >= 2) return true;
  }
  return false;
}

GraphCompileOptions graph_compile_options(device::DeviceKind device, std::string_view mlir) {
  GraphCompileOptions options;
  options.xnnpack_dots = device == device::DeviceKind::kCpu && has_matrix_product(mlir);
  return options;
}

}  // namespace xlacel::pjrt
