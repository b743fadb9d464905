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

// Calls visit(schema, pointer) on `schema` and every schema nested in it, parents first, until
// it returns true (then returns true).
template <typename Schema, typename Visit>
bool visit_schemas(Schema& schema, const std::string& at, const Visit& visit) {
  if (!schema.is_object()) return false;  // true/false, or a malformed value xgrammar names
  if (visit(schema, at)) return true;
  for (std::string_view keyword : kSchemaKeywords) {
    if (const auto it = schema.find(keyword); it != schema.end()) {
      if (visit_schemas(*it, at + "/" + std::string(keyword), visit)) return true;
    }
  }
  for (std::string_view keyword : kSchemaListKeywords) {
    const auto it = schema.find(keyword);
    if (it == schema.end() || !it->is_array()) continue;
    for (std::size_t i = 0; i < it->size(); ++i) {
      const std::string path = at + "/" + std::string(keyword) + "/" + std::to_string(i);
      if (visit_schemas((*it)[i], path, visit)) return true;
    }
  }
  for (std::string_view keyword : kSchemaMapKeywords) {
    const auto it = schema.find(keyword);
    if (it == schema.end() || !it->is_object()) continue;
    for (auto& [name, inner] : it->items()) {
      const std::string path = at + "/" + std::string(keyword) + "/" + pointer_token(name);
      if (visit_schemas(inner, path, visit)) return true;
    }
  }
  return false;
}

bool is_integer_number(const OrderedJson& value) {
  if (value.is_number_integer()) return true;
  return value.is_number_float() && std::floor(value.get<double>()) == value.get<double>();
}

// Keywords xgrammar reads but drops in some combinations (with a warning on stderr).
std::optional<std::string_view> dropped_keyword(const OrderedJson& schema) {
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

}  // namespace

std::optional<std::string> unsupported_schema_keyword(const OrderedJson& schema) {
  std::optional<std::string> found;
  visit_schemas(schema, "", [&](const OrderedJson& inner, const std::string& at) {
    std::optional<std::string_view> keyword;
    for (std::string_view ignored : kIgnoredKeywords) {
      if (inner.contains(ignored)) {
        keyword = ignored;
        break;
      }
    }
    if (!keyword) keyword = dropped_keyword(inner);
    if (keyword) found = "'" + std::string(*keyword) + "' at " + (at.empty() ? "the root" : at);
    return found.has_value();
  });
  return found;
}

void bound_string_lengths_by_pattern(OrderedJson& schema) {
  visit_schemas(schema, "", [](OrderedJson& inner, const std::string&) {
    const bool bounded = inner.contains("minLength") || inner.contains("maxLength");
    if (!bounded || inner.contains("pattern") || inner.contains("format")) return false;
    const auto bound = [&](const char* name) -> std::string {
      const auto it = inner.find(name);
      return it != inner.end() && it->is_number_unsigned() ? std::to_string(it->get<uint64_t>())
                                                           : "";
    };
    const std::string low = bound("minLength"), high = bound("maxLength");
    // Any character but control characters and UTF-16 surrogates (which xgrammar would take
    // as 3-byte sequences: invalid UTF-8, and three characters once repaired).
    inner["pattern"] =
        R"(^[^\u0000-\u001f\ud800-\udfff]{)" + (low.empty() ? "0" : low) + "," + high + "}$";
    inner.erase("minLength");
    inner.erase("maxLength");
    return false;
  });
}

}  // namespace xlacel::grammar
