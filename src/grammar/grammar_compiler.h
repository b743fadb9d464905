#pragma once
// Grammars for constrained decoding, compiled by xgrammar against one model's vocabulary: a JSON
// schema, any JSON object, xgrammar's builtin JSON grammar, or an xgrammar structural tag (tool
// calls: tags that open a constrained region, e.g. <tool_call> followed by arguments that match
// a schema). One compiler per loaded model; xgrammar caches what it compiled by the grammar's
// text (and options), so a schema sent again costs a lookup. Compiling may run on any thread,
// concurrently. A request turns a compiled grammar into its own GrammarMatcher
// (grammar/grammar_matcher.h).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace xlacel::grammar {

// A grammar compiled against one vocabulary (xgrammar's CompiledGrammar), shared by requests.
class CompiledGrammar;

class GrammarCompiler {
 public:
  // `vocab_size`: the width of the model's logits; `stop_ids`: the model's end-of-sequence ids
  // (a request may give its own to its matcher). Error naming the tokenizer when its tokens are
  // not byte pieces (grammar/grammar_vocabulary.h).
  GrammarCompiler(const Tokenizer& tokenizer, int64_t vocab_size, std::vector<int32_t> stop_ids);
  ~GrammarCompiler();
  GrammarCompiler(const GrammarCompiler&) = delete;
  GrammarCompiler& operator=(const GrammarCompiler&) = delete;

  // A JSON schema's text. Output is compact (", " and ": " between items, no other whitespace),
  // objects have no properties beyond the schema's (OpenAI's strict mode, valid either way).
  // Error naming `field` when the text is not JSON, not a schema, or uses a keyword xgrammar
  // cannot enforce (grammar/json_schema_support.h: the keyword and where it is).
  std::shared_ptr<const CompiledGrammar> json_schema(std::string_view schema,
                                                     std::string_view field);
  // Any JSON object (OpenAI's response_format json_object), compact as above.
  std::shared_ptr<const CompiledGrammar> json_object();
  // xgrammar's builtin grammar of any JSON value (whitespace as JSON allows it).
  std::shared_ptr<const CompiledGrammar> builtin_json();
  // An xgrammar structural tag (its JSON format, docs/structural_tag in the sdist). Error naming
  // `field` when xgrammar rejects it.
  std::shared_ptr<const CompiledGrammar> structural_tag(std::string_view tag_json,
                                                        std::string_view field);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xlacel::grammar
