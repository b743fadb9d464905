#pragma once
// One request's place in its grammar (xgrammar's GrammarMatcher): which tokens may come next,
// as a bitmask over the vocabulary that sets the logits of every other token to -inf before the
// sampler draws, and the tokens drawn so far. Stop ids are allowed only where the grammar is
// complete. Not thread-safe: one request, one thread at a time (compute_mask may run on another
// thread than the one that accepts, as long as they do not overlap).
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace xlacel::grammar {

class CompiledGrammar;

class GrammarMatcher {
 public:
  // `stop_ids`: the ids that end this request. Without any, the request ends where the grammar
  // is complete (terminated() turns true without a stop id).
  GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, std::span<const int32_t> stop_ids);
  ~GrammarMatcher();
  GrammarMatcher(GrammarMatcher&&) noexcept;
  GrammarMatcher& operator=(GrammarMatcher&&) noexcept;

  // Computes the set of tokens that may come next, kept until accept().
  void compute_mask();
  // Sets the logit of every token the grammar does not allow next to -inf (computing the mask
  // first when compute_mask() has not run since the last accept()).
  void apply_mask(std::span<float> logits);
  // Whether `token` may come next (computing the mask when needed).
  bool allows(int32_t token);
  // Advances past `token`; false (nothing changes) when the grammar does not allow it.
  bool accept(int32_t token);
  // After a stop id, or (without stop ids) once the grammar is complete: nothing may follow.
  bool terminated() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xlacel::grammar
