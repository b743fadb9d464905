#pragma once
// Python's arithmetic, concatenation and membership operators on template values.
#include <string_view>

#include "chat/jinja_value.h"

namespace xlacel::jinja {

// Largest string or list an operation may build; beyond it evaluation fails (hostile templates).
inline constexpr std::size_t kMaxStringBytes = 16u << 20;
inline constexpr std::size_t kMaxListItems = 1u << 20;

// op is one of + - * / // % **
Value binary_op(std::string_view op, const Value& a, const Value& b);
Value negate(const Value& v);
Value positive(const Value& v);
// `item in container`
bool contains(const Value& container, const Value& item);
// HTML escaping as markupsafe.escape does it.
std::string html_escape(std::string_view s);
void check_string_size(std::size_t size);

}  // namespace xlacel::jinja
