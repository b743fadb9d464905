#pragma once
// jinja2's filters and tests, the Python methods of str/dict/list that templates call, and the
// global functions of transformers' chat-template environment.
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/jinja_value.h"

namespace xlacel::jinja {

class Interpreter;

// Python-style argument binding: one entry per name, nullopt where not given. Throws
// RuntimeError for too many or unknown arguments.
std::vector<std::optional<Value>> bind_args(std::string_view function, CallArgs& args,
                                            std::initializer_list<std::string_view> names);

// Throws RuntimeError for unknown (or known but unsupported) names.
Value apply_filter(Interpreter& interp, const std::string& name, const Value& input,
                   CallArgs& args);
bool apply_test(Interpreter& interp, const std::string& name, const Value& input, CallArgs& args);

// The bound method `obj.name` of a str, dict or list; nullopt when the type has no such
// attribute. Methods the immutable sandbox forbids come back as an Undefined whose use fails.
std::optional<Value> get_method(const Value& obj, const std::string& name);

// range, dict, namespace, raise_exception, strftime_now (and stubs for unsupported globals).
DictData make_globals();

}  // namespace xlacel::jinja
