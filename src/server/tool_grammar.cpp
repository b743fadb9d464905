#include "server/tool_grammar.h"

#include <fmt/format.h>

#include "common/error.h"
#include "grammar/json_schema_support.h"
#include "server/api_error.h"

namespace xlacel::server {

std::shared_ptr<const grammar::CompiledGrammar> tool_grammar(engine::Engine& engine,
                                                             const ToolCallSyntax& syntax,
                                                             const ToolOptions& options,
                                                             const OrderedJson& ordered_tools) {
  if (!options.active()) return nullptr;
  const bool required = options.choice != ToolChoice::kAuto;
  // "auto": free text, and a call's arguments constrained once its marker starts it. Grammars
  // never allow special tokens, so where the family's marker is one in this vocabulary (Mistral's
  // [TOOL_CALLS], Granite's <|tool_call|>), a grammar would stop the model from calling at all:
  // those replies stay unconstrained.
  if (!required && !marker_tokens(syntax, engine.text().tokenizer()).empty()) return nullptr;
  // What the grammar cannot enforce (a schema keyword xgrammar would drop, a vocabulary without
  // byte pieces): required calls are refused with a 400 naming it; auto ones go unconstrained.
  for (std::size_t i = 0; i < options.tools.size(); ++i) {
    const Json& function = options.tools[i]["function"];
    if ((!options.named.empty() && function["name"] != options.named) ||
        !function.contains("parameters")) {
      continue;
    }
    if (auto keyword = grammar::unsupported_schema_keyword(function["parameters"])) {
      if (!required) return nullptr;
      const std::string param = fmt::format("tools[{}].function.parameters", i);
      throw invalid_request(param,
                            fmt::format("'{}' cannot be enforced for tool_choice {}: {}", param,
                                        options.named.empty() ? "required" : "named", *keyword));
    }
  }
  const std::string tag =
      tool_call_structural_tag(syntax, ordered_tools, required, options.named, options.parallel)
          .dump();
  try {
    return engine.grammars().structural_tag(tag, "tools");
  } catch (const Error& e) {
    if (!required) return nullptr;
    throw invalid_request("tool_choice", e.what());
  }
}

}  // namespace xlacel::server
