#include "server/slot_request.h"

#include <fmt/format.h>

#include "common/utf8.h"
#include "server/api_error.h"
#include "server/json_fields.h"

namespace xlacel::server {

namespace {

void check_filename(const std::string& name) {
  const char* problem = nullptr;
  if (name.empty()) {
    problem = "is empty";
  } else if (name.size() > 255) {
    problem = "is longer than 255 bytes";
  } else if (!utf8::is_valid(name)) {
    problem = "is not valid UTF-8";
  } else if (name.starts_with('.')) {
    problem = "starts with '.'";
  } else if (name.find_first_of("/\\") != std::string::npos) {
    problem = "names a folder: it must be a file name inside the server's --slot-save-path";
  } else {
    for (unsigned char c : name) {
      if (c < 0x20 || c == 0x7f) problem = "holds a control character";
    }
  }
  if (problem != nullptr) {
    throw invalid_request("filename", fmt::format("'filename' {}", problem));
  }
}

}  // namespace

SlotRequest parse_slot_request(const std::string& action, const Json& body) {
  SlotRequest request;
  if (action == "save") {
    request.kind = engine::SlotAction::Kind::kSave;
  } else if (action == "restore") {
    request.kind = engine::SlotAction::Kind::kRestore;
  } else if (action == "erase") {
    request.kind = engine::SlotAction::Kind::kErase;
    return request;
  } else {
    throw invalid_request("action",
                          fmt::format("'action' must be save, restore or erase, got '{}'", action));
  }
  require_object(body);
  request.filename = string_field(body, "filename", "filename");
  check_filename(request.filename);
  return request;
}

Json slot_response(int64_t slot, const SlotRequest& request,
                   const engine::SlotActionResult& result) {
  if (request.kind == engine::SlotAction::Kind::kErase) {
    return {{"id_slot", slot}, {"n_erased", result.tokens}};
  }
  const bool save = request.kind == engine::SlotAction::Kind::kSave;
  return {{"id_slot", slot},
          {"filename", request.filename},
          {save ? "n_saved" : "n_restored", result.tokens},
          {save ? "n_written" : "n_read", result.bytes},
          {"timings", {{save ? "save_ms" : "restore_ms", result.seconds * 1000}}}};
}

}  // namespace xlacel::server
