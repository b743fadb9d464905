#include "grammar/json_schema_support.h"

#include <array>
#include <cmath>
#include <string_view>

namespace xlacel::grammar {

namespace {

// Read by xgrammar's schema parser only to be ignored (json_schema_converter.cc: "not
// supported", WarnUnsupportedKeywords).
constexpr std::array<std::string_view, 10> kIgnoredKeywords = {
    "not",         "if",       "then",        "else",       "dependentRequired", "dependentSchemas",
    "uniqueItems", "contains", "minContains", "maxContains"};

// Keywords whose values are schemas, lists of schemas, or maps of names to schemas.
constexpr std::array<std::string_view, 5> kSchemaKeywords = {
    "additionalProperties", "items", "propertyNames", "unevaluatedProperties", "unevaluatedItems"};
constexpr std::array<std::string_view, 4> kSchemaListKeywords = {"anyOf", "oneOf", "allOf",
                                                                 "prefixItems"};
constexpr std::array<std::string_view, 4> kSchemaMapKeywords = {"properties", "patternProperties",
                                                                "$defs", "definitions"};

bool is_integer_number(const Json& value) {
  if (value.is_number_integer()) return true;
  return value.is_number_float() && std::floor(value.get<double>()) == value.get<double>();
}

// Keywords xgrammar reads but drops in some combinations (with a warning on stderr).
std::optional<std::string_view> dropped_keyword(const Json& schema) {
  const auto type = schema.find("type");
  const bool integer = type != schema.end() && *type == "integer";
  if (const auto multiple = schema.find("multipleOf"); multiple != schema.end()) {
    // Only an integer multipleOf of an integer with both bounds or none is enforced.
    if (!integer || !is_integer_number(*multiple)) return "multipleOf";
    const bool low = schema.contains("minimum") || schema.contains("exclusiveMinimum");
    const bool high = schema.contains("maximum") || schema.contains("exclusiveMaximum");
    if (low != high) return "multipleOf";
  }
  if ((schema.contains("pattern") || schema.contains("format")) &&
      (schema.contains("minLength") || schema.contains("maxLength"))) {
    return schema.contains("minLength") ? "minLength" : "maxLength";
  }
  // allOf of several schemas becomes "any value".
  if (const auto all = schema.find("allOf");
      all != schema.end() && all->is_array() && all->size() > 1) {
    return "allOf";
  }
  return std::nullopt;
}

std::string pointer_token(std::string_view key) {
  std::string escaped;
  for (char c : key) {
    if (c == '~') {
      escaped += "~0";
    } else if (c == '/') {
      escaped += "~1";
    } else {
      escaped += c;
    }
  }
  return escaped;
}

std::optional<std::string> find_unsupported(const Json& schema, const std::string& at) {
  if (!schema.is_object()) return std::nullopt;  // true/false, or a malformed value xgrammar names
  const auto found = [&](std::string_view keyword) {
    return "'" + std::string(keyword) + "' at " + (at.empty() ? "the root" : at);
  };
  for (std::string_view keyword : kIgnoredKeywords) {
    if (schema.contains(keyword)) return found(keyword);
  }
  if (auto keyword = dropped_keyword(schema)) return found(*keyword);
  for (std::string_view keyword : kSchemaKeywords) {
    if (const auto it = schema.find(keyword); it != schema.end()) {
      if (auto inner = find_unsupported(*it, at + "/" + std::string(keyword))) return inner;
    }
  }
  for (std::string_view keyword : kSchemaListKeywords) {
    const auto it = schema.find(keyword);
    if (it == schema.end() || !it->is_array()) continue;
    for (std::size_t i = 0; i < it->size(); ++i) {
      const std::string path = at + "/" + std::string(keyword) + "/" + std::to_string(i);
      if (auto inner = find_unsupported((*it)[i], path)) return inner;
    }
  }
  for (std::string_view keyword : kSchemaMapKeywords) {
    const auto it = schema.find(keyword);
    if (it == schema.end() || !it->is_object()) continue;
    for (const auto& [name, inner_schema] : it->items()) {
      const std::string path = at + "/" + std::string(keyword) + "/" + pointer_token(name);
      if (auto inner = find_unsupported(inner_schema, path)) return inner;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> unsupported_schema_keyword(const Json& schema) {
  return find_unsupported(schema, "");
}

}  // namespace xlacel::grammar
