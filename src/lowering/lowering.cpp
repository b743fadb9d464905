#include "lowering/lowering.h"

namespace xlacel::lowering {

const char* math_name(Math math) {
  return math == Math::kFast ? "fast" : "exact";
}

std::optional<Math> parse_math(std::string_view name) {
  if (name == "exact") return Math::kExact;
  if (name == "fast") return Math::kFast;
  return std::nullopt;
}

const Lowering& portable_lowering() {
  static const Lowering portable;
  return portable;
}

}  // namespace xlacel::lowering
