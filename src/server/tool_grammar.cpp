#include "server/tool_grammar.h"

#include "common/error.h"
#include "server/api_error.h"

namespace xlacel::server {

std::shared_ptr<const grammar::CompiledGrammar> tool_grammar(engine::Engine& engine,
                                                             const ToolCallSyntax& syntax,
                                                             const ToolOptions& options,
                                                             const std::string& body) {
  if (!options.active()) return nullptr;
  const bool required = options.choice != ToolChoice::kAuto;
  // "auto": free text, and a call's arguments constrained once its marker starts it. Grammars
  // never allow special tokens, so where the family's marker is one in this vocabulary (Mistral's
  // [TOOL_CALLS], Granite's <|tool_call|>), a grammar would stop the model from calling at all:
  // those replies stay unconstrained.
  if (!required && !marker_tokens(syntax, engine.text().tokenizer()).empty()) return nullptr;
  const std::string tag = tool_call_structural_tag(syntax, OrderedJson::parse(body).at("tools"),
                                                   required, options.named, options.parallel)
                              .dump();
  try {
    return engine.grammars().structural_tag(tag, "tools");
  } catch (const Error& e) {
    throw invalid_request("tools", e.what());
  }
}

}  // namespace xlacel::server
