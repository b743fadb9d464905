#pragma once
// What grammar_compiler.h hands out, for the files of this folder that use xgrammar itself.
#include <xgrammar/xgrammar.h>

#include <cstdint>

namespace xlacel::grammar {

class CompiledGrammar {
 public:
  CompiledGrammar(xgrammar::CompiledGrammar compiled, int64_t vocab_size)
      : compiled_(std::move(compiled)), vocab_size_(vocab_size) {}

  const xgrammar::CompiledGrammar& xgrammar() const { return compiled_; }
  int64_t vocab_size() const { return vocab_size_; }

 private:
  xgrammar::CompiledGrammar compiled_;
  int64_t vocab_size_;
};

}  // namespace xlacel::grammar
