#include "grammar/grammar_compiler.h"

#include <fmt/format.h>

#include <regex>
#include <thread>

#include "common/error.h"
#include "common/json_file.h"
#include "grammar/compiled_grammar.h"
#include "grammar/grammar_vocabulary.h"
#include "grammar/json_schema_support.h"

namespace xlacel::grammar {

namespace {

// Compiled grammars xgrammar keeps for reuse, at most (then it evicts the least recently used).
constexpr int64_t kCacheBytes = int64_t{512} << 20;

// xgrammar's errors read "[hh:mm:ss] path/file.cc:123: message\n": the message alone.
std::string xgrammar_message(const std::exception& error) {
  static const std::regex kPrefix(R"(^\[[0-9:]+\] [^ ]+:[0-9]+: )");
  std::string message = std::regex_replace(error.what(), kPrefix, "");
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) {
    message.pop_back();
  }
  std::replace(message.begin(), message.end(), '\n', ' ');
  return message;
}

}  // namespace

struct GrammarCompiler::Impl {
  Impl(const Tokenizer& tokenizer, int64_t vocab, std::vector<int32_t> stop_ids)
      : vocab_size(vocab),
        // Our tokenizer decodes the tokens (RAW: xgrammar takes the bytes as they are).
        compiler(
            xgrammar::TokenizerInfo(grammar_vocabulary(tokenizer, vocab), xgrammar::VocabType::RAW,
                                    static_cast<int>(vocab), std::move(stop_ids)),
            static_cast<int>(std::max(1u, std::thread::hardware_concurrency())), true,
            kCacheBytes) {}

  std::shared_ptr<const CompiledGrammar> wrap(xgrammar::CompiledGrammar compiled) const {
    return std::make_shared<const CompiledGrammar>(std::move(compiled), vocab_size);
  }

  int64_t vocab_size;
  xgrammar::GrammarCompiler compiler;
};

GrammarCompiler::GrammarCompiler(const Tokenizer& tokenizer, int64_t vocab_size,
                                 std::vector<int32_t> stop_ids)
    : impl_(std::make_unique<Impl>(tokenizer, vocab_size, std::move(stop_ids))) {}

GrammarCompiler::~GrammarCompiler() = default;

std::shared_ptr<const CompiledGrammar> GrammarCompiler::json_schema(std::string_view schema,
                                                                    std::string_view field) {
  const Json parsed = parse_json_text(schema, field);
  if (!parsed.is_object() && !parsed.is_boolean()) {
    fail(field, "must be a JSON schema (an object), got {}", parsed.type_name());
  }
  if (auto keyword = unsupported_schema_keyword(parsed)) {
    fail(field, "the keyword {} is not supported by constrained decoding", *keyword);
  }
  try {
    return impl_->wrap(impl_->compiler.CompileJSONSchema(std::string(schema),
                                                         /*any_whitespace=*/false));
  } catch (const std::exception& error) {
    fail(field, "{}", xgrammar_message(error));
  }
}

std::shared_ptr<const CompiledGrammar> GrammarCompiler::json_object() {
  return impl_->wrap(impl_->compiler.CompileJSONSchema(R"({"type": "object"})",
                                                       /*any_whitespace=*/false, std::nullopt,
                                                       std::nullopt, /*strict_mode=*/false));
}

std::shared_ptr<const CompiledGrammar> GrammarCompiler::builtin_json() {
  return impl_->wrap(impl_->compiler.CompileBuiltinJSONGrammar());
}

std::shared_ptr<const CompiledGrammar> GrammarCompiler::structural_tag(std::string_view tag_json,
                                                                       std::string_view field) {
  try {
    return impl_->wrap(impl_->compiler.CompileStructuralTag(std::string(tag_json)));
  } catch (const std::exception& error) {
    fail(field, "{}", xgrammar_message(error));
  }
}

}  // namespace xlacel::grammar
