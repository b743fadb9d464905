#pragma once
// What the server's POST /slots/{id}?action=save|restore|erase does to a free slot (as llama.cpp's
// server has them): its resident tokens and cache rows written to a file, read back from one, or
// forgotten. The scheduler runs these between steps, on its thread (Scheduler::
// submit_slot_action), so no request is using the slot meanwhile.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "executor/model_runner.h"

namespace xlacel::engine {

struct SlotAction {
  enum class Kind { kSave, kRestore, kErase };
  Kind kind = Kind::kSave;
  int64_t slot = 0;
  std::filesystem::path path;  // kSave, kRestore: the file
  // kSave: written into the file; kRestore: what the file must say. The caller's description of
  // its model and cache shape (slot_file.h), so a file from elsewhere is refused.
  std::string model;
};

struct SlotActionResult {
  enum class Problem {
    kNone,
    kBusy,     // a request holds the slot
    kNoFile,   // kRestore: no such file
    kBadFile,  // kRestore: not a slot file, or another model's
    kFailed,   // the file or the runner failed (the slot then holds nothing reusable)
  };
  Problem problem = Problem::kNone;
  std::string message;  // for people, when there is a problem
  int64_t tokens = 0;   // saved, restored or erased
  uint64_t bytes = 0;   // written or read
  double seconds = 0;
};

// Runs `action` on its (free) slot of `runner`, whose resident tokens are `resident` (updated:
// a restore sets them, an erase clears them).
SlotActionResult run_slot_action(executor::ModelRunner& runner, const SlotAction& action,
                                 std::vector<int32_t>& resident);

}  // namespace xlacel::engine
