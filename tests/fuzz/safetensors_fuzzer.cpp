// safetensors header: any bytes must either parse or raise xlacel::Error.
#include <span>

#include "common/error.h"
#include "model_files/safetensors_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto bytes = std::as_bytes(std::span(data, size));
  try {
    for (const auto& tensor : xlacel::parse_safetensors(bytes, "fuzz.safetensors")) {
      if (tensor.data.size() <= (1u << 16)) xlacel::to_f32(tensor);
    }
  } catch (const xlacel::Error&) {
  }
  return 0;
}
