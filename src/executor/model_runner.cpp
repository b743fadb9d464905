#include "executor/model_runner.h"

#include "common/error.h"

namespace xlacel::executor {

void ModelRunner::embed_chunks(std::span<const PrefillInput>, std::span<std::vector<float>>) {
  fail("embed", "the {} runner has no embed graph", capabilities().runtime);
}

void ModelRunner::verify(std::span<const PrefillInput>, std::span<std::vector<int32_t>>) {
  fail("verify", "the {} runner has no verify graph", capabilities().runtime);
}

std::vector<float> ModelRunner::encode_images(std::span<const float>) {
  fail("images", "the model has no vision tower: it reads text only");
}

std::size_t SlotRows::bytes() const {
  std::size_t total = 0;
  for (const auto& cache : caches) total += cache.size();
  return total;
}

SlotRows ModelRunner::save_slot(int32_t, int64_t) {
  fail("save_slot", "the {} runner cannot save slots", capabilities().runtime);
}

void ModelRunner::restore_slot(int32_t, const SlotRows&) {
  fail("restore_slot", "the {} runner cannot restore slots", capabilities().runtime);
}

}  // namespace xlacel::executor
