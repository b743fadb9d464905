#pragma once
// Evaluates a parsed template the way jinja2's generated code does: scoping (for loops and macros
// open a scope, if does not), loop objects, namespaces, macros and call blocks, break/continue,
// Undefined semantics and the sandbox's attribute rules. Guards against hostile templates with
// limits on output size, loop iterations and call depth.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "chat/jinja_ast.h"
#include "chat/jinja_value.h"

namespace xlacel::jinja {

struct Limits {
  std::size_t max_output_bytes = 32u << 20;  // everything written, including captured blocks
  std::int64_t max_iterations = 1'000'000;   // loop iterations and macro calls together
  int max_call_depth = 64;                   // nested macro/caller calls
};

struct Frame {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Frame> parent;
};
using FramePtr = std::shared_ptr<Frame>;

class Interpreter {
 public:
  Interpreter(std::string where, Limits limits) : where_(std::move(where)), limits_(limits) {}

  // Renders with `globals` (functions) under `variables`. Throws xlacel::Error naming the line.
  std::string render(const Template& tmpl, const DictData& globals, const DictData& variables);

  // Used by filters, tests and methods.
  Value call(const Value& callee, CallArgs& args);
  Value getattr(const Value& obj, const std::string& name);
  Value getitem(const Value& obj, const Value& key);
  void count_iterations(std::int64_t n);

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  Flow exec(const Body& body, const FramePtr& frame, std::string& out);
  Flow exec_stmt(const Stmt& stmt, const FramePtr& frame, std::string& out);
  void exec_for(const Stmt& stmt, const FramePtr& frame, std::string& out);
  Value eval(const Expr& expr, const FramePtr& frame);
  Value eval_filter(const Expr& expr, Value input, const FramePtr& frame);
  Value eval_compare(const Expr& expr, const FramePtr& frame);
  Value eval_slice(const Value& obj, const Expr& slice, const FramePtr& frame);
  CallArgs eval_args(const Expr& expr, std::size_t first, const FramePtr& frame);
  Value lookup(const std::string& name, const FramePtr& frame) const;
  void assign(const Expr& target, const Value& value, const FramePtr& frame);
  Value make_macro(const Stmt& stmt, const FramePtr& frame, const std::string& name);
  void emit(std::string& out, std::string_view text);

  std::string where_;
  Limits limits_;
  // Macros hold their defining frame, which holds them; namespaces may hold themselves. These
  // reference cycles are broken when rendering ends.
  std::vector<FramePtr> macro_frames_;
  std::vector<Value> namespaces_;
  std::unordered_set<const void*> namespace_ids_;
  std::size_t output_bytes_ = 0;
  std::int64_t iterations_ = 0;
  int call_depth_ = 0;
  int line_ = 0;
};

}  // namespace xlacel::jinja
