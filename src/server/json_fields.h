#pragma once
// Reading a request body's fields, each problem an ApiError (400) naming the field: what the
// generation, tokenize and detokenize requests share.
#include <cstdint>
#include <string>

#include "common/json_file.h"

namespace xlacel::server {

const char* type_name(const Json& value);  // "a string", "an array", ... for messages

void require_object(const Json& body);  // the whole body (param "")
// 400 naming `where` unless `value` is an object.
void require_object(const Json& value, const std::string& where);
// The field `name` of `parent`, which must be there (400 naming `where` otherwise).
const Json& required_field(const Json& parent, const char* name, const std::string& where);
// The same, which must be a string.
std::string string_field(const Json& parent, const char* name, const std::string& where);

// The field when present and not null; `nullptr` otherwise (clients send null for "default").
const Json* field(const Json& body, const char* name);

double number(const Json& value, const char* name, double low, double high);
int64_t integer(const Json& value, const char* name, int64_t low, int64_t high);
bool boolean(const Json& value, const char* name);

}  // namespace xlacel::server
