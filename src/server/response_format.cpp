#include "server/response_format.h"

#include <fmt/format.h>

#include "server/api_error.h"
#include "server/json_fields.h"

namespace xlacel::server {

namespace {

constexpr const char* kSchemaField = "response_format.json_schema.schema";

// OpenAI's rule for the schema's name: a-z, A-Z, 0-9, underscores and dashes, 64 at most.
bool valid_schema_name(const std::string& name) {
  return !name.empty() && name.size() <= 64 &&
         name.find_first_not_of(
             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") ==
             std::string::npos;
}

void check_json_schema(const Json& format) {
  const Json* spec = field(format, "json_schema");
  if (spec == nullptr || !spec->is_object()) {
    throw invalid_request("response_format.json_schema",
                          fmt::format("'response_format.json_schema' must be an object with "
                                      "'name' and 'schema', got {}",
                                      spec == nullptr ? "none" : type_name(*spec)));
  }
  const Json* name = field(*spec, "name");
  if (name == nullptr || !name->is_string() || !valid_schema_name(name->get<std::string>())) {
    throw invalid_request("response_format.json_schema.name",
                          "'response_format.json_schema.name' must be a string of a-z, A-Z, "
                          "0-9, '_' and '-' (at most 64)");
  }
  if (const Json* strict = field(*spec, "strict")) {
    boolean(*strict, "response_format.json_schema.strict");
  }
  if (const Json* description = field(*spec, "description");
      description && !description->is_string()) {
    throw invalid_request("response_format.json_schema.description",
                          "'response_format.json_schema.description' must be a string");
  }
  const Json* schema = field(*spec, "schema");
  if (schema == nullptr || !schema->is_object()) {
    throw invalid_request(kSchemaField,
                          fmt::format("'{}' must be a JSON schema object, got {}", kSchemaField,
                                      schema == nullptr ? "none" : type_name(*schema)));
  }
}

}  // namespace

ResponseFormat parse_response_format(const Json& value) {
  if (!value.is_object()) {
    throw invalid_request(
        "response_format",
        fmt::format("'response_format' must be an object, got {}", type_name(value)));
  }
  const Json* type = field(value, "type");
  const std::string name = type != nullptr && type->is_string() ? type->get<std::string>() : "";
  ResponseFormat format;
  if (name == "text") return format;
  if (name == "json_object") {
    format.type = ResponseFormat::Type::kJsonObject;
    return format;
  }
  if (name == "json_schema") {
    format.type = ResponseFormat::Type::kJsonSchema;
    check_json_schema(value);
    return format;
  }
  throw invalid_request("response_format.type",
                        fmt::format("'response_format.type' must be \"text\", \"json_object\" or "
                                    "\"json_schema\", got {}",
                                    type == nullptr ? "none" : type->dump()));
}

}  // namespace xlacel::server
