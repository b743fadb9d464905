#pragma once
// What xgrammar 0.2.8 does with a JSON schema that it cannot enforce as written, and what we do
// about it:
// - keywords it drops silently (at most a warning on stderr), generating output the schema may
//   reject: refused up front, so that "finish_reason stop" keeps meaning "valid";
// - a string with minLength/maxLength (and no pattern or format) becomes a repetition of "any
//   character but '"', '\\', CR and LF", which lets raw control characters through (invalid
//   JSON), and UTF-16 surrogates as 3-byte sequences (invalid UTF-8): rewritten as a pattern of
//   characters that excludes both (xgrammar keeps a pattern's '"' and '\\' out as well).
#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace xlacel::grammar {

// Keeps the order of properties, which is the order they are generated in.
using OrderedJson = nlohmann::ordered_json;

// The first keyword of `schema` (or of a schema nested in it) that xgrammar would ignore, as
// "'uniqueItems' at /properties/tags" ("the root" for the root), or nullopt when every keyword
// is enforced (annotations such as title and description need no enforcing).
std::optional<std::string> unsupported_schema_keyword(const OrderedJson& schema);

// Replaces minLength/maxLength of plain strings by the pattern
// ^[^\u0000-\u001f\ud800-\udfff]{min,max}$ (see above).
void bound_string_lengths_by_pattern(OrderedJson& schema);

}  // namespace xlacel::grammar
