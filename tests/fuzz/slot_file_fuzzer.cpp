// Slot files (POST /slots/{id}?action=restore reads whatever is in --slot-save-path): any bytes
// must either read as a slot file, whose counts then fit what was read, or raise xlacel::Error.
#include <cstdlib>

#include "common/error.h"
#include "engine/slot_file.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = xlacel::fuzz::write_input(data, size, ".slot");
  try {
    uint64_t bytes = 0;
    const xlacel::engine::SlotFile slot = xlacel::engine::read_slot_file(path, bytes);
    uint64_t held = slot.model.size() + slot.tokens.size() * sizeof(int32_t);
    held += slot.rows.bytes();
    if (bytes != size || held > bytes) std::abort();
  } catch (const xlacel::Error&) {
  }
  return 0;
}
