#include "executor/model_runner.h"

#include "common/error.h"

namespace xlacel::executor {

SlotRows ModelRunner::save_slot(int32_t) {
  fail("save_slot", "the {} runner cannot save slots", capabilities().runtime);
}

void ModelRunner::restore_slot(int32_t, const SlotRows&) {
  fail("restore_slot", "the {} runner cannot restore slots", capabilities().runtime);
}

}  // namespace xlacel::executor
