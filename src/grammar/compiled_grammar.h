#pragma once
// What grammar_compiler.h hands out, for the files of this folder that use xgrammar itself.
#include <xgrammar/xgrammar.h>

#include <cstdint>
#include <memory>

#include "grammar/utf8_guard.h"

namespace xlacel::grammar {

class CompiledGrammar {
 public:
  CompiledGrammar(xgrammar::CompiledGrammar compiled, std::shared_ptr<const TokenBytes> tokens)
      : compiled_(std::move(compiled)), tokens_(std::move(tokens)) {}

  const xgrammar::CompiledGrammar& xgrammar() const { return compiled_; }
  const TokenBytes& tokens() const { return *tokens_; }
  int64_t vocab_size() const { return static_cast<int64_t>(tokens_->bytes.size()); }

 private:
  xgrammar::CompiledGrammar compiled_;
  std::shared_ptr<const TokenBytes> tokens_;  // the vocabulary's, shared by its grammars
};

}  // namespace xlacel::grammar
