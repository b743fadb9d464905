#pragma once
// `response_format` of both endpoints: plain text, any JSON object, or a JSON schema the output
// must match (OpenAI's Structured Outputs), enforced by a grammar over the tokens
// (grammar/grammar_compiler.h).
#include <memory>
#include <string>

#include "common/json_file.h"

namespace xlacel::server {

struct ResponseFormat {
  enum class Type { kText, kJsonObject, kJsonSchema };
  Type type = Type::kText;
  // kJsonSchema: where the body has the schema, as the API names the field (dotted).
  std::string schema_field = "response_format.json_schema.schema";
};

// {"type": "text"}, {"type": "json_object"} or {"type": "json_schema", "json_schema": {"name",
// "schema", "strict", "description"}}. ApiError (400) naming the field at fault.
ResponseFormat parse_response_format(const Json& value);

}  // namespace xlacel::server
