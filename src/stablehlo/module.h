#pragma once
// A Module: several functions printed as one `module @name { ... }`, e.g. public entry points
// `prefill` and `decode_step` and the private helpers they call. Syntax: see printer.h.
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "stablehlo/function.h"

namespace xlacel::stablehlo {

class Module {
 public:
  // `name` must be an identifier.
  explicit Module(std::string name);

  // A new, empty function owned by the module (stable address); names must be unique.
  Function& add_function(std::string name, Visibility visibility = Visibility::kPublic);
  // nullptr when absent.
  Function* find(std::string_view name) const;
  // A top-level item of another dialect that an op of the module names (an IREE executable that
  // a dispatch calls), printed verbatim before the functions; added once per `key`.
  void add_declaration(const std::string& key, std::string text);
  // Sets `name = value` in the module's attribute dictionary (`module @name attributes {...}`),
  // e.g. mhlo.num_partitions for a program partitioned over several devices.
  void set_attribute(std::string name, std::string value);

  const std::string& name() const { return name_; }
  const std::vector<std::unique_ptr<Function>>& functions() const { return functions_; }

  // The module text. Throws BuildError if a function is unfinished or calls a function that is
  // not in the module.
  std::string to_text() const;

 private:
  std::string name_;
  std::vector<std::pair<std::string, std::string>> declarations_;  // key, text
  std::map<std::string, std::string> attributes_;                  // name -> attribute text
  std::vector<std::unique_ptr<Function>> functions_;
};

}  // namespace xlacel::stablehlo
