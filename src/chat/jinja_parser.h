#pragma once
// Recursive-descent parser over the lexer's tokens, following jinja2's grammar and precedence.
#include <string_view>

#include "chat/jinja_ast.h"

namespace xlacel::jinja {

// Throws xlacel::Error "<where>: line N: syntax error: ..." or "...: unsupported: ...".
Template parse(std::string_view source, std::string_view where);

}  // namespace xlacel::jinja
