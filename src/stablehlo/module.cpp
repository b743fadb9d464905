#include "stablehlo/module.h"

#include "stablehlo/printer.h"

namespace xlacel::stablehlo {
namespace {

void check_calls(const Module& module, const Function& f, const Block& block) {
  for (const Operation& op : block.operations()) {
    if (op.name == "func.call") {
      std::string callee = op.attributes.at("callee").substr(1);
      if (module.find(callee) == nullptr) {
        build_fail("func.call", "@{} calls @{}, which is not in module @{}", f.name(), callee,
                   module.name());
      }
    }
    for (const auto& region : op.regions) check_calls(module, f, *region);
  }
}

}  // namespace

Module::Module(std::string name) : name_(std::move(name)) {
  if (!is_identifier(name_)) build_fail("module", "bad module name '{}'", name_);
}

Function& Module::add_function(std::string name, Visibility visibility) {
  if (find(name) != nullptr) build_fail("module", "@{} already has a function @{}", name_, name);
  functions_.push_back(std::make_unique<Function>(std::move(name), visibility));
  functions_.back()->module_ = this;
  return *functions_.back();
}

Function* Module::find(std::string_view name) const {
  for (const auto& f : functions_) {
    if (f->name() == name) return f.get();
  }
  return nullptr;
}

void Module::add_declaration(const std::string& key, std::string text) {
  for (const auto& declaration : declarations_) {
    if (declaration.first == key) return;
  }
  declarations_.emplace_back(key, std::move(text));
}

void Module::set_attribute(std::string name, std::string value) {
  attributes_[std::move(name)] = std::move(value);
}

std::string Module::to_text() const {
  std::string attributes;
  for (const auto& [name, value] : attributes_) {
    attributes +=
        fmt::format("{}{} = {}", attributes.empty() ? " attributes {" : ", ", name, value);
  }
  if (!attributes.empty()) attributes += "}";
  std::string text = fmt::format("module @{}{} {{\n", name_, attributes);
  for (const auto& declaration : declarations_) text += declaration.second + "\n";
  for (const auto& f : functions_) {
    check_calls(*this, *f, f->body());
    text += print_function(*f, 2);
  }
  text += "}\n";
  return text;
}

}  // namespace xlacel::stablehlo
