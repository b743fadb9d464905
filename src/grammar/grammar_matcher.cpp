#include "grammar/grammar_matcher.h"

#include <limits>

#include "grammar/compiled_grammar.h"

namespace xlacel::grammar {

struct GrammarMatcher::Impl {
  Impl(std::shared_ptr<const CompiledGrammar> compiled, std::span<const int32_t> stop_ids)
      : grammar(std::move(compiled)),
        // Without stop ids the compiler's stand in (xgrammar takes no empty list), and the
        // matcher ends where the grammar is complete.
        matcher(grammar->xgrammar(),
                stop_ids.empty()
                    ? std::nullopt
                    : std::optional(std::vector<int>(stop_ids.begin(), stop_ids.end())),
                /*terminate_without_stop_token=*/stop_ids.empty()),
        bitmask(static_cast<std::size_t>(
            xgrammar::GetBitmaskSize(static_cast<int>(grammar->vocab_size())))) {
    shape[0] = static_cast<int64_t>(bitmask.size());
    tensor.data = bitmask.data();
    tensor.device = DLDevice{kDLCPU, 0};
    tensor.ndim = 1;
    tensor.dtype = xgrammar::GetBitmaskDLType();
    tensor.shape = shape;
    tensor.strides = nullptr;
    tensor.byte_offset = 0;
  }

  void ensure_mask() {
    if (!mask_ready) {
      matcher.FillNextTokenBitmask(&tensor);
      mask_ready = true;
    }
  }

  std::shared_ptr<const CompiledGrammar> grammar;  // the matcher reads it
  xgrammar::GrammarMatcher matcher;
  std::vector<int32_t> bitmask;  // bit i of word i / 32: token i may come next
  int64_t shape[1] = {0};
  DLTensor tensor{};
  bool mask_ready = false;
};

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar,
                               std::span<const int32_t> stop_ids)
    : impl_(std::make_unique<Impl>(std::move(grammar), stop_ids)) {}

GrammarMatcher::~GrammarMatcher() = default;
GrammarMatcher::GrammarMatcher(GrammarMatcher&&) noexcept = default;
GrammarMatcher& GrammarMatcher::operator=(GrammarMatcher&&) noexcept = default;

void GrammarMatcher::compute_mask() {
  impl_->ensure_mask();
}

void GrammarMatcher::apply_mask(std::span<float> logits) {
  impl_->ensure_mask();
  constexpr float kForbidden = -std::numeric_limits<float>::infinity();
  const std::vector<int32_t>& bitmask = impl_->bitmask;
  for (std::size_t word = 0; word < bitmask.size(); ++word) {
    const auto bits = static_cast<uint32_t>(bitmask[word]);
    if (bits == ~uint32_t{0}) continue;
    const std::size_t first = word * 32;
    const std::size_t end = std::min(first + 32, logits.size());
    for (std::size_t id = first; id < end; ++id) {
      if ((bits >> (id - first) & 1u) == 0) logits[id] = kForbidden;
    }
  }
}

bool GrammarMatcher::allows(int32_t token) {
  impl_->ensure_mask();
  if (token < 0 || token >= impl_->grammar->vocab_size()) return false;
  const auto bits = static_cast<uint32_t>(impl_->bitmask[static_cast<std::size_t>(token) / 32]);
  return (bits >> (token % 32) & 1u) != 0;
}

bool GrammarMatcher::accept(int32_t token) {
  if (!impl_->matcher.AcceptToken(token)) return false;
  impl_->mask_ready = false;
  return true;
}

bool GrammarMatcher::terminated() const {
  return impl_->matcher.IsTerminated();
}

}  // namespace xlacel::grammar
