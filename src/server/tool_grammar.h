#pragma once
// Tool calls constrained by a grammar (grammar/grammar_compiler.h): the reply tool_choice asks
// for, in the syntax of the model's family.
#include <memory>
#include <string>

#include "chat/tool_call_format.h"
#include "engine/engine.h"
#include "server/tool_calls.h"

namespace xlacel::server {

// The grammar of the reply tool_choice asks for: "required" or the named function, calls only;
// "auto", free text in which a call, once its marker starts it, follows the family's syntax with
// arguments that match the tool's `parameters` (tool_call_structural_tag); null for "none", and
// for "auto" where the family's marker is a special token (grammars never allow those).
// `ordered_tools`: the tools in OpenAI's function shape as the request's text has them, whose
// schemas keep their key order there. 400 naming `tools` when a schema cannot be enforced.
std::shared_ptr<const grammar::CompiledGrammar> tool_grammar(engine::Engine& engine,
                                                             const ToolCallSyntax& syntax,
                                                             const ToolOptions& options,
                                                             const OrderedJson& ordered_tools);

}  // namespace xlacel::server
