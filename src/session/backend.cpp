#include "session/backend.h"

namespace xlacel::session {

const char* device_kind_name(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kCpu:
      return "cpu";
    case DeviceKind::kCuda:
      return "cuda";
  }
  return "unknown";
}

std::optional<DeviceKind> parse_device_kind(std::string_view name) {
  for (DeviceKind kind : {DeviceKind::kCpu, DeviceKind::kCuda}) {
    if (name == device_kind_name(kind)) return kind;
  }
  return std::nullopt;
}

}  // namespace xlacel::session
