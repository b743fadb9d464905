#include "cli/grammar_flags.h"

#include <fstream>
#include <sstream>

#include "common/error.h"

namespace xlacel::cli {

void add_grammar_flags(CLI::App* command, GrammarFlags& flags) {
  auto* schema = command->add_option("--json-schema", flags.json_schema_path,
                                     "constrain the output to this JSON schema (a file)");
  command->add_flag("--grammar-json", flags.json_object, "constrain the output to a JSON object")
      ->excludes(schema);
}

std::shared_ptr<const grammar::CompiledGrammar> grammar_from_flags(engine::Engine& engine,
                                                                   const GrammarFlags& flags) {
  if (flags.json_object) return engine.grammars().json_object();
  if (flags.json_schema_path.empty()) return nullptr;
  // The file's own text: a parsed Json would sort the properties, which are generated in order.
  std::ifstream in(flags.json_schema_path, std::ios::binary);
  if (!in) fail(flags.json_schema_path, "cannot open");
  std::ostringstream schema;
  schema << in.rdbuf();
  return engine.grammars().json_schema(schema.str(), flags.json_schema_path);
}

}  // namespace xlacel::cli
