#include "server/response_grammar.h"

#include <algorithm>

#include "common/error.h"
#include "server/api_error.h"

namespace xlacel::server {

std::shared_ptr<const grammar::CompiledGrammar> response_grammar(engine::Engine& engine,
                                                                 const ResponseFormat& format,
                                                                 const std::string& body) {
  if (format.type == ResponseFormat::Type::kText) return nullptr;
  grammar::GrammarCompiler* compiler = nullptr;
  try {
    compiler = &engine.grammars();
  } catch (const Error& e) {
    // The request's field that holds the format: response_format, text, output_config.
    throw invalid_request(format.schema_field.substr(0, format.schema_field.find('.')), e.what());
  }
  if (format.type == ResponseFormat::Type::kJsonObject) return compiler->json_object();
  std::string pointer = "/" + format.schema_field;
  std::replace(pointer.begin(), pointer.end(), '.', '/');
  const std::string schema =
      nlohmann::ordered_json::parse(body).at(nlohmann::ordered_json::json_pointer(pointer)).dump();
  try {
    return compiler->json_schema(schema, format.schema_field);
  } catch (const Error& e) {
    throw invalid_request(format.schema_field, e.what());
  }
}

}  // namespace xlacel::server
