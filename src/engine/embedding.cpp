#include "engine/embedding.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace xlacel::engine {

EmbeddingPool::EmbeddingPool(Pooling pooling, int64_t width, int64_t tokens)
    : pooling_(pooling), width_(static_cast<std::size_t>(width)), tokens_(tokens) {
  if (width < 1 || tokens < 1)
    fail("embedding", "needs a width and tokens (got {}, {})", width, tokens);
  if (pooling_ == Pooling::kMean) {
    sum_.assign(width_, 0.0);
  } else {
    chosen_.assign(width_, 0.0F);
  }
}

void EmbeddingPool::add(std::span<const float> hidden, int64_t first) {
  const auto rows = static_cast<int64_t>(hidden.size() / width_);
  if (hidden.size() % width_ != 0 || first != added_ || first + rows > tokens_) {
    fail("embedding", "rows [{}, {}) do not follow the {} added of {}", first, first + rows, added_,
         tokens_);
  }
  for (int64_t row = 0; row < rows; ++row) {
    const std::span<const float> values =
        hidden.subspan(static_cast<std::size_t>(row) * width_, width_);
    const int64_t position = first + row;
    if (pooling_ == Pooling::kMean) {
      for (std::size_t i = 0; i < width_; ++i) sum_[i] += values[i];
    } else if ((pooling_ == Pooling::kCls && position == 0) ||
               (pooling_ == Pooling::kLast && position == tokens_ - 1)) {
      std::copy(values.begin(), values.end(), chosen_.begin());
    }
  }
  added_ += rows;
}

std::vector<float> EmbeddingPool::pooled() const {
  if (added_ != tokens_) fail("embedding", "{} of {} rows added", added_, tokens_);
  if (pooling_ != Pooling::kMean) return chosen_;
  std::vector<float> mean(width_);
  for (std::size_t i = 0; i < width_; ++i) {
    mean[i] = static_cast<float>(sum_[i] / static_cast<double>(tokens_));
  }
  return mean;
}

std::vector<float> normalized(std::span<const float> embedding, int64_t dimensions) {
  const std::size_t kept = dimensions > 0
                               ? std::min(embedding.size(), static_cast<std::size_t>(dimensions))
                               : embedding.size();
  std::vector<float> result(embedding.begin(),
                            embedding.begin() + static_cast<std::ptrdiff_t>(kept));
  double squares = 0;
  for (float value : result) squares += static_cast<double>(value) * value;
  const double length = std::sqrt(squares);
  // sentence-transformers divides by max(length, 1e-12).
  const double divisor = std::max(length, 1e-12);
  for (float& value : result) value = static_cast<float>(value / divisor);
  return result;
}

}  // namespace xlacel::engine
