#pragma once
// What xgrammar 0.2.8 does with a JSON schema's keywords it cannot enforce: it drops them
// silently (at most a warning on stderr) and generates output the schema may reject. Refusing
// them up front keeps "finish_reason stop means valid" true.
#include <optional>
#include <string>

#include "common/json_file.h"

namespace xlacel::grammar {

// The first keyword of `schema` (or of a schema nested in it) that xgrammar would ignore, as
// "'uniqueItems' at /properties/tags" ("" for the root), or nullopt when every keyword is
// enforced (annotations such as title and description need no enforcing).
std::optional<std::string> unsupported_schema_keyword(const Json& schema);

}  // namespace xlacel::grammar
