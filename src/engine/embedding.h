#pragma once
// An embedding of a prompt: its tokens' final hidden states (the embed graph's, chunk by chunk
// as the scheduler runs them) pooled into one vector as the model's config says, then, for the
// API, cut to its first `dimensions` values and scaled to unit length.
#include <cstdint>
#include <span>
#include <vector>

#include "model_files/model_config.h"

namespace xlacel::engine {

class EmbeddingPool {
 public:
  // For a prompt of `tokens` tokens whose hidden states are `width` floats.
  EmbeddingPool(Pooling pooling, int64_t width, int64_t tokens);

  // The hidden states of the prompt's rows [first, first + hidden.size() / width), in order.
  void add(std::span<const float> hidden, int64_t first);
  // The pooled vector (`width` floats) once every row was added: their mean (summed in double),
  // the first row, or the last.
  std::vector<float> pooled() const;

 private:
  Pooling pooling_;
  std::size_t width_;
  int64_t tokens_;
  int64_t added_ = 0;
  std::vector<double> sum_;    // kMean
  std::vector<float> chosen_;  // kCls, kLast
};

// The first `dimensions` values of `embedding` (0: all of them) scaled to unit Euclidean length,
// as sentence-transformers' Normalize (a zero vector stays zero).
std::vector<float> normalized(std::span<const float> embedding, int64_t dimensions = 0);

}  // namespace xlacel::engine
