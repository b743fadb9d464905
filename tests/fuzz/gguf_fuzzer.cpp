// GGUF reader: any bytes must either parse or raise xlacel::Error.
#include "common/error.h"
#include "fuzz_input.h"
#include "model_files/gguf_file.h"
#include "model_files/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = xlacel::fuzz::write_input(data, size, ".gguf");
  try {
    xlacel::GgufFile gguf(path);
    for (const auto& info : gguf.tensor_infos()) {
      auto tensor = gguf.tensor(info);
      if (tensor.data.size() <= (1u << 16)) xlacel::to_f32(tensor);
    }
    xlacel::config_from_gguf(gguf);
  } catch (const xlacel::Error&) {
  }
  return 0;
}
