// Streamed text on real vocabularies: whatever ids a model produces, the stream decoder and the
// SSE writer deliver every byte of the decoded text once (tests/stream_roundtrip.h), including
// ids that end inside a UTF-8 character, byte-fallback runs and text cut off mid-character.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <random>
#include <vector>

#include "common/utf8.h"
#include "model_files/gguf_file.h"
#include "stream_roundtrip.h"
#include "test_paths.h"

namespace xlacel {
namespace {

using testing::stream_roundtrip_problem;
using testing::StreamCase;
using testing::test_data;

// Texts a model answers in: several scripts, combining characters, 4-byte characters.
const char* const kMultilingual[] = {
    "Bonjour, ça va ? L'été dernier, nous étions à Noël chez ma sœur.",
    "我们今天去公园散步吧，天气很好。",
    "今日は良い天気ですね。東京タワーに行きましょう！",
    "Привет! Как дела? Съешь же ещё этих мягких французских булок.",
    "Γειά σου Κόσμε· ἡ Ἀκρόπολις",
    "안녕하세요, 반갑습니다. 한국어를 배우고 있어요.",
    "emoji 😀🎉👍🏽 👩‍👩‍👧 🇫🇷 and more 🤖",
    "combining: e\u0301 a\u0300 n\u0303 o\u0308 \u1100\u1161 Z\u0351\u0334",
    "Ünïcödé 😀 and \"quotes\" and \\ backslash\nnewline",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𐍈 𝄞 math 𝑥² + 𝑦² = 𝑧²",
};

const StreamCase kCases[] = {
    {server::Endpoint::kChat, engine::FinishReason::kLength, false},
    {server::Endpoint::kChat, engine::FinishReason::kEos, true},
    {server::Endpoint::kCompletion, engine::FinishReason::kStop, false},
    {server::Endpoint::kCompletion, engine::FinishReason::kCapacity, true},
};

// Ids whose own bytes are not whole UTF-8 characters (byte tokens, halves of characters): the
// ones a stream must hold back.
std::vector<int32_t> partial_character_ids(const Tokenizer& tokenizer) {
  std::vector<int32_t> ids;
  for (std::size_t id = 0; id < tokenizer.vocab_size(); ++id) {
    std::string bytes;
    Tokenizer::DecodeState state;
    const auto token = static_cast<int32_t>(id);
    if (!tokenizer.append_token_bytes(token, false, state, bytes)) continue;
    // A byte-fallback token (<0xNN>) waits in the decode state for the run it belongs to.
    if (!utf8::is_valid(bytes) || !state.byte_run.empty()) ids.push_back(token);
  }
  return ids;
}

void check_tokenizer(const Tokenizer& tokenizer) {
  // The corpus in full and cut after every token (so the text may end inside a character).
  for (const char* text : kMultilingual) {
    const std::vector<int32_t> ids = tokenizer.encode(text, false);
    for (std::size_t n = 1; n <= ids.size(); ++n) {
      for (const StreamCase& stream : kCases) {
        ASSERT_EQ(stream_roundtrip_problem(tokenizer, std::span(ids).first(n), stream), "")
            << text << " cut after " << n << " of " << ids.size() << " tokens";
      }
    }
  }
  // Random sequences of the whole vocabulary, half their ids partial characters.
  const std::vector<int32_t> partial = partial_character_ids(tokenizer);
  ASSERT_FALSE(partial.empty());
  std::mt19937 random(20261124);
  std::uniform_int_distribution<int32_t> any_id(0,
                                                static_cast<int32_t>(tokenizer.vocab_size()) - 1);
  std::uniform_int_distribution<std::size_t> any_partial(0, partial.size() - 1);
  std::uniform_int_distribution<int> length(1, 48);
  std::vector<int32_t> ids;
  for (int sequence = 0; sequence < 2000; ++sequence) {
    ids.resize(static_cast<std::size_t>(length(random)));
    for (int32_t& id : ids) id = random() % 2 ? any_id(random) : partial[any_partial(random)];
    const StreamCase& stream = kCases[static_cast<std::size_t>(sequence) % std::size(kCases)];
    ASSERT_EQ(stream_roundtrip_problem(tokenizer, ids, stream), "") << "sequence " << sequence;
  }
}

TEST(StreamText, EveryByteArrivesOnceOnAByteLevelVocabulary) {
  auto tokenizer =
      Tokenizer::from_tokenizer_json(test_data("tokenizer/smollm2_tokenizer.json").string());
  check_tokenizer(*tokenizer);
}

TEST(StreamText, EveryByteArrivesOnceOnAByteFallbackVocabulary) {
  const std::filesystem::path gemma = testing::gemma_model_path();
  if (!std::filesystem::exists(gemma)) {
    GTEST_SKIP() << gemma << " is absent (scripts/setup fetches it)";
  }
  GgufFile gguf(gemma.string());
  check_tokenizer(*Tokenizer::from_gguf(gguf));
}

}  // namespace
}  // namespace xlacel
