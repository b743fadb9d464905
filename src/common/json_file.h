#pragma once
// JSON files as the model formats use them: parse errors and missing or mistyped fields become
// one-line Errors naming the file.
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace xlacel {

using Json = nlohmann::json;

Json read_json_file(const std::string& path);                   // throws Error naming path
Json parse_json_text(std::string_view text, std::string_view where);  // throws Error naming where

}  // namespace xlacel
