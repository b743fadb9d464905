#pragma once
#include <cstdint>
#include <span>

namespace xlacel::executor {

// The id of the largest logit; ties go to the lower id, as torch.argmax and the graphs' device
// argmax do; NaN never wins.
int32_t argmax(std::span<const float> logits);

}  // namespace xlacel::executor
