// jinja2's builtin tests (`x is defined`, `x is string`, ...).
#include <fmt/format.h>

#include <functional>
#include <map>

#include "chat/jinja_builtins.h"
#include "chat/jinja_operators.h"
#include "chat/jinja_strings.h"

namespace xlacel::jinja {
namespace {

using Test = std::function<bool(const Value&, CallArgs&)>;

Value one_arg(std::string_view name, CallArgs& args) {
  auto a = bind_args(name, args, {"other"});
  if (!a[0]) throw RuntimeError(fmt::format("test '{}' needs an argument", name));
  return *a[0];
}

Value int_mod(const Value& v, const Value& m) {
  return binary_op("%", v, m);
}

const std::map<std::string, Test>& tests() {
  static const std::map<std::string, Test> table = [] {
    std::map<std::string, Test> t;
    auto no_args = [](std::string name, std::function<bool(const Value&)> f) {
      return [name, f](const Value& v, CallArgs& args) {
        bind_args(name, args, {});
        return f(v);
      };
    };
    t["defined"] = no_args("defined", [](const Value& v) { return !v.is_undefined(); });
    t["undefined"] = no_args("undefined", [](const Value& v) { return v.is_undefined(); });
    t["none"] = no_args("none", [](const Value& v) { return v.is_none(); });
    t["boolean"] = no_args("boolean", [](const Value& v) { return v.is_bool(); });
    t["true"] = no_args("true", [](const Value& v) { return v.is_bool() && v.as_bool(); });
    t["false"] = no_args("false", [](const Value& v) { return v.is_bool() && !v.as_bool(); });
    t["integer"] = no_args("integer", [](const Value& v) { return v.is_int(); });
    t["float"] = no_args("float", [](const Value& v) { return v.is_float(); });
    t["number"] = no_args("number", [](const Value& v) { return v.is_number(); });
    t["string"] = no_args("string", [](const Value& v) { return v.is_string(); });
    t["mapping"] = no_args("mapping", [](const Value& v) { return v.is_dict(); });
    t["iterable"] = no_args("iterable", [](const Value& v) {
      return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict() || v.is_iterator();
    });
    t["sequence"] = no_args("sequence", [](const Value& v) {
      if (v.is_string() || v.is_dict()) return true;
      if (!v.is_list()) return false;
      ListKind k = v.list_data().kind;
      return k == ListKind::kList || k == ListKind::kTuple || k == ListKind::kRange;
    });
    t["callable"] =
        no_args("callable", [](const Value& v) { return v.is_function() || v.is_undefined(); });
    t["escaped"] =
        no_args("escaped", [](const Value& v) { return v.is_string() && v.is_markup(); });
    t["lower"] = no_args("lower", [](const Value& v) { return py_islower(to_str(v)); });
    t["upper"] = no_args("upper", [](const Value& v) { return py_isupper(to_str(v)); });
    t["odd"] = no_args("odd", [](const Value& v) {
      return equals(int_mod(v, Value::integer(2)), Value::integer(1));
    });
    t["even"] = no_args("even", [](const Value& v) {
      return equals(int_mod(v, Value::integer(2)), Value::integer(0));
    });
    t["divisibleby"] = [](const Value& v, CallArgs& args) {
      auto a = bind_args("divisibleby", args, {"num"});
      if (!a[0]) throw RuntimeError("test 'divisibleby' needs an argument");
      return equals(int_mod(v, *a[0]), Value::integer(0));
    };
    t["in"] = [](const Value& v, CallArgs& args) {
      auto a = bind_args("in", args, {"seq"});
      if (!a[0]) throw RuntimeError("test 'in' needs an argument");
      return contains(*a[0], v);
    };
    t["sameas"] = [](const Value& v, CallArgs& args) {
      Value other = one_arg("sameas", args);
      if (v.is_none() || other.is_none()) return v.is_none() && other.is_none();
      if (v.is_bool() || other.is_bool()) {
        return v.is_bool() && other.is_bool() && v.as_bool() == other.as_bool();
      }
      if (v.identity() && other.identity()) return v.identity() == other.identity();
      throw RuntimeError("unsupported: 'sameas' on strings or numbers (Python identity)");
    };
    auto eq = [](const Value& v, CallArgs& args) { return equals(v, one_arg("eq", args)); };
    auto ne = [](const Value& v, CallArgs& args) { return !equals(v, one_arg("ne", args)); };
    auto lt = [](const Value& v, CallArgs& args) { return less_than(v, one_arg("lt", args), "<"); };
    auto gt = [](const Value& v, CallArgs& args) { return less_than(one_arg("gt", args), v, ">"); };
    auto le = [](const Value& v, CallArgs& args) {
      return !less_than(one_arg("le", args), v, "<=");
    };
    auto ge = [](const Value& v, CallArgs& args) {
      return !less_than(v, one_arg("ge", args), ">=");
    };
    t["=="] = t["eq"] = t["equalto"] = eq;
    t["!="] = t["ne"] = ne;
    t["<"] = t["lt"] = t["lessthan"] = lt;
    t[">"] = t["gt"] = t["greaterthan"] = gt;
    t["<="] = t["le"] = le;
    t[">="] = t["ge"] = ge;
    return t;
  }();
  return table;
}

}  // namespace

bool apply_test(Interpreter&, const std::string& name, const Value& input, CallArgs& args) {
  const auto& table = tests();
  auto it = table.find(name);
  if (it != table.end()) return it->second(input, args);
  if (name == "filter" || name == "test") throw RuntimeError("unsupported: test '" + name + "'");
  throw RuntimeError("No test named '" + name + "'.");
}

}  // namespace xlacel::jinja
