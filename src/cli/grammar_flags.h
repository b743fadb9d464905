#pragma once
// The flags that constrain output to a grammar, shared by `generate` and `chat`:
// --json-schema FILE (a JSON schema) and --grammar-json (any JSON object).
#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "engine/engine.h"

namespace xlacel::cli {

struct GrammarFlags {
  std::string json_schema_path;  // --json-schema
  bool json_object = false;      // --grammar-json

  bool any() const { return !json_schema_path.empty() || json_object; }
};

void add_grammar_flags(CLI::App* command, GrammarFlags& flags);

// The grammar the flags ask for (null: none), compiled for the engine's model; Error naming the
// schema file (or the flag) when it cannot be read or enforced.
std::shared_ptr<const grammar::CompiledGrammar> grammar_from_flags(engine::Engine& engine,
                                                                   const GrammarFlags& flags);

}  // namespace xlacel::cli
