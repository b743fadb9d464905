#include "stablehlo/function.h"

#include <algorithm>

namespace xlacel::stablehlo {

const TensorType& Value::type() const {
  if (block_ == nullptr) throw BuildError("use of an empty (default-constructed) Value");
  return block_->type_of(index_);
}

Block::Block(Function* function, std::string terminator)
    : function_(function), terminator_(std::move(terminator)) {}

Value Block::add_argument(TensorType type) {
  if (!operations_.empty()) throw BuildError("block arguments must come before operations");
  Value value(this, static_cast<int32_t>(types_.size()));
  types_.push_back(std::move(type));
  arguments_.push_back(value);
  return value;
}

Value Block::capture(Value outer) {
  if (!outer.valid()) throw BuildError("capture of an empty Value");
  if (&outer.block() == this) throw BuildError("a block cannot capture its own value");
  for (size_t i = 0; i < captured_.size(); ++i) {
    if (captured_[i] == outer) return stand_ins_[i];
  }
  Value stand_in(this, static_cast<int32_t>(types_.size()));
  types_.push_back(outer.type());
  stand_ins_.push_back(stand_in);
  captured_.push_back(outer);
  return stand_in;
}

std::vector<Value> Block::append(Operation op, const std::vector<TensorType>& result_types) {
  check_owns(op.name, op.operands);
  if (terminated_) build_fail(op.name, "the block was already finished");
  op.results.clear();
  for (const TensorType& type : result_types) {
    op.results.push_back(Value(this, static_cast<int32_t>(types_.size())));
    types_.push_back(type);
  }
  operations_.push_back(std::move(op));
  return operations_.back().results;
}

void Block::set_terminator(std::vector<Value> values) {
  check_owns(terminator_, values);
  if (terminated_) build_fail(terminator_, "the block was already finished");
  returned_ = std::move(values);
  terminated_ = true;
}

void Block::check_owns(std::string_view op, std::span<const Value> values) const {
  for (size_t i = 0; i < values.size(); ++i) {
    if (!values[i].valid()) build_fail(op, "operand #{} is an empty Value", i);
    if (&values[i].block() != this) {
      build_fail(op,
                 "operand #{} ({}) is defined in another block or function (values cannot "
                 "cross functions; an if's branches read outer values through Block::capture)",
                 i, values[i].type().str());
    }
  }
}

bool is_identifier(std::string_view name) {
  if (name.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(name[0])) return false;
  return std::all_of(name.begin(), name.end(),
                     [&](char c) { return alpha(c) || (c >= '0' && c <= '9'); });
}

Function::Function(std::string name, Visibility visibility)
    : name_(std::move(name)),
      visibility_(visibility),
      body_(std::make_unique<Block>(this, "func.return")) {
  if (!is_identifier(name_)) build_fail("func.func", "bad function name '{}'", name_);
}

Value Function::argument(std::string name, TensorType type) {
  if (!is_identifier(name)) build_fail("func.func", "@{}: bad argument name '{}'", name_, name);
  for (const Argument& arg : arguments_) {
    if (arg.name == name) build_fail("func.func", "@{}: duplicate argument name '{}'", name_, name);
  }
  if (!body_->operations().empty()) {
    build_fail("func.func", "@{}: argument '{}' added after the first operation", name_, name);
  }
  Value value = body_->add_argument(std::move(type));
  arguments_.push_back({std::move(name), value, {}});
  return value;
}

void Function::set_argument_attribute(Value argument, std::string name, std::string value) {
  for (Argument& arg : arguments_) {
    if (arg.value == argument) {
      arg.attributes[std::move(name)] = std::move(value);
      return;
    }
  }
  build_fail("func.func", "@{}: attribute '{}' set on a value that is not one of its arguments",
             name_, name);
}

void Function::alias_output(Value argument, int64_t result_index) {
  if (result_index < 0) build_fail("func.func", "@{}: negative aliased result index", name_);
  set_argument_attribute(argument, "tf.aliasing_output", fmt::format("{} : i32", result_index));
  if (finished()) check_aliases(result_types());
}

void Function::set_result_attribute(int64_t result_index, std::string name, std::string value) {
  if (!finished())
    build_fail("func.func", "@{}: result attribute '{}' set before finish()", name_, name);
  if (result_index < 0 || static_cast<size_t>(result_index) >= result_attributes_.size()) {
    build_fail("func.func", "@{}: attribute '{}' set on result {} of {}", name_, name, result_index,
               result_attributes_.size());
  }
  result_attributes_[static_cast<size_t>(result_index)][std::move(name)] = std::move(value);
}

void Function::finish(std::vector<Value> results) {
  body_->check_owns("func.return", results);
  std::vector<TensorType> types;
  for (const Value& v : results) types.push_back(v.type());
  check_aliases(types);
  result_attributes_.assign(results.size(), {});
  body_->set_terminator(std::move(results));
}

void Function::check_aliases(const std::vector<TensorType>& results) const {
  std::vector<bool> taken(results.size(), false);
  for (const Argument& arg : arguments_) {
    auto it = arg.attributes.find("tf.aliasing_output");
    if (it == arg.attributes.end()) continue;
    size_t index = std::stoul(it->second);
    if (index >= results.size()) {
      build_fail("func.func", "@{}: argument %{} aliases result {} but there are {} results", name_,
                 arg.name, index, results.size());
    }
    if (results[index] != arg.value.type()) {
      build_fail("func.func", "@{}: argument %{} ({}) aliases result {} of another type ({})",
                 name_, arg.name, arg.value.type().str(), index, results[index].str());
    }
    if (taken[index]) {
      build_fail("func.func", "@{}: result {} is aliased by two arguments", name_, index);
    }
    taken[index] = true;
  }
}

std::vector<TensorType> Function::argument_types() const {
  std::vector<TensorType> types;
  for (const Argument& arg : arguments_) types.push_back(arg.value.type());
  return types;
}

std::vector<TensorType> Function::result_types() const {
  std::vector<TensorType> types;
  for (const Value& v : body_->returned()) types.push_back(v.type());
  return types;
}

std::vector<Value> call(Block& where, const Function& callee, const std::vector<Value>& arguments) {
  constexpr std::string_view kOp = "func.call";
  if (!callee.finished())
    build_fail(kOp, "@{} is not finished (no func.return yet)", callee.name());
  if (where.function() == &callee) build_fail(kOp, "@{} calls itself", callee.name());
  std::vector<TensorType> expected = callee.argument_types();
  std::vector<TensorType> given;
  for (const Value& v : arguments) given.push_back(v.type());
  if (given != expected) {
    build_fail(kOp, "@{} takes ({}) but was given ({})", callee.name(), join_types(expected),
               join_types(given));
  }
  Operation op;
  op.name = kOp;
  op.operands = arguments;
  op.attributes["callee"] = "@" + callee.name();
  return where.append(std::move(op), callee.result_types());
}

}  // namespace xlacel::stablehlo
