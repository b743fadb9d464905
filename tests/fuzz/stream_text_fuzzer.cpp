// Streamed text: any token id sequence of the real SmolLM2 vocabulary (3 input bytes per id),
// decoded token by token and written as server-sent events, must reach the client whole
// (tests/stream_roundtrip.h); anything else aborts with what went wrong.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "../stream_roundtrip.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::unique_ptr<xlacel::Tokenizer> tokenizer =
      xlacel::Tokenizer::from_tokenizer_json(XLACEL_SOURCE_DIR
                                             "/tests/data/tokenizer/smollm2_tokenizer.json");
  if (size < 1) return 0;
  xlacel::testing::StreamCase stream;
  stream.endpoint =
      data[0] & 1 ? xlacel::server::Endpoint::kChat : xlacel::server::Endpoint::kCompletion;
  stream.reason = static_cast<xlacel::engine::FinishReason>((data[0] >> 1) % 4);
  stream.include_usage = (data[0] & 8) != 0;
  std::vector<int32_t> ids;
  for (size_t i = 1; i + 3 <= size; i += 3) {
    const uint32_t value = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16);
    ids.push_back(static_cast<int32_t>(value % tokenizer->vocab_size()));
  }
  const std::string problem = xlacel::testing::stream_roundtrip_problem(*tokenizer, ids, stream);
  if (!problem.empty()) {
    std::fprintf(stderr, "stream round trip: %s\n", problem.c_str());
    std::abort();
  }
  return 0;
}
