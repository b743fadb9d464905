#include "engine/slot_action.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <system_error>

#include "common/error.h"
#include "engine/slot_file.h"

namespace xlacel::engine {

SlotActionResult run_slot_action(executor::ModelRunner& runner, const SlotAction& action,
                                 std::vector<int32_t>& resident) {
  using Problem = SlotActionResult::Problem;
  const auto start = std::chrono::steady_clock::now();
  const auto slot = static_cast<int32_t>(action.slot);
  SlotActionResult result;
  switch (action.kind) {
    case SlotAction::Kind::kErase:
      result.tokens = static_cast<int64_t>(resident.size());
      resident.clear();
      break;
    case SlotAction::Kind::kSave:
      try {
        SlotFile file{action.model, resident,
                      runner.save_slot(slot, static_cast<int64_t>(resident.size()))};
        result.bytes = write_slot_file(action.path, file);
        result.tokens = static_cast<int64_t>(resident.size());
      } catch (const std::exception& e) {
        result.problem = Problem::kFailed;
        result.message = e.what();
      }
      break;
    case SlotAction::Kind::kRestore: {
      SlotFile file;
      try {
        file = read_slot_file(action.path, result.bytes);
      } catch (const std::exception& e) {
        std::error_code error;
        result.problem =
            std::filesystem::exists(action.path, error) ? Problem::kBadFile : Problem::kNoFile;
        result.message = e.what();
        break;
      }
      if (file.model != action.model) {
        result.problem = Problem::kBadFile;
        result.message = fmt::format("{}: saved from {}, not from this server's {}",
                                     action.path.string(), file.model, action.model);
        break;
      }
      try {
        runner.restore_slot(slot, file.rows);
      } catch (const std::exception& e) {
        // What the slot holds now is unknown: nothing of it is reused.
        resident.clear();
        result.problem = Problem::kFailed;
        result.message = e.what();
        break;
      }
      resident = std::move(file.tokens);
      result.tokens = static_cast<int64_t>(resident.size());
      // Image rows are named by ids of the process that saved them (Scheduler::prompt_rows):
      // they and what follows them are not reused here.
      resident.erase(
          std::find_if(resident.begin(), resident.end(), [](int32_t row) { return row < 0; }),
          resident.end());
      break;
    }
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace xlacel::engine
