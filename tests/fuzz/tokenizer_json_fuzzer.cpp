// tokenizer.json loader and encoder: any file must load and encode, or raise xlacel::Error.
#include "common/error.h"
#include "fuzz_input.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = xlacel::fuzz::write_input(data, size, "-tokenizer.json");
  try {
    auto tokenizer = xlacel::Tokenizer::from_tokenizer_json(path);
    auto ids = tokenizer->encode("Hello world! 123 <|im_start|> héllo 🙂\n\n  x");
    tokenizer->decode(ids);
  } catch (const xlacel::Error&) {
  }
  return 0;
}
