#include "server/json_fields.h"

#include <fmt/format.h>

#include <limits>

#include "server/api_error.h"

namespace xlacel::server {

const char* type_name(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "an object";
    default:
      return "a number";
  }
}

void require_object(const Json& body) {
  if (!body.is_object()) {
    throw invalid_request("",
                          fmt::format("the body must be a JSON object, got {}", type_name(body)));
  }
}

void require_object(const Json& value, const std::string& where) {
  if (!value.is_object()) {
    throw invalid_request(where,
                          fmt::format("'{}' must be an object, got {}", where, type_name(value)));
  }
}

const Json& required_field(const Json& parent, const char* name, const std::string& where) {
  const Json* value = field(parent, name);
  if (value == nullptr) throw invalid_request(where, fmt::format("'{}' is required", where));
  return *value;
}

std::string string_field(const Json& parent, const char* name, const std::string& where) {
  const Json& value = required_field(parent, name, where);
  if (!value.is_string()) {
    throw invalid_request(where,
                          fmt::format("'{}' must be a string, got {}", where, type_name(value)));
  }
  return value.get<std::string>();
}

const Json* field(const Json& body, const char* name) {
  auto it = body.find(name);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

double number(const Json& value, const char* name, double low, double high) {
  if (!value.is_number()) {
    throw invalid_request(name,
                          fmt::format("'{}' must be a number, got {}", name, type_name(value)));
  }
  const double x = value.get<double>();
  if (!(x >= low && x <= high)) {
    throw invalid_request(name,
                          fmt::format("'{}' must be in [{}, {}], got {}", name, low, high, x));
  }
  return x;
}

int64_t integer(const Json& value, const char* name, int64_t low, int64_t high) {
  if (!value.is_number_integer()) {
    throw invalid_request(name,
                          fmt::format("'{}' must be an integer, got {}", name, type_name(value)));
  }
  // Unsigned JSON integers above int64's range read as negative here and fail the range check.
  const int64_t x = value.is_number_unsigned() && value.get<uint64_t>() > INT64_MAX
                        ? std::numeric_limits<int64_t>::min()
                        : value.get<int64_t>();
  if (x < low || x > high) {
    throw invalid_request(
        name, fmt::format("'{}' must be in [{}, {}], got {}", name, low, high, value.dump()));
  }
  return x;
}

bool boolean(const Json& value, const char* name) {
  if (!value.is_boolean()) {
    throw invalid_request(name,
                          fmt::format("'{}' must be a boolean, got {}", name, type_name(value)));
  }
  return value.get<bool>();
}

}  // namespace xlacel::server
