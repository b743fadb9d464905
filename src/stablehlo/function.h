#pragma once
// The graph under construction: values, operations, blocks and functions.
//
// A Value is a handle to one SSA value (a block argument or an op result) and carries its
// TensorType. Ops are free functions (ops.h) that take Values, infer the result type per the
// StableHLO spec, reject bad operands with BuildError and append one operation to the Block the
// operands live in; ops without operands (constant, iota, call) take that Block explicitly.
// A Block is a function body or the body of a reduce, scatter, if or while; values may only be
// used in the block that defines them. A branch of an if or a loop's body reads values of the
// block around it through captures: stand-ins of its own, printed with the outer value's name
// (MLIR's implicit capture).
//
//   Function f("scale", Visibility::kPublic);
//   Value x = f.argument("x", TensorType(ElementType::kF32, {2, 3}));
//   Value two = constant(f.body(), x.type(), 2.0);
//   f.finish({multiply(x, two)});
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "stablehlo/types.h"

namespace xlacel::stablehlo {

class Block;
class Function;
class Module;

class Value {
 public:
  Value() = default;

  bool valid() const { return block_ != nullptr; }
  const TensorType& type() const;
  ElementType element() const { return type().element(); }
  const std::vector<int64_t>& shape() const { return type().shape(); }
  int64_t rank() const { return type().rank(); }
  Block& block() const { return *block_; }
  int32_t index() const { return index_; }  // position in its block's value table

  friend bool operator==(const Value&, const Value&) = default;

 private:
  friend class Block;
  Value(Block* block, int32_t index) : block_(block), index_(index) {}
  Block* block_ = nullptr;
  int32_t index_ = -1;
};

// One operation as it will be printed: name, operands, results, attributes already in MLIR
// attribute syntax (kept sorted by name, as MLIR prints them), and nested regions.
struct Operation {
  std::string name;  // "stablehlo.add"
  std::vector<Value> operands;
  std::vector<Value> results;
  std::map<std::string, std::string> attributes;  // name -> attribute text
  std::vector<std::unique_ptr<Block>> regions;
  bool foreign = false;  // made by foreign_op (foreign.h)
};

class Block {
 public:
  // `terminator` is the op that ends the block when printed ("func.return", "stablehlo.return").
  Block(Function* function, std::string terminator);
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;

  Value add_argument(TensorType type);
  // A stand-in in this block for `outer`, a value of an enclosing block: ops here use the
  // stand-in, and the printed region names `outer` itself. Capturing a value again returns the
  // same stand-in.
  Value capture(Value outer);
  // The enclosing values captured, and their stand-ins here (parallel).
  const std::vector<Value>& captured() const { return captured_; }
  const std::vector<Value>& stand_ins() const { return stand_ins_; }
  // Appends `op` (its operands must belong to this block) with results of `result_types`.
  std::vector<Value> append(Operation op, const std::vector<TensorType>& result_types);
  // Ends the block: the values its terminator returns.
  void set_terminator(std::vector<Value> values);

  // Throws BuildError naming `op` unless every value is valid and defined in this block.
  void check_owns(std::string_view op, std::span<const Value> values) const;

  size_t value_count() const { return types_.size(); }  // arguments, stand-ins and results
  const TensorType& type_of(int32_t index) const { return types_.at(static_cast<size_t>(index)); }
  const std::vector<Value>& arguments() const { return arguments_; }
  const std::vector<Operation>& operations() const { return operations_; }
  bool terminated() const { return terminated_; }
  const std::vector<Value>& returned() const { return returned_; }
  const std::string& terminator() const { return terminator_; }
  Function* function() const { return function_; }

 private:
  Function* function_;
  std::string terminator_;
  std::vector<TensorType> types_;  // every value of the block, by Value::index
  std::vector<Value> arguments_;
  std::vector<Value> captured_;
  std::vector<Value> stand_ins_;
  std::vector<Operation> operations_;
  std::vector<Value> returned_;
  bool terminated_ = false;
};

enum class Visibility { kPublic, kPrivate };

struct Argument {
  std::string name;  // printed as the SSA name: %name
  Value value;
  std::map<std::string, std::string> attributes;  // e.g. tf.aliasing_output -> "1 : i32"
};

class Function {
 public:
  // `name` must be an identifier ([A-Za-z_][A-Za-z0-9_]*).
  explicit Function(std::string name, Visibility visibility = Visibility::kPublic);
  Function(const Function&) = delete;
  Function& operator=(const Function&) = delete;

  // Adds an argument; `name` must be an identifier, unique in the function. Printed as %name.
  Value argument(std::string name, TensorType type);
  // Adds `name = value` (value in MLIR attribute syntax) to an argument's attribute dictionary.
  void set_argument_attribute(Value argument, std::string name, std::string value);
  // Donates `argument` to result `result_index` (tf.aliasing_output = N : i32): the runtime may
  // reuse the argument's buffer for that result (a KV cache updated in place). The result must
  // have the argument's type; checked by finish().
  void alias_output(Value argument, int64_t result_index);
  // Adds `name = value` to result `result_index`'s attribute dictionary (e.g. sdy.sharding), once
  // the function is finished.
  void set_result_attribute(int64_t result_index, std::string name, std::string value);

  Block& body() { return *body_; }
  const Block& body() const { return *body_; }
  // Ends the function with func.return of `results`; result types are theirs.
  void finish(std::vector<Value> results);
  bool finished() const { return body_->terminated(); }

  const std::string& name() const { return name_; }
  Visibility visibility() const { return visibility_; }
  // The module that owns the function (Module::add_function); nullptr for a standalone one.
  Module* module() const { return module_; }
  const std::vector<Argument>& arguments() const { return arguments_; }
  std::vector<TensorType> argument_types() const;
  std::vector<TensorType> result_types() const;  // empty until finished
  // Each result's attributes (empty dictionaries unless set), in result order.
  const std::vector<std::map<std::string, std::string>>& result_attributes() const {
    return result_attributes_;
  }

 private:
  void check_aliases(const std::vector<TensorType>& results) const;

  friend class Module;
  std::string name_;
  Visibility visibility_;
  Module* module_ = nullptr;
  std::unique_ptr<Block> body_;
  std::vector<Argument> arguments_;
  std::vector<std::map<std::string, std::string>> result_attributes_;
};

// func.call of `callee` (a finished function of the same module, printed by name) from `where`.
std::vector<Value> call(Block& where, const Function& callee, const std::vector<Value>& arguments);

// True for [A-Za-z_][A-Za-z0-9_]*.
bool is_identifier(std::string_view name);

}  // namespace xlacel::stablehlo
