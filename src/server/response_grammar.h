#pragma once
// The grammar a request's output format asks for (server/response_format.h), compiled for the
// loaded model by its grammar compiler (grammar/grammar_compiler.h).
#include <memory>
#include <string>

#include "engine/engine.h"
#include "server/response_format.h"

namespace xlacel::server {

// Null for text. The schema is read from `body`, the request's text, at format.schema_field, in
// its own order (objects' properties are generated in the order the schema lists them; a parsed
// Json has its keys sorted). ApiError (400) naming the schema's field when the schema cannot be
// enforced, or response_format when the model's tokenizer has no byte form for grammars.
std::shared_ptr<const grammar::CompiledGrammar> response_grammar(engine::Engine& engine,
                                                                 const ResponseFormat& format,
                                                                 const std::string& body);

}  // namespace xlacel::server
