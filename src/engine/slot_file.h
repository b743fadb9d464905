#pragma once
// A slot's contents in a file (POST /slots/{id}?action=save|restore, as llama.cpp's server has
// them): the tokens it holds and the rows of every cache that hold them
// (executor::ModelRunner::save_slot), with the model they belong to, so a restore into another
// model's (or another context size's) slot is refused rather than silently wrong.
//
// Layout (little-endian): "XLSLOT02", u32 model length, model bytes, u64 token count, i32
// tokens, i64 positions (executor::SlotRows), u32 cache count, then per cache u64 byte count
// and the bytes.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "executor/model_runner.h"

namespace xlacel::engine {

struct SlotFile {
  std::string model;  // who may restore it: the saver's description of its model and caches
  std::vector<int32_t> tokens;
  executor::SlotRows rows;
};

// Writes `slot` to `path` (a temporary beside it, renamed over it once whole); returns the bytes
// written. Error naming the path when it cannot.
uint64_t write_slot_file(const std::filesystem::path& path, const SlotFile& slot);

// Reads a file write_slot_file wrote; `bytes` gets its size. Error naming the path when it is
// missing, unreadable or not such a file (truncated, a count past its end).
SlotFile read_slot_file(const std::filesystem::path& path, uint64_t& bytes);

}  // namespace xlacel::engine
