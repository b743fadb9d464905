#pragma once
// POST /slots/{id}?action=save|restore|erase (llama.cpp's server's slot persistence): the action
// from the query and, for save and restore, {"filename": name} from the body, a plain file name
// inside the server's --slot-save-path (no folders, nothing hidden), checked (an ApiError naming
// the field); and the answers in llama.cpp's shape.
#include <string>

#include "common/json_file.h"
#include "engine/slot_action.h"

namespace xlacel::server {

struct SlotRequest {
  engine::SlotAction::Kind kind = engine::SlotAction::Kind::kSave;
  std::string filename;  // save, restore
};
// `action`: the query parameter; `body` the parsed body (may be null for erase).
SlotRequest parse_slot_request(const std::string& action, const Json& body);

// {"id_slot", "filename", "n_saved" | "n_restored", "n_written" | "n_read", "timings"}, or
// {"id_slot", "n_erased"}.
Json slot_response(int64_t slot, const SlotRequest& request,
                   const engine::SlotActionResult& result);

}  // namespace xlacel::server
