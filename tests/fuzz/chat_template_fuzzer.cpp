// Template parser and renderer: any source must render or raise xlacel::Error, quickly.
#include <string>

#include "chat/chat_template.h"
#include "common/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string source(reinterpret_cast<const char*>(data), size);
  static const xlacel::Json messages = xlacel::Json::parse(
      R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Hi {{x}}"},)"
      R"({"role":"assistant","content":"Hello!"}])");
  try {
    xlacel::ChatTemplate chat_template(source, "fuzz.jinja");
    xlacel::ChatTemplateOptions options;
    options.add_generation_prompt = true;
    options.special_tokens = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
    chat_template.render(messages, options);
  } catch (const xlacel::Error&) {
  }
  return 0;
}
