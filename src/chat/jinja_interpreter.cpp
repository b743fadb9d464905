#include "chat/jinja_interpreter.h"

#include <fmt/format.h>

#include "chat/jinja_builtins.h"
#include "chat/jinja_operators.h"
#include "common/error.h"

namespace xlacel::jinja {
namespace {

bool expr_uses(const Expr* e, const std::string& name) {
  if (!e) return false;
  if (e->kind == ExprKind::kName && e->name == name) return true;
  for (const auto& c : e->children) {
    if (expr_uses(c.get(), name)) return true;
  }
  for (const auto& k : e->keywords) {
    if (expr_uses(k.value.get(), name)) return true;
  }
  return false;
}

// Whether a macro body reads `name` (jinja2 then lets the macro take extra arguments).
bool body_uses(const Body& body, const std::string& name) {
  for (const auto& s : body) {
    if (expr_uses(s->expr.get(), name) || expr_uses(s->filter.get(), name) ||
        body_uses(s->body, name) || body_uses(s->else_body, name)) {
      return true;
    }
    for (const auto& d : s->defaults) {
      if (expr_uses(d.get(), name)) return true;
    }
    for (const auto& v : s->with_values) {
      if (expr_uses(v.get(), name)) return true;
    }
  }
  return false;
}

std::string object_type_repr(const Value& v) {
  if (v.is_none()) return "None";
  return type_name(v) + " object";
}

Value no_attribute(const Value& obj, const std::string& name) {
  return Value::undefined(fmt::format("'{}' has no attribute '{}'", object_type_repr(obj), name));
}

// Python slice index normalization (PySlice_AdjustIndices).
std::vector<std::size_t> slice_indices(std::int64_t length, std::optional<std::int64_t> start,
                                       std::optional<std::int64_t> stop,
                                       std::optional<std::int64_t> step_opt) {
  std::int64_t step = step_opt.value_or(1);
  if (step == 0) throw RuntimeError("slice step cannot be zero");
  auto adjust = [&](std::optional<std::int64_t> v, std::int64_t dflt) {
    if (!v) return dflt;
    std::int64_t x = *v;
    if (x < 0) {
      x += length;
      if (x < 0) x = step < 0 ? -1 : 0;
    } else if (x >= length) {
      x = step < 0 ? length - 1 : length;
    }
    return x;
  };
  std::int64_t lo = adjust(start, step < 0 ? length - 1 : 0);
  std::int64_t hi = adjust(stop, step < 0 ? -1 : length);
  std::vector<std::size_t> out;
  if (step > 0) {
    for (std::int64_t i = lo; i < hi; i += step) out.push_back(static_cast<std::size_t>(i));
  } else {
    for (std::int64_t i = lo; i > hi; i += step) out.push_back(static_cast<std::size_t>(i));
  }
  return out;
}

}  // namespace

std::string Interpreter::render(const Template& tmpl, const DictData& globals,
                                const DictData& variables) {
  auto global_frame = std::make_shared<Frame>();
  for (const auto& [k, v] : globals.entries) global_frame->vars[k.as_string()] = v;
  auto root = std::make_shared<Frame>();
  root->parent = global_frame;
  for (const auto& [k, v] : variables.entries) root->vars[k.as_string()] = v;
  std::string out;
  struct BreakCycles {
    Interpreter& self;
    ~BreakCycles() {
      for (const FramePtr& f : self.macro_frames_) f->vars.clear();
      for (const Value& ns : self.namespaces_) ns.object_data().attributes.entries.clear();
      self.macro_frames_.clear();
      self.namespaces_.clear();
      self.namespace_ids_.clear();
    }
  } break_cycles{*this};
  try {
    exec(tmpl.body, root, out);
  } catch (const TemplateRaised& e) {
    fail(where_, "line {}: template raised an exception: {}", line_, e.what());
  } catch (const RuntimeError& e) {
    fail(where_, "line {}: {}", line_, e.what());
  }
  return out;
}

void Interpreter::emit(std::string& out, std::string_view text) {
  output_bytes_ += text.size();
  if (output_bytes_ > limits_.max_output_bytes) {
    throw RuntimeError(fmt::format("output too large (limit {} bytes)", limits_.max_output_bytes));
  }
  out += text;
}

void Interpreter::count_iterations(std::int64_t n) {
  iterations_ += n;
  if (iterations_ > limits_.max_iterations) {
    throw RuntimeError(
        fmt::format("too many loop iterations or calls (limit {})", limits_.max_iterations));
  }
}

Interpreter::Flow Interpreter::exec(const Body& body, const FramePtr& frame, std::string& out) {
  for (const StmtPtr& stmt : body) {
    Flow flow = exec_stmt(*stmt, frame, out);
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::exec_stmt(const Stmt& stmt, const FramePtr& frame,
                                         std::string& out) {
  line_ = stmt.line;
  switch (stmt.kind) {
    case StmtKind::kText:
      emit(out, stmt.text);
      break;
    case StmtKind::kPrint: {
      Value v = eval(*stmt.expr, frame);
      emit(out, to_str(v));
      break;
    }
    case StmtKind::kIf: {
      if (truthy(eval(*stmt.expr, frame))) return exec(stmt.body, frame, out);
      return exec(stmt.else_body, frame, out);
    }
    case StmtKind::kFor:
      exec_for(stmt, frame, out);
      break;
    case StmtKind::kSet:
      assign(*stmt.target, eval(*stmt.expr, frame), frame);
      break;
    case StmtKind::kSetBlock: {
      std::string captured;
      exec(stmt.body, frame, captured);
      Value v = Value::string(std::move(captured));
      if (stmt.filter) v = eval_filter(*stmt.filter, v, frame);
      line_ = stmt.line;
      assign(*stmt.target, v, frame);
      break;
    }
    case StmtKind::kFilterBlock: {
      std::string captured;
      exec(stmt.body, frame, captured);
      Value v = eval_filter(*stmt.filter, Value::string(std::move(captured)), frame);
      emit(out, to_str(v));
      break;
    }
    case StmtKind::kMacro:
      frame->vars[stmt.name] = make_macro(stmt, frame, stmt.name);
      break;
    case StmtKind::kCallBlock: {
      const Expr& call = *stmt.expr;
      Value callee = eval(*call.children[0], frame);
      CallArgs args = eval_args(call, 1, frame);
      args.keyword.emplace_back("caller", make_macro(stmt, frame, "caller"));
      line_ = stmt.line;
      emit(out, to_str(this->call(callee, args)));
      break;
    }
    case StmtKind::kBreak:
      return Flow::kBreak;
    case StmtKind::kContinue:
      return Flow::kContinue;
    case StmtKind::kWith: {
      auto inner = std::make_shared<Frame>();
      inner->parent = frame;
      std::vector<Value> values;
      for (const auto& value : stmt.with_values) values.push_back(eval(*value, frame));
      for (std::size_t i = 0; i < values.size(); ++i)
        assign(*stmt.with_targets[i], values[i], inner);
      return exec(stmt.body, inner, out);
    }
    case StmtKind::kScope:
      return exec(stmt.body, frame, out);
  }
  return Flow::kNormal;
}

void Interpreter::exec_for(const Stmt& stmt, const FramePtr& frame, std::string& out) {
  Value iterable = eval(*stmt.expr, frame);
  std::vector<Value> items = iterate(iterable);
  auto loop_frame = std::make_shared<Frame>();
  loop_frame->parent = frame;
  if (stmt.filter) {
    std::vector<Value> kept;
    for (Value& item : items) {
      count_iterations(1);
      assign(*stmt.target, item, loop_frame);
      if (truthy(eval(*stmt.filter, loop_frame))) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  const std::int64_t n = static_cast<std::int64_t>(items.size());
  for (std::int64_t i = 0; i < n; ++i) {
    count_iterations(1);
    line_ = stmt.line;
    const Value& item = items[static_cast<std::size_t>(i)];
    static const Value kKeys[] = {
        Value::string("index"),     Value::string("index0"),  Value::string("revindex"),
        Value::string("revindex0"), Value::string("first"),   Value::string("last"),
        Value::string("length"),    Value::string("depth"),   Value::string("depth0"),
        Value::string("previtem"),  Value::string("nextitem")};
    DictData attrs;
    attrs.entries.reserve(11);
    std::size_t key = 0;
    auto put = [&](const char*, Value v) {
      attrs.entries.emplace_back(kKeys[key++], std::move(v));
    };
    put("index", Value::integer(i + 1));
    put("index0", Value::integer(i));
    put("revindex", Value::integer(n - i));
    put("revindex0", Value::integer(n - i - 1));
    put("first", Value::boolean(i == 0));
    put("last", Value::boolean(i == n - 1));
    put("length", Value::integer(n));
    put("depth", Value::integer(1));
    put("depth0", Value::integer(0));
    put("previtem", i > 0 ? items[static_cast<std::size_t>(i - 1)]
                          : Value::undefined("there is no previous item"));
    put("nextitem", i + 1 < n ? items[static_cast<std::size_t>(i + 1)]
                              : Value::undefined("there is no next item"));
    // Every iteration starts from the enclosing scope again: a {% set %} in the body does not
    // carry over to the next iteration (nor out of the loop).
    auto iteration = std::make_shared<Frame>();
    iteration->parent = frame;
    iteration->vars["loop"] = Value::object("LoopContext", false, std::move(attrs));
    assign(*stmt.target, item, iteration);
    Flow flow = exec(stmt.body, iteration, out);
    if (flow == Flow::kBreak) break;
  }
  if (n == 0) exec(stmt.else_body, frame, out);
}

Value Interpreter::make_macro(const Stmt& stmt, const FramePtr& frame, const std::string& name) {
  const Stmt* s = &stmt;
  FramePtr defining = frame;
  if (macro_frames_.empty() || macro_frames_.back() != frame) {
    if (macro_frames_.size() >= 100000) throw RuntimeError("too many macro definitions");
    macro_frames_.push_back(frame);
  }
  bool uses_varargs = body_uses(stmt.body, "varargs");
  bool uses_kwargs = body_uses(stmt.body, "kwargs");
  return Value::function(
      name, [this, s, defining, name, uses_varargs, uses_kwargs](CallArgs& args) -> Value {
        if (++call_depth_ > limits_.max_call_depth) {
          --call_depth_;
          throw RuntimeError(
              fmt::format("maximum call depth ({}) exceeded", limits_.max_call_depth));
        }
        struct Depth {
          int& d;
          ~Depth() { --d; }
        } depth{call_depth_};
        count_iterations(1);
        int saved_line = line_;
        auto inner = std::make_shared<Frame>();
        inner->parent = defining;
        const auto& params = s->params;
        std::vector<Value> varargs;
        if (args.positional.size() > params.size()) {
          if (!uses_varargs) {
            throw RuntimeError(
                fmt::format("macro '{}' takes not more than {} argument(s)", name, params.size()));
          }
          varargs.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(params.size()),
                         args.positional.end());
          args.positional.resize(params.size());
        }
        DictData kwargs;
        std::vector<bool> given(params.size(), false);
        for (std::size_t i = 0; i < args.positional.size(); ++i) {
          inner->vars[params[i]] = args.positional[i];
          given[i] = true;
        }
        for (auto& [key, value] : args.keyword) {
          bool found = false;
          for (std::size_t i = 0; i < params.size(); ++i) {
            if (params[i] == key) {
              if (given[i])
                throw RuntimeError(
                    fmt::format("macro '{}' got multiple values for argument '{}'", name, key));
              inner->vars[key] = value;
              given[i] = true;
              found = true;
            }
          }
          if (!found) {
            if (key == "caller") {
              inner->vars["caller"] = value;
            } else if (uses_kwargs) {
              kwargs.set(Value::string(key), value);
            } else {
              throw RuntimeError(
                  fmt::format("macro '{}' takes no keyword argument '{}'", name, key));
            }
          }
        }
        std::size_t first_default = params.size() - s->defaults.size();
        for (std::size_t i = 0; i < params.size(); ++i) {
          if (given[i]) continue;
          if (i >= first_default) {
            inner->vars[params[i]] = eval(*s->defaults[i - first_default], inner);
          } else {
            inner->vars[params[i]] =
                Value::undefined(fmt::format("parameter '{}' was not provided", params[i]));
          }
        }
        inner->vars["varargs"] = Value::tuple(std::move(varargs));
        inner->vars["kwargs"] = Value::dict(std::move(kwargs));
        std::string out;
        exec(s->body, inner, out);
        line_ = saved_line;
        return Value::string(std::move(out));
      });
}

Value Interpreter::lookup(const std::string& name, const FramePtr& frame) const {
  for (const Frame* f = frame.get(); f; f = f->parent.get()) {
    auto it = f->vars.find(name);
    if (it != f->vars.end()) return it->second;
  }
  return Value::undefined(fmt::format("'{}' is undefined", name));
}

void Interpreter::assign(const Expr& target, const Value& value, const FramePtr& frame) {
  switch (target.kind) {
    case ExprKind::kName:
      frame->vars[target.name] = value;
      return;
    case ExprKind::kTuple: {
      std::vector<Value> items = iterate(value);
      std::size_t n = target.children.size();
      if (items.size() < n) {
        throw RuntimeError(
            fmt::format("not enough values to unpack (expected {}, got {})", n, items.size()));
      }
      if (items.size() > n) {
        throw RuntimeError(fmt::format("too many values to unpack (expected {})", n));
      }
      for (std::size_t i = 0; i < n; ++i) assign(*target.children[i], items[i], frame);
      return;
    }
    case ExprKind::kNSRef: {
      Value ns = lookup(target.name, frame);
      if (!ns.is_object() || !ns.object_data().is_namespace) {
        throw RuntimeError("cannot assign attribute on non-namespace object");
      }
      if (!target.attr.empty() && target.attr[0] == '_') {
        throw RuntimeError(fmt::format(
            "Chat templates cannot store underscore-prefixed attributes on a namespace, but got "
            "'{}'. Please rename the attribute.",
            target.attr));
      }
      ns.object_data().attributes.set(Value::string(target.attr), value);
      if (namespace_ids_.insert(ns.identity()).second) namespaces_.push_back(ns);
      return;
    }
    default:
      throw RuntimeError("invalid assignment target");
  }
}

CallArgs Interpreter::eval_args(const Expr& expr, std::size_t first, const FramePtr& frame) {
  CallArgs args;
  for (std::size_t i = first; i < expr.children.size(); ++i) {
    args.positional.push_back(eval(*expr.children[i], frame));
  }
  for (const Keyword& kw : expr.keywords) {
    args.keyword.emplace_back(kw.name, eval(*kw.value, frame));
  }
  return args;
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
  if (callee.is_function()) return callee.function_data().call(args);
  if (callee.is_undefined()) fail_undefined(callee);
  throw RuntimeError(fmt::format("'{}' object is not callable", type_name(callee)));
}

Value Interpreter::getattr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.is_object()) {
    if (!obj.object_data().is_namespace && (name == "cycle" || name == "changed")) {
      if (name == "changed") {
        return Value::function("changed", [](CallArgs&) -> Value {
          throw RuntimeError("unsupported: loop.changed()");
        });
      }
      std::int64_t i = obj.object_data().attributes.find(Value::string("index0"))->as_int();
      return Value::function("cycle", [i](CallArgs& args) -> Value {
        if (!args.keyword.empty()) throw RuntimeError("loop.cycle() takes no keyword arguments");
        if (args.positional.empty()) throw RuntimeError("no items for cycling given");
        return args.positional[static_cast<std::size_t>(i) % args.positional.size()];
      });
    }
    const Value* v = obj.object_data().attributes.find(Value::string(name));
    return v ? *v : no_attribute(obj, name);
  }
  if (auto method = get_method(obj, name)) return *method;
  if (obj.is_number() && (name == "real" || name == "imag" || name == "numerator" ||
                          name == "denominator" || name == "conjugate" || name == "bit_length" ||
                          name == "is_integer" || name == "hex" || name == "as_integer_ratio")) {
    throw RuntimeError(fmt::format("unsupported: attribute '{}' of a number", name));
  }
  if (obj.is_dict()) {
    const Value* v = obj.dict_data().find(Value::string(name));
    if (v) return *v;
  }
  return no_attribute(obj, name);
}

Value Interpreter::getitem(const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail_undefined(obj);
  auto fallback = [&]() -> Value {
    if (key.is_string()) {
      if (obj.is_object()) {
        const Value* v = obj.object_data().attributes.find(key);
        if (v) return *v;
      } else if (auto method = get_method(obj, key.as_string())) {
        return *method;
      }
    }
    return Value::undefined(
        fmt::format("'{}' has no attribute '{}'", object_type_repr(obj), to_str(key)));
  };
  if (obj.is_dict()) {
    if (key.is_list() || key.is_dict()) return fallback();  // unhashable: TypeError
    const Value* v = obj.dict_data().find(key);
    return v ? *v : fallback();
  }
  bool indexable = obj.is_string() || (obj.is_list() && (obj.list_data().kind == ListKind::kList ||
                                                         obj.list_data().kind == ListKind::kTuple ||
                                                         obj.list_data().kind == ListKind::kRange));
  if (indexable && key.is_integral()) {
    std::int64_t i = key.as_int();
    if (obj.is_string()) {
      std::u32string cps = to_u32(obj.as_string());
      std::int64_t n = static_cast<std::int64_t>(cps.size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value::undefined("string index out of range");
      return Value::string(
          from_u32(std::u32string_view(cps).substr(static_cast<std::size_t>(i), 1)));
    }
    const auto& items = obj.list_data().items;
    std::int64_t n = static_cast<std::int64_t>(items.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) return Value::undefined("list index out of range");
    return items[static_cast<std::size_t>(i)];
  }
  return fallback();
}

Value Interpreter::eval_slice(const Value& obj, const Expr& slice, const FramePtr& frame) {
  if (obj.is_undefined()) fail_undefined(obj);
  std::optional<std::int64_t> parts[3];
  for (int k = 0; k < 3; ++k) {
    if (!slice.children[static_cast<std::size_t>(k)]) continue;
    Value v = eval(*slice.children[static_cast<std::size_t>(k)], frame);
    if (v.is_none()) continue;
    if (!v.is_integral()) return Value::undefined("slice indices must be integers or None");
    parts[k] = v.as_int();
  }
  line_ = slice.line;
  if (obj.is_string()) {
    std::u32string cps = to_u32(obj.as_string());
    std::u32string out;
    for (std::size_t i :
         slice_indices(static_cast<std::int64_t>(cps.size()), parts[0], parts[1], parts[2])) {
      out += cps[i];
    }
    return Value::string(from_u32(out), obj.is_markup());
  }
  if (obj.is_list() && obj.list_data().kind != ListKind::kDictKeys &&
      obj.list_data().kind != ListKind::kDictValues &&
      obj.list_data().kind != ListKind::kDictItems) {
    const auto& items = obj.list_data().items;
    std::vector<Value> out;
    for (std::size_t i :
         slice_indices(static_cast<std::int64_t>(items.size()), parts[0], parts[1], parts[2])) {
      out.push_back(items[i]);
    }
    if (obj.list_data().kind == ListKind::kRange) {
      throw RuntimeError("unsupported: slicing a range");
    }
    return Value::list(std::move(out), obj.list_data().kind);
  }
  return Value::undefined(fmt::format("'{}' object is not subscriptable", type_name(obj)));
}

Value Interpreter::eval_filter(const Expr& expr, Value input, const FramePtr& frame) {
  // A chain `x | f | g` nests: the innermost filter's input is children[0] (null in filter
  // blocks, where `input` is the block's text).
  if (const Expr* inner = expr.children[0].get()) {
    input = inner->kind == ExprKind::kFilter ? eval_filter(*inner, std::move(input), frame)
                                             : eval(*inner, frame);
  }
  CallArgs args = eval_args(expr, 1, frame);
  line_ = expr.line;
  return apply_filter(*this, expr.name, input, args);
}

Value Interpreter::eval_compare(const Expr& expr, const FramePtr& frame) {
  Value left = eval(*expr.children[0], frame);
  for (std::size_t i = 0; i < expr.ops.size(); ++i) {
    Value right = eval(*expr.children[i + 1], frame);
    line_ = expr.line;
    const std::string& op = expr.ops[i];
    bool result;
    if (op == "eq") {
      result = equals(left, right);
    } else if (op == "ne") {
      result = !equals(left, right);
    } else if (op == "lt") {
      result = less_than(left, right, "<");
    } else if (op == "gt") {
      result = less_than(right, left, ">");
    } else if (op == "lteq") {
      result = !less_than(right, left, "<=");
    } else if (op == "gteq") {
      result = !less_than(left, right, ">=");
    } else if (op == "in") {
      result = contains(right, left);
    } else {
      result = !contains(right, left);
    }
    if (!result) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

Value Interpreter::eval(const Expr& expr, const FramePtr& frame) {
  line_ = expr.line;
  switch (expr.kind) {
    case ExprKind::kConst:
      return expr.constant;
    case ExprKind::kName:
      return lookup(expr.name, frame);
    case ExprKind::kGetAttr: {
      Value obj = eval(*expr.children[0], frame);
      line_ = expr.line;
      return getattr(obj, expr.name);
    }
    case ExprKind::kGetItem: {
      Value obj = eval(*expr.children[0], frame);
      const Expr& index = *expr.children[1];
      if (index.kind == ExprKind::kSlice) return eval_slice(obj, index, frame);
      Value key = eval(index, frame);
      line_ = expr.line;
      return getitem(obj, key);
    }
    case ExprKind::kSlice:
      throw RuntimeError("slice outside of a subscript");
    case ExprKind::kCall: {
      Value callee = eval(*expr.children[0], frame);
      CallArgs args = eval_args(expr, 1, frame);
      line_ = expr.line;
      return call(callee, args);
    }
    case ExprKind::kFilter:
      return eval_filter(expr, Value::undefined("no filter input"), frame);
    case ExprKind::kTest: {
      Value subject = eval(*expr.children[0], frame);
      CallArgs args = eval_args(expr, 1, frame);
      line_ = expr.line;
      return Value::boolean(apply_test(*this, expr.name, subject, args));
    }
    case ExprKind::kNeg:
      return negate(eval(*expr.children[0], frame));
    case ExprKind::kPos:
      return positive(eval(*expr.children[0], frame));
    case ExprKind::kNot:
      return Value::boolean(!truthy(eval(*expr.children[0], frame)));
    case ExprKind::kAnd: {
      Value left = eval(*expr.children[0], frame);
      return truthy(left) ? eval(*expr.children[1], frame) : left;
    }
    case ExprKind::kOr: {
      Value left = eval(*expr.children[0], frame);
      return truthy(left) ? left : eval(*expr.children[1], frame);
    }
    case ExprKind::kBinary: {
      Value a = eval(*expr.children[0], frame);
      Value b = eval(*expr.children[1], frame);
      line_ = expr.line;
      return binary_op(expr.name, a, b);
    }
    case ExprKind::kConcat: {
      std::string out;
      for (const auto& child : expr.children) {
        out += to_str(eval(*child, frame));
        check_string_size(out.size());
      }
      return Value::string(std::move(out));
    }
    case ExprKind::kCompare:
      return eval_compare(expr, frame);
    case ExprKind::kCondExpr: {
      if (truthy(eval(*expr.children[0], frame))) return eval(*expr.children[1], frame);
      if (expr.children[2]) return eval(*expr.children[2], frame);
      return Value::undefined(fmt::format(
          "the inline if-expression on line {} evaluated to false and no else section was "
          "defined.",
          expr.line));
    }
    case ExprKind::kList:
    case ExprKind::kTuple: {
      std::vector<Value> items;
      for (const auto& child : expr.children) items.push_back(eval(*child, frame));
      return Value::list(std::move(items),
                         expr.kind == ExprKind::kList ? ListKind::kList : ListKind::kTuple);
    }
    case ExprKind::kDict: {
      DictData d;
      for (std::size_t i = 0; i + 1 < expr.children.size(); i += 2) {
        Value key = eval(*expr.children[i], frame);
        Value value = eval(*expr.children[i + 1], frame);
        if (key.is_list() || key.is_dict() || key.is_undefined()) {
          throw RuntimeError(fmt::format("unhashable type: '{}'", type_name(key)));
        }
        d.set(std::move(key), std::move(value));
      }
      return Value::dict(std::move(d));
    }
    case ExprKind::kNSRef:
      throw RuntimeError("namespace reference outside of an assignment");
  }
  return Value();
}

}  // namespace xlacel::jinja
