#include "stablehlo/foreign.h"

#include <map>

#include "stablehlo/detail.h"

namespace xlacel::stablehlo {

namespace {

// Marks in `other_use` the arguments (by position) that `block` uses other than as a foreign
// op's operand; `argument_of` maps the block's values (by index) that are arguments.
void find_other_uses(const Block& block, const std::map<int32_t, std::size_t>& argument_of,
                     std::vector<bool>& other_use) {
  auto mark = [&](const Value& value) {
    if (auto found = argument_of.find(value.index()); found != argument_of.end()) {
      other_use[found->second] = true;
    }
  };
  for (const Operation& op : block.operations()) {
    if (!op.foreign) {
      for (const Value& operand : op.operands) mark(operand);
    }
    for (const auto& region : op.regions) {
      // A region names what it captures through its own stand-ins.
      std::map<int32_t, std::size_t> captured;
      for (std::size_t i = 0; i < region->captured().size(); ++i) {
        if (auto found = argument_of.find(region->captured()[i].index());
            found != argument_of.end()) {
          captured[region->stand_ins()[i].index()] = found->second;
        }
      }
      find_other_uses(*region, captured, other_use);
    }
  }
  for (const Value& value : block.returned()) mark(value);
}

}  // namespace

Value foreign_op(std::string name, std::vector<Value> operands,
                 std::map<std::string, std::string> attributes, TensorType result) {
  Operation op = detail::operation(std::move(name), std::move(operands), std::move(attributes));
  op.foreign = true;
  return detail::emit(std::move(op), std::move(result));
}

std::set<std::string> arguments_only_foreign_ops_read(const Function& function) {
  const std::vector<Argument>& arguments = function.arguments();
  std::map<int32_t, std::size_t> argument_of;
  for (std::size_t i = 0; i < arguments.size(); ++i) argument_of[arguments[i].value.index()] = i;
  std::vector<bool> other_use(arguments.size(), false);
  find_other_uses(function.body(), argument_of, other_use);
  std::set<std::string> names;
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    if (!other_use[i]) names.insert(arguments[i].name);
  }
  return names;
}

}  // namespace xlacel::stablehlo
