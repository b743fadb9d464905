// Grammar-constrained decoding on the real vocabularies (SmolLM2's byte-level BPE, Gemma 3's
// SentencePiece with byte fallback): the bytes xgrammar matches tokens by, the mask and the
// matcher walking valid JSON, refusals of schema keywords xgrammar cannot enforce, and the time
// one mask takes (printed: the figures of docs/ARCHITECTURE.md).
#include <gtest/gtest.h>
#include <xgrammar/xgrammar.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "grammar/grammar_compiler.h"
#include "grammar/grammar_matcher.h"
#include "grammar/grammar_vocabulary.h"
#include "model_files/model_files.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace xlacel {
namespace {

using grammar::GrammarCompiler;
using grammar::GrammarMatcher;

struct LoadedModel {
  std::unique_ptr<Tokenizer> tokenizer;
  int64_t vocab_size = 0;
  std::vector<int32_t> eos_ids;
};

LoadedModel load(const std::string& path) {
  ModelFiles model = ModelFiles::open(path);
  LoadedModel loaded;
  loaded.tokenizer = Tokenizer::from_gguf(*model.gguf());
  loaded.vocab_size = model.config().vocab_size;
  loaded.eos_ids.assign(model.config().eos_token_ids.begin(), model.config().eos_token_ids.end());
  return loaded;
}

// Every non-special token's bytes, as grammar_vocabulary gives them, equal what xgrammar's own
// decoder makes of the vocabulary string for that kind of vocabulary.
void expect_vocabulary_matches_xgrammar(const LoadedModel& model, xgrammar::VocabType type) {
  const std::vector<std::string> ours =
      grammar::grammar_vocabulary(*model.tokenizer, model.vocab_size);
  std::vector<std::string> encoded;
  for (int64_t id = 0; id < model.vocab_size; ++id) {
    encoded.emplace_back(model.tokenizer->token_text(static_cast<int32_t>(id)));
  }
  const xgrammar::TokenizerInfo info(encoded, type, static_cast<int>(model.vocab_size),
                                     std::vector<int32_t>{});
  const std::vector<std::string>& theirs = info.GetDecodedVocab();
  ASSERT_EQ(theirs.size(), ours.size());
  int64_t checked = 0, differ = 0;
  for (std::size_t id = 0; id < ours.size(); ++id) {
    if (model.tokenizer->is_special(static_cast<int32_t>(id))) {
      EXPECT_EQ(ours[id], "") << "special token " << id;
      continue;
    }
    ++checked;
    if (ours[id] != theirs[id]) {
      if (++differ <= 5)
        ADD_FAILURE() << "token " << id << ": '" << ours[id] << "' vs '" << theirs[id] << "'";
    }
  }
  EXPECT_EQ(differ, 0);
  EXPECT_GT(checked, model.vocab_size / 2);
}

TEST(GrammarVocabulary, SmolLm2IsByteLevel) {
  XLACEL_REQUIRE_DEFAULT_MODEL(path);
  expect_vocabulary_matches_xgrammar(load(path), xgrammar::VocabType::BYTE_LEVEL);
}

TEST(GrammarVocabulary, GemmaIsByteFallback) {
  const std::string path = testing::gemma_model_path().string();
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not found (run scripts/setup)";
  expect_vocabulary_matches_xgrammar(load(path), xgrammar::VocabType::BYTE_FALLBACK);
}

// Feeds the tokens of `text` one by one: each must be allowed by the mask before it is accepted;
// returns the matcher after them.
void walk(GrammarMatcher& matcher, const Tokenizer& tokenizer, const std::string& text) {
  for (int32_t token : tokenizer.encode(text, false)) {
    ASSERT_TRUE(matcher.allows(token)) << "token " << token << " of " << text;
    ASSERT_TRUE(matcher.accept(token));
  }
}

constexpr const char* kPersonSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "age": {"type": "integer", "minimum": 0},
    "city": {"enum": ["Paris", "Zürich", "東京"]},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3}
  },
  "required": ["name", "age", "city"]
})";

class GrammarOnSmolLm2 : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = testing::default_model_path();
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "default model not found at " << path;
    model_ = load(path);
    compiler_ =
        std::make_unique<GrammarCompiler>(*model_.tokenizer, model_.vocab_size, model_.eos_ids);
  }
  int32_t eos() const { return model_.eos_ids.front(); }

  LoadedModel model_;
  std::unique_ptr<GrammarCompiler> compiler_;
};

TEST_F(GrammarOnSmolLm2, SchemaAllowsValidJsonAndEosOnlyAtTheEnd) {
  GrammarMatcher matcher(compiler_->json_schema(kPersonSchema, "schema"), model_.eos_ids);
  EXPECT_FALSE(matcher.allows(eos()));
  EXPECT_FALSE(matcher.allows(model_.tokenizer->encode("Hello", false).front()));
  walk(matcher, *model_.tokenizer, R"({"name": "Zoë", "age": 31, "city": "東京")");
  EXPECT_FALSE(matcher.allows(eos()));
  walk(matcher, *model_.tokenizer, "}");
  EXPECT_TRUE(matcher.allows(eos()));
  // Complete: nothing but the end of the sequence may follow.
  EXPECT_FALSE(matcher.allows(model_.tokenizer->encode(" ", false).front()));
  EXPECT_FALSE(matcher.terminated());
  EXPECT_TRUE(matcher.accept(eos()));
  EXPECT_TRUE(matcher.terminated());
}

TEST_F(GrammarOnSmolLm2, MaskSetsForbiddenLogitsToMinusInfinity) {
  GrammarMatcher matcher(compiler_->json_schema(kPersonSchema, "schema"), model_.eos_ids);
  std::vector<float> logits(static_cast<std::size_t>(model_.vocab_size), 0.5f);
  matcher.apply_mask(logits);
  const auto allowed = std::count_if(logits.begin(), logits.end(), [](float logit) {
    return logit > -std::numeric_limits<float>::infinity();
  });
  EXPECT_GT(allowed, 0);
  EXPECT_LT(allowed, 100);  // '{' and a few tokens that start with it
  const int32_t brace = model_.tokenizer->encode("{", false).front();
  EXPECT_EQ(logits[static_cast<std::size_t>(brace)], 0.5f);
  EXPECT_FALSE(matcher.accept(model_.tokenizer->encode("[", false).front()));
}

TEST_F(GrammarOnSmolLm2, WithoutStopIdsTheGrammarEndsTheRequest) {
  GrammarMatcher matcher(compiler_->json_object(), {});
  walk(matcher, *model_.tokenizer, R"({"a": [1, true, null]})");
  EXPECT_TRUE(matcher.terminated());
}

TEST_F(GrammarOnSmolLm2, JsonObjectAndBuiltinJson) {
  GrammarMatcher object(compiler_->json_object(), model_.eos_ids);
  EXPECT_FALSE(object.allows(model_.tokenizer->encode("[", false).front()));
  walk(object, *model_.tokenizer, R"({"x": {"y": "z"}, "n": -1.5e3})");
  EXPECT_TRUE(object.allows(eos()));
  GrammarMatcher any(compiler_->builtin_json(), model_.eos_ids);
  walk(any, *model_.tokenizer, "[1, 2]");
  EXPECT_TRUE(any.allows(eos()));
}

TEST_F(GrammarOnSmolLm2, StructuralTagConstrainsTheTaggedRegion) {
  const std::string tag = R"({"type": "structural_tag", "format": {"type": "triggered_tags",
    "triggers": ["<tool_call>"], "tags": [{"begin": "<tool_call>", "content": {"type": "json_schema",
    "json_schema": {"type": "object", "properties": {"city": {"type": "string"}},
    "required": ["city"]}}, "end": "</tool_call>"}]}})";
  GrammarMatcher matcher(compiler_->structural_tag(tag, "tools"), model_.eos_ids);
  walk(matcher, *model_.tokenizer, "Let me look. <tool_call>");
  EXPECT_FALSE(matcher.allows(model_.tokenizer->encode("Hello", false).front()));
  walk(matcher, *model_.tokenizer, R"({"city": "Paris"}</tool_call>)");
}

TEST_F(GrammarOnSmolLm2, UnsupportedKeywordsAreRefusedByName) {
  const auto message = [&](const std::string& schema) {
    try {
      compiler_->json_schema(schema, "schema");
    } catch (const Error& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(R"({"type": "object", "properties": {"tags": {"type": "array",
                       "uniqueItems": true}}})"),
            "schema: the keyword 'uniqueItems' at /properties/tags is not supported by "
            "constrained decoding");
  EXPECT_EQ(message(R"({"not": {"type": "string"}})"),
            "schema: the keyword 'not' at the root is not supported by constrained decoding");
  EXPECT_EQ(message(R"({"type": "number", "multipleOf": 0.5})"),
            "schema: the keyword 'multipleOf' at the root is not supported by constrained "
            "decoding");
  EXPECT_EQ(
      message(R"({"anyOf": [{"type": "string"}, {"allOf": [{"minimum": 1}, {"maximum": 2}]}]})"),
      "schema: the keyword 'allOf' at /anyOf/1 is not supported by constrained decoding");
  EXPECT_EQ(message("{"),
            "schema: invalid JSON: parse error at line 1, column 2: syntax error "
            "while parsing object key - unexpected end of input; expected string "
            "literal");
  EXPECT_EQ(message("[1]"), "schema: must be a JSON schema (an object), got array");
  // What xgrammar itself refuses keeps its message, named by the field.
  const std::string bad_type = message(R"({"type": "strin"})");
  EXPECT_EQ(bad_type.rfind("schema: ", 0), 0u) << bad_type;
  EXPECT_NE(bad_type.find("strin"), std::string::npos) << bad_type;
  // Annotations and enforced keywords pass.
  EXPECT_EQ(message(R"({"title": "T", "description": "d", "type": "integer", "multipleOf": 5,
                       "minimum": 0, "maximum": 100})"),
            "no error");
}

// The time FillNextTokenBitmask takes per token along a valid instance, for three schemas of
// growing size (printed as p50/p99 in microseconds).
TEST_F(GrammarOnSmolLm2, MaskTimePerStep) {
  struct Case {
    const char* name;
    std::string schema;
    std::string instance;
  };
  std::string big_schema = R"({"type": "object", "properties": {)";
  std::string big_instance = "{";
  for (int i = 0; i < 20; ++i) {
    if (i > 0) {
      big_schema += ", ";
      big_instance += ", ";
    }
    big_schema += "\"field" + std::to_string(i) + R"(": {"type": "object", "properties": {"id":
      {"type": "integer"}, "label": {"type": "string", "maxLength": 40}, "kind": {"enum": ["a", "b",
      "c"]}, "values": {"type": "array", "items": {"type": "number"}}}, "required": ["id", "label",
      "kind", "values"]})";
    big_instance += "\"field" + std::to_string(i) + R"(": {"id": )" + std::to_string(i) +
                    R"(, "label": "item number )" + std::to_string(i) +
                    R"(", "kind": "b", "values": [1.5, -2, 3e2]})";
  }
  big_schema += "}, \"required\": [\"field0\"]}";
  big_instance += "}";
  const std::vector<Case> cases = {
      {"small", R"({"type": "object", "properties": {"answer": {"type": "string"}},
                   "required": ["answer"]})",
       R"({"answer": "The capital of France is Paris, a city on the Seine."})"},
      {"medium", kPersonSchema,
       R"({"name": "Ada Lovelace", "age": 36, "city": "Paris", "tags": ["math", "poetry"]})"},
      {"large", big_schema, big_instance},
  };
  for (const Case& c : cases) {
    const auto compile_start = std::chrono::steady_clock::now();
    auto compiled = compiler_->json_schema(c.schema, c.name);
    const double compile_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - compile_start)
            .count();
    GrammarMatcher matcher(compiled, model_.eos_ids);
    std::vector<float> logits(static_cast<std::size_t>(model_.vocab_size), 0.0f);
    std::vector<double> micros;
    for (int32_t token : model_.tokenizer->encode(c.instance, false)) {
      const auto start = std::chrono::steady_clock::now();
      matcher.apply_mask(logits);
      micros.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
              .count());
      ASSERT_TRUE(matcher.accept(token)) << c.name;
    }
    ASSERT_TRUE(matcher.allows(eos())) << c.name;
    std::sort(micros.begin(), micros.end());
    const auto at = [&](double q) {
      return micros[std::min(micros.size() - 1,
                             static_cast<std::size_t>(q * static_cast<double>(micros.size())))];
    };
    std::printf(
        "mask %-6s schema %5zu bytes: compile %.1f ms, %zu steps, mask+apply p50 %.1f us, "
        "p99 %.1f us\n",
        c.name, c.schema.size(), compile_ms, micros.size(), at(0.5), at(0.99));
  }
}

}  // namespace
}  // namespace xlacel
