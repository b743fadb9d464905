#pragma once
// `response_format` of both endpoints: plain text, any JSON object, or a JSON schema the output
// must match (OpenAI's Structured Outputs), enforced by a grammar over the tokens
// (grammar/grammar_compiler.h).
#include <memory>
#include <string>

#include "common/json_file.h"
#include "engine/engine.h"

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

// The grammar the format asks for, compiled for the loaded model (null for text). The schema is
// read from `body`, the request's text, in its own order (objects' properties are generated in
// the order the schema lists them; a parsed Json has its keys sorted). ApiError (400) naming
// response_format.json_schema.schema when the schema cannot be enforced, or response_format when
// the model's tokenizer has no byte form for grammars.
std::shared_ptr<const grammar::CompiledGrammar> response_grammar(engine::Engine& engine,
                                                                 const ResponseFormat& format,
                                                                 const std::string& body);

}  // namespace xlacel::server
