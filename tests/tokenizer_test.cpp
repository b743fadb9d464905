// The tokenizer against HF references (tools/reference/tokenizer.py): every corpus entry, id for
// id, through the tokenizer.json route (base file and patched variants) and the GGUF route, plus
// decoding, streaming and malformed-input errors.
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "common/json_file.h"
#include "common/utf8.h"
#include "model_files/gguf_file.h"
#include "test_paths.h"
#include "tokenizer/auto_tokenizer_class.h"

namespace xlacel {
namespace {

using ::xlacel::testing::gemma_model_path;
using ::xlacel::testing::scratch_dir;
using ::xlacel::testing::test_data;

const Json& corpus() {
  static const Json json = read_json_file(test_data("tokenizer/corpus.json").string());
  return json;
}

const Json& expected() {
  static const Json json = read_json_file(test_data("tokenizer/expected.json").string());
  return json;
}

const Json& base_tokenizer_json() {
  static const Json json = read_json_file(test_data("tokenizer/smollm2_tokenizer.json").string());
  return json;
}

std::string printable(std::string_view text) {
  std::string out;
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7F) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += c;
    }
  }
  return out;
}

std::string ids_text(const std::vector<int32_t>& ids) {
  return fmt::format("[{}]", fmt::join(ids, ", "));
}

// Fails (with the first differing position) unless `actual` equals `want`.
void expect_same_ids(const std::vector<int32_t>& want, const std::vector<int32_t>& actual,
                     const std::string& label) {
  if (want == actual) return;
  std::size_t i = 0;
  while (i < want.size() && i < actual.size() && want[i] == actual[i]) ++i;
  ADD_FAILURE() << label << ": ids differ at position " << i << " (expected "
                << (i < want.size() ? std::to_string(want[i]) : "end") << ", got "
                << (i < actual.size() ? std::to_string(actual[i]) : "end") << ")\n  expected "
                << ids_text(want) << "\n  actual   " << ids_text(actual);
}

// Compares every corpus entry against `reference` (ids, ids without special tokens, decoded text);
// returns the number of mismatching entries.
int check_against_reference(const Tokenizer& tokenizer, const Json& reference,
                            const std::string& key) {
  const Json& texts = corpus();
  EXPECT_EQ(texts.size(), reference.at("ids").size());
  int mismatches = 0;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const auto& text = texts[i].get_ref<const std::string&>();
    std::string label = fmt::format("{} entry {} \"{}\"", key, i, printable(text));
    auto want = reference.at("ids")[i].get<std::vector<int32_t>>();
    auto want_plain = reference.at("ids_no_special")[i].get<std::vector<int32_t>>();
    auto ids = tokenizer.encode(text, true);
    auto plain = tokenizer.encode(text, false);
    expect_same_ids(want, ids, label + " (add_special_tokens)");
    expect_same_ids(want_plain, plain, label + " (no special tokens)");
    std::string decoded = tokenizer.decode(ids);
    std::string decoded_skip = tokenizer.decode(ids, true);
    EXPECT_EQ(reference.at("decoded")[i].get<std::string>(), decoded) << label;
    EXPECT_EQ(reference.at("decoded_skip_special")[i].get<std::string>(), decoded_skip) << label;
    if (want != ids || want_plain != plain) ++mismatches;
  }
  return mismatches;
}

int check_against_reference(const Tokenizer& tokenizer, const std::string& key) {
  return check_against_reference(tokenizer, expected().at(key), key);
}

// decode(encode(x)) == x (unless the pre-tokenizer drops or adds text), and streaming one id at
// a time yields valid UTF-8 that concatenates to decode().
void check_round_trip_and_stream(const Tokenizer& tokenizer, const std::string& label,
                                 bool lossless = true, bool metaspace_vocabulary = false) {
  int held_back = 0;
  for (const Json& entry : corpus()) {
    const auto& text = entry.get_ref<const std::string&>();
    auto ids = tokenizer.encode(text, false);
    // A SentencePiece vocabulary spells spaces as U+2581, so a literal U+2581 decodes to a
    // space (as in transformers): those texts cannot round-trip.
    const bool has_metaspace = text.find("\xE2\x96\x81") != std::string::npos;
    if (lossless && !(has_metaspace && metaspace_vocabulary)) {
      EXPECT_EQ(text, tokenizer.decode(ids))
          << label << ": round trip of \"" << printable(text) << "\"";
    }
    for (bool skip : {false, true}) {
      StreamDecoder stream(tokenizer, skip);
      std::string joined;
      for (int32_t id : ids) {
        std::string piece = stream.feed(id);
        EXPECT_TRUE(utf8::is_valid(piece)) << label << ": stream piece for id " << id;
        if (piece.empty()) ++held_back;
        joined += piece;
      }
      joined += stream.flush();
      EXPECT_EQ(tokenizer.decode(ids, skip), joined)
          << label << ": stream of \"" << printable(text) << "\"";
    }
  }
  // The corpus has characters spread over several byte tokens, so some feeds must wait.
  EXPECT_GT(held_back, 0) << label;
}

std::filesystem::path write_scratch(const std::string& directory, const std::string& name,
                                    const std::string& content) {
  auto path = scratch_dir(directory) / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  return path;
}

std::filesystem::path write_variant(const std::string& name) {
  const Json patches = read_json_file(test_data("tokenizer/variants.json").string());
  const Json& patch = patches.at(name);
  Json data = base_tokenizer_json();
  for (const auto& [key, value] : patch.items()) {
    if (key == "model") {
      for (const auto& [field, setting] : value.items()) data["model"][field] = setting;
    } else {
      data[key] = value;
    }
  }
  return write_scratch("tokenizer_variant_" + name, "tokenizer.json", data.dump());
}

TEST(TokenizerReference, TokenizerJsonBase) {
  auto tokenizer =
      Tokenizer::from_tokenizer_json(test_data("tokenizer/smollm2_tokenizer.json").string());
  EXPECT_EQ(check_against_reference(*tokenizer, "json_base"), 0);
  check_round_trip_and_stream(*tokenizer, "json_base");
}

class TokenizerVariant : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerVariant, MatchesTokenizersLibrary) {
  auto tokenizer = Tokenizer::from_tokenizer_json(write_variant(GetParam()).string());
  EXPECT_EQ(check_against_reference(*tokenizer, "json_" + GetParam()), 0);
  // "splits" removes text (Removed behaviour) and adds a prefix space by design.
  check_round_trip_and_stream(*tokenizer, GetParam(), GetParam() != "splits");
}

INSTANTIATE_TEST_SUITE_P(Variants, TokenizerVariant,
                         ::testing::Values("hub_smollm2", "llama3", "splits"));

TEST(TokenizerReference, TinyLlamaBpeTokenizerJson) {
  auto tokenizer =
      Tokenizer::from_tokenizer_json(test_data("tokenizer/tiny_llama_bpe.tokenizer.json").string());
  EXPECT_EQ(check_against_reference(*tokenizer, "json_tiny"), 0);
}

TEST(TokenizerReference, TinyLlamaBpeGguf) {
  GgufFile gguf(test_data("tokenizer/tiny_llama_bpe.gguf").string());
  auto tokenizer = Tokenizer::from_gguf(gguf);
  EXPECT_EQ(check_against_reference(*tokenizer, "tiny_gguf"), 0);
  EXPECT_EQ(tokenizer->vocab_size(),
            expected().at("tiny_gguf").at("vocab_size").get<std::size_t>());
  EXPECT_EQ(tokenizer->bos_token_id(), 1);
  EXPECT_EQ(tokenizer->token_id("<think>"), 1200);
  EXPECT_FALSE(tokenizer->is_special(1200));
  // Added but not special: kept by skip_special_tokens.
  std::vector<int32_t> ids = tokenizer->encode("<think>x</think>", true);
  EXPECT_EQ(tokenizer->decode(ids, true), "<think>x</think>");
  check_round_trip_and_stream(*tokenizer, "tiny_gguf");
}

TEST(TokenizerReference, SmolLm2Gguf) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model_path);
  GgufFile gguf(model_path);
  auto tokenizer = Tokenizer::from_gguf(gguf);
  EXPECT_EQ(check_against_reference(*tokenizer, "gguf"), 0);
  EXPECT_EQ(tokenizer->vocab_size(), expected().at("gguf").at("vocab_size").get<std::size_t>());
  EXPECT_EQ(tokenizer->bos_token_id(), 1);
  EXPECT_EQ(tokenizer->eos_token_id(), 2);
  std::string summary = tokenizer->describe();
  EXPECT_NE(summary.find("49152"), std::string::npos) << summary;
  EXPECT_NE(summary.find("48900"), std::string::npos) << summary;
  check_round_trip_and_stream(*tokenizer, "gguf");
}

class SmolLm2Json : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tokenizer_ =
        Tokenizer::from_tokenizer_json(test_data("tokenizer/smollm2_tokenizer.json").string())
            .release();
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    tokenizer_ = nullptr;
  }
  static const Tokenizer& tok() { return *tokenizer_; }
  static Tokenizer* tokenizer_;
};
Tokenizer* SmolLm2Json::tokenizer_ = nullptr;

TEST_F(SmolLm2Json, SpecialTokensInText) {
  EXPECT_EQ(tok().token_id("<|im_start|>"), 1);
  EXPECT_EQ(tok().token_text(2), "<|im_end|>");
  EXPECT_TRUE(tok().is_special(0));
  EXPECT_FALSE(tok().is_special(17));
  auto ids = tok().encode("<|im_start|>user\nHi<|im_end|>", false);
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids.front(), 1);
  EXPECT_EQ(ids.back(), 2);
  EXPECT_EQ(tok().decode(ids), "<|im_start|>user\nHi<|im_end|>");
  EXPECT_EQ(tok().decode(ids, true), "user\nHi");
  // A near miss is ordinary text.
  auto near = tok().encode("<|im_start|", false);
  EXPECT_EQ(std::count(near.begin(), near.end(), 1), 0);
}

TEST_F(SmolLm2Json, VocabularyAccessors) {
  EXPECT_EQ(tok().vocab_size(), 49152u);
  EXPECT_EQ(tok().token_text(-1), "");
  EXPECT_EQ(tok().token_text(49152), "");
  EXPECT_FALSE(tok().token_id("definitely not a token").has_value());
  EXPECT_EQ(tok().token_id(tok().token_text(1000)), 1000);
}

TEST_F(SmolLm2Json, StreamDecoderHoldsPartialCharacters) {
  // The byte tokens of "€" (E2 82 AC), found through the bytes each id decodes to.
  std::vector<int32_t> single_bytes;
  for (char byte : std::string("\xE2\x82\xAC")) {
    for (int32_t id = 0; id < static_cast<int32_t>(tok().vocab_size()); ++id) {
      std::string piece;
      Tokenizer::DecodeState state;
      tok().append_token_bytes(id, false, state, piece);
      if (piece.size() == 1 && piece[0] == byte) {
        single_bytes.push_back(id);
        break;
      }
    }
  }
  ASSERT_EQ(single_bytes.size(), 3u);
  StreamDecoder stream(tok());
  EXPECT_EQ(stream.feed(single_bytes[0]), "");
  EXPECT_EQ(stream.feed(single_bytes[1]), "");
  EXPECT_EQ(stream.feed(single_bytes[2]), "€");
  EXPECT_EQ(stream.flush(), "");
  // An unfinished character at the end becomes U+FFFD, as decode() makes it.
  EXPECT_EQ(stream.feed(single_bytes[0]), "");
  EXPECT_EQ(stream.flush(), "\xEF\xBF\xBD");
  std::vector<int32_t> cut{single_bytes[0], single_bytes[1]};
  EXPECT_EQ(tok().decode(cut), "\xEF\xBF\xBD");
  // A lone continuation byte is invalid at once and is not held back.
  EXPECT_EQ(stream.feed(single_bytes[2]), "\xEF\xBF\xBD");
  // An unfinished character followed by ASCII: one U+FFFD, then the ASCII.
  EXPECT_EQ(stream.feed(single_bytes[0]), "");
  auto a = tok().encode("a", false);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(stream.feed(a[0]),
            "\xEF\xBF\xBD"
            "a");
}

TEST(Utf8Lossy, MatchesPythonReplace) {
  // Python: b"a\xe2\x82b\xf0\x9f\x98\xc0\xed\xa0\x80z".decode("utf-8", "replace")
  std::string out;
  decode_utf8_lossy(
      "a\xE2\x82"
      "b\xF0\x9F\x98\xC0\xED\xA0\x80z",
      true, out);
  EXPECT_EQ(out,
            "a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDz");
}

TEST_F(SmolLm2Json, InvalidUtf8InputIsAnError) {
  EXPECT_THROW(tok().encode("abc\xFF"), Error);
}

// --- malformed and unsupported tokenizer.json files --------------------------------------------

Json minimal_tokenizer() {
  return Json::parse(R"({
    "version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [{"id": 5, "content": "<s>", "single_word": false, "lstrip": false,
                      "rstrip": false, "normalized": false, "special": true}],
    "normalizer": null,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
    "post_processor": null,
    "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
    "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": "",
              "end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
              "vocab": {"a": 0, "b": 1, "ab": 2, "Ġ": 3, "Ġab": 4, "<s>": 5},
              "merges": ["a b", ["Ġ", "ab"]]}
  })");
}

void expect_error_naming_file(const std::string& name, const std::string& content,
                              const std::string& problem) {
  auto path = write_scratch("tokenizer_malformed", name, content);
  try {
    Tokenizer::from_tokenizer_json(path.string());
    ADD_FAILURE() << name << ": no error";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find(path.string()), std::string::npos) << name << ": " << message;
    EXPECT_NE(message.find(problem), std::string::npos) << name << ": " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << name << ": " << message;
  }
}

TEST(TokenizerJsonErrors, MinimalFileWorks) {
  auto path = write_scratch("tokenizer_malformed", "minimal.json", minimal_tokenizer().dump());
  auto tokenizer = Tokenizer::from_tokenizer_json(path.string());
  EXPECT_EQ(tokenizer->encode("ab ab<s>", false), (std::vector<int32_t>{2, 4, 5}));
  EXPECT_EQ(tokenizer->decode(std::vector<int32_t>{2, 4, 5}), "ab ab<s>");
}

TEST(TokenizerJsonErrors, EachMalformedFileNamesTheFile) {
  std::string text = minimal_tokenizer().dump();
  expect_error_naming_file("truncated.json", text.substr(0, text.size() / 2), "invalid JSON");
  expect_error_naming_file("not_object.json", "[1, 2]", "must be an object");
  {
    Json j = minimal_tokenizer();
    j["model"]["vocab"] = Json::array({"a", "b"});
    expect_error_naming_file("vocab_array.json", j.dump(), "model.vocab must be an object");
  }
  {
    Json j = minimal_tokenizer();
    j["model"]["vocab"]["a"] = "zero";
    expect_error_naming_file("vocab_id_string.json", j.dump(), "integer id");
  }
  {
    Json j = minimal_tokenizer();
    j["model"]["vocab"]["a"] = -3;
    expect_error_naming_file("vocab_id_negative.json", j.dump(), "out of range");
  }
  {
    Json j = minimal_tokenizer();
    j["model"]["vocab"]["a"] = int64_t{1} << 40;
    expect_error_naming_file("vocab_id_huge.json", j.dump(), "out of range");
  }
  {
    Json j = minimal_tokenizer();
    j["model"]["vocab"]["b"] = 0;
    expect_error_naming_file("vocab_id_twice.json", j.dump(), "given to both");
  }
  {
    Json j = minimal_tokenizer();
    j["model"]["merges"].push_back("a zz");
    expect_error_naming_file("merge_unknown.json", j.dump(), "not in the vocabulary");
  }
  {
    Json j = minimal_tokenizer();
    j["model"]["merges"].push_back("b a");  // "ba" is not a token
    expect_error_naming_file("merge_result_unknown.json", j.dump(), "'ba'");
  }
  {
    Json j = minimal_tokenizer();
    j["model"]["merges"].push_back("a b c");
    expect_error_naming_file("merge_three.json", j.dump(), "model.merges[2]");
  }
  {
    Json j = minimal_tokenizer();
    j["model"]["merges"].push_back(7);
    expect_error_naming_file("merge_number.json", j.dump(), "model.merges[2]");
  }
  {
    Json j = minimal_tokenizer();
    j.erase("model");
    expect_error_naming_file("no_model.json", j.dump(), "has no 'model'");
  }
  {
    Json j = minimal_tokenizer();
    j["added_tokens"][0]["id"] = "5";
    expect_error_naming_file("added_id_string.json", j.dump(), "added_tokens[0].id");
  }
  {
    Json j = minimal_tokenizer();
    j["added_tokens"][0]["id"] = 3;
    expect_error_naming_file("added_id_wrong.json", j.dump(), "has id 3");
  }
  {
    Json j = minimal_tokenizer();
    j["added_tokens"][0]["special"] = "yes";
    expect_error_naming_file("added_flag_string.json", j.dump(), "must be a boolean");
  }
  {
    Json j = minimal_tokenizer();
    j["pre_tokenizer"]["type"] = 12;
    expect_error_naming_file("pre_type_number.json", j.dump(),
                             "pre_tokenizer.type must be a string");
  }
  {
    Json j = minimal_tokenizer();
    j["pre_tokenizer"] = {
        {"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
    expect_error_naming_file("bad_regex.json", j.dump(), "does not compile");
  }
  {
    Json j = minimal_tokenizer();
    j["pre_tokenizer"] = {
        {"type", "Split"}, {"pattern", {{"Regex", "x"}}}, {"behavior", "Sideways"}};
    expect_error_naming_file("bad_behavior.json", j.dump(), "Sideways");
  }
  {
    Json j = minimal_tokenizer();
    j["post_processor"] = Json::parse(R"({"type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [99], "tokens": ["<s>"]}}})");
    expect_error_naming_file("post_id_unknown.json", j.dump(), "post-processor id 99");
  }
}

TEST(TokenizerJsonErrors, UnsupportedConstructsAreNamed) {
  {
    Json j = minimal_tokenizer();
    j["normalizer"] = {{"type", "NFKC"}};
    expect_error_naming_file("nfkc.json", j.dump(), "normalizer type 'NFKC' is not supported");
  }
  {
    Json j = minimal_tokenizer();
    j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "▁▁"}};
    expect_error_naming_file("metaspace.json", j.dump(), "replacement must be one character");
  }
  {
    Json j = minimal_tokenizer();
    j["decoder"] = {{"type", "Sequence"},
                    {"decoders", Json::array({{{"type", "ByteFallback"}}, {{"type", "Strip"}}})}};
    expect_error_naming_file("sequence.json", j.dump(), "decoder sequence [ByteFallback, Strip]");
  }
  {
    Json j = minimal_tokenizer();
    j["model"]["type"] = "WordPiece";
    expect_error_naming_file("wordpiece.json", j.dump(), "'WordPiece' is not supported");
  }
  {
    Json j = minimal_tokenizer();
    j["model"]["dropout"] = 0.1;
    expect_error_naming_file("dropout.json", j.dump(), "dropout");
  }
  {
    Json j = minimal_tokenizer();
    j["decoder"] = {{"type", "WordPiece"}};
    expect_error_naming_file("decoder.json", j.dump(), "decoder type 'WordPiece'");
  }
  {
    Json j = minimal_tokenizer();
    j["post_processor"] = {{"type", "Mystery"}};
    expect_error_naming_file("post.json", j.dump(), "post-processor type 'Mystery'");
  }
}

TEST(TokenizerJsonErrors, MissingFileIsAnError) {
  EXPECT_THROW(Tokenizer::from_tokenizer_json("/nonexistent/tokenizer.json"), Error);
}

// transformers 5 drops add_bos_token / add_eos_token when a tokenizer.json exists: its
// post-processor (here none) decides what is added.
TEST(TokenizerJsonConfig, TokenizerConfigNamesBosButTokenizerJsonAddsIt) {
  auto dir = scratch_dir("tokenizer_config_bos");
  write_scratch("tokenizer_config_bos", "tokenizer.json", minimal_tokenizer().dump());
  write_scratch("tokenizer_config_bos", "tokenizer_config.json",
                R"({"bos_token": "<s>", "eos_token": {"content": "<s>"}, "add_bos_token": true})");
  auto tokenizer = Tokenizer::from_tokenizer_json((dir / "tokenizer.json").string());
  EXPECT_EQ(tokenizer->encode("ab", true), (std::vector<int32_t>{2}));
  EXPECT_EQ(tokenizer->encode("ab", false), (std::vector<int32_t>{2}));
  EXPECT_EQ(tokenizer->bos_token_id(), 5);
}

// HF directories whose config.json model_type (and tokenizer_config.json tokenizer_class) make
// AutoTokenizer load a class that rebuilds tokenizer.json's normalizer, pre-tokenizer and
// decoder (tests/data/tokenizer/model_types.json): the whole corpus, id for id.
const Json& model_type_routes() {
  static const Json json = read_json_file(test_data("tokenizer/model_types.json").string());
  return json;
}

class TokenizerModelType : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerModelType, MatchesAutoTokenizerOnTheCorpus) {
  const Json& route = model_type_routes().at(GetParam());
  const std::string directory = "tokenizer_model_type_" + GetParam();
  std::ifstream source(test_data(route.at("tokenizer_json").get<std::string>()), std::ios::binary);
  std::stringstream tokenizer_json;
  tokenizer_json << source.rdbuf();
  auto path = write_scratch(directory, "tokenizer.json", tokenizer_json.str());
  write_scratch(directory, "config.json", route.at("config").dump());
  write_scratch(directory, "tokenizer_config.json", route.at("tokenizer_config").dump());
  auto tokenizer = Tokenizer::from_tokenizer_json(path.string());
  const std::string class_name = route.at("class").get<std::string>();
  EXPECT_NE(tokenizer->describe().find("as " + class_name), std::string::npos)
      << tokenizer->describe();
  EXPECT_EQ(check_against_reference(*tokenizer, "hf_" + GetParam()), 0);
}

INSTANTIATE_TEST_SUITE_P(Routes, TokenizerModelType,
                         ::testing::Values("qwen2", "qwen3", "cohere", "olmoe", "starcoder2",
                                           "llama_sentencepiece", "gemma"));

TEST(TokenizerModelType, RoutesAreAllTested) {
  EXPECT_EQ(model_type_routes().size(), 7u);
}

// The class AutoTokenizer picks for each model_type x declared class x tokenizer.json kind
// (tests/data/tokenizer/class_choice.json).
TEST(AutoTokenizerClass, MatchesTransformersForEveryCombination) {
  const Json choices = read_json_file(test_data("tokenizer/class_choice.json").string());
  ASSERT_GT(choices.size(), 100u);
  for (const Json& choice : choices) {
    tokenizer::AutoTokenizerInputs inputs;
    if (choice.at("model_type").is_string()) inputs.model_type = choice.at("model_type");
    if (choice.at("declared").is_string()) inputs.declared_class = choice.at("declared");
    inputs.tokenizer_json_is_byte_level = choice.at("byte_level").get<bool>();
    EXPECT_EQ(tokenizer::auto_tokenizer_class(inputs), choice.at("class").get<std::string>())
        << choice.dump();
  }
}

TEST(AutoTokenizerClass, RemoteCodeLoadsTokenizerJsonAsWritten) {
  tokenizer::AutoTokenizerInputs inputs;
  inputs.model_type = "qwen3";
  inputs.remote_code = true;
  EXPECT_EQ(tokenizer::auto_tokenizer_class(inputs), "TokenizersBackend");
}

TEST(AutoTokenizerClass, AClassXlacelDoesNotMirrorIsAnError) {
  auto dir = scratch_dir("tokenizer_unmirrored_class");
  write_scratch("tokenizer_unmirrored_class", "tokenizer.json", minimal_tokenizer().dump());
  write_scratch("tokenizer_unmirrored_class", "tokenizer_config.json",
                R"({"tokenizer_class": "BloomTokenizerFast"})");
  try {
    Tokenizer::from_tokenizer_json((dir / "tokenizer.json").string());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("tokenizer_config.json"), std::string::npos) << message;
    EXPECT_NE(message.find("BloomTokenizer"), std::string::npos) << message;
  }
}

TEST(GgufTokenizer, MalformedSentencePieceNamesTheKey) {
  std::string path = test_data("tokenizer/malformed_llama_spm.gguf").string();
  GgufFile gguf(path);
  try {
    Tokenizer::from_gguf(gguf);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find("tokenizer.ggml.scores is missing"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

// --- Gemma 3 270M: a sentencepiece ("llama") GGUF vocabulary --------------------------------

const Json& gemma_expected() {
  static const Json json = read_json_file(test_data("tokenizer/expected_gemma.json").string());
  return json;
}

class GemmaGguf : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(gemma_model_path())) return;
    GgufFile gguf(gemma_model_path().string());
    tokenizer_ = Tokenizer::from_gguf(gguf).release();
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    tokenizer_ = nullptr;
  }
  void SetUp() override {
    if (tokenizer_ == nullptr) {
      GTEST_SKIP() << gemma_model_path() << " is absent (scripts/setup fetches it)";
    }
  }
  static const Tokenizer& tok() { return *tokenizer_; }
  static Tokenizer* tokenizer_;
};
Tokenizer* GemmaGguf::tokenizer_ = nullptr;

TEST_F(GemmaGguf, MatchesTransformersOnTheCorpus) {
  ASSERT_EQ(gemma_expected().at("corpus_size").get<std::size_t>(), corpus().size())
      << "expected_gemma.json is stale: run tools/make_reference";
  EXPECT_EQ(check_against_reference(tok(), gemma_expected(), "gemma"), 0);
  EXPECT_EQ(tok().vocab_size(), gemma_expected().at("vocab_size").get<std::size_t>());
}

TEST_F(GemmaGguf, SpecialTokensAndBos) {
  EXPECT_EQ(tok().bos_token_id(), 2);
  EXPECT_EQ(tok().eos_token_id(), 1);
  EXPECT_EQ(tok().token_id("<start_of_turn>"), 105);
  EXPECT_TRUE(tok().is_special(105));
  // add_bos_token from the GGUF: BOS only with special tokens.
  EXPECT_EQ(tok().encode("", true), (std::vector<int32_t>{2}));
  EXPECT_EQ(tok().encode("", false), (std::vector<int32_t>{}));
  std::string summary = tok().describe();
  EXPECT_NE(summary.find("GemmaTokenizer"), std::string::npos) << summary;
}

TEST_F(GemmaGguf, ByteFallbackDecodesRunsAsTransformersDoes) {
  auto byte = [](int value) { return *tok().token_id(fmt::format("<0x{:02X}>", value)); };
  int32_t a = *tok().token_id("a");
  // A valid run is its text; an invalid run is one U+FFFD per byte (not per invalid subpart).
  std::vector<int32_t> valid{byte(0xF0), byte(0x9F), byte(0x98), byte(0x80), a};
  EXPECT_EQ(tok().decode(valid),
            "\xF0\x9F\x98\x80"
            "a");
  std::vector<int32_t> cut{byte(0xF0), byte(0x9F), a, byte(0xE2)};
  EXPECT_EQ(tok().decode(cut),
            "\xEF\xBF\xBD\xEF\xBF\xBD"
            "a\xEF\xBF\xBD");
  // Streaming holds a run until the token after it, since a later byte can spoil all of it.
  StreamDecoder stream(tok());
  EXPECT_EQ(stream.feed(byte(0xF0)), "");
  EXPECT_EQ(stream.feed(byte(0x9F)), "");
  EXPECT_EQ(stream.feed(byte(0x98)), "");
  EXPECT_EQ(stream.feed(byte(0x80)), "");
  EXPECT_EQ(stream.feed(a),
            "\xF0\x9F\x98\x80"
            "a");
  EXPECT_EQ(stream.feed(byte(0xE2)), "");
  EXPECT_EQ(stream.flush(), "\xEF\xBF\xBD");
}

TEST_F(GemmaGguf, RoundTripAndStream) {
  check_round_trip_and_stream(tok(), "gemma", true, true);
}

}  // namespace
}  // namespace xlacel
