// Python methods of str, dict and list as templates call them, and argument binding.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "chat/jinja_builtins.h"
#include "chat/jinja_operators.h"
#include "chat/jinja_strings.h"

namespace xlacel::jinja {

std::vector<std::optional<Value>> bind_args(std::string_view function, CallArgs& args,
                                            std::initializer_list<std::string_view> names) {
  std::vector<std::optional<Value>> out(names.size());
  if (args.positional.size() > names.size()) {
    throw RuntimeError(fmt::format("{}() takes at most {} arguments ({} given)", function,
                                   names.size(), args.positional.size()));
  }
  for (std::size_t i = 0; i < args.positional.size(); ++i) out[i] = args.positional[i];
  for (auto& [key, value] : args.keyword) {
    std::size_t i = 0;
    for (std::string_view name : names) {
      if (name == key) break;
      ++i;
    }
    if (i == names.size()) {
      throw RuntimeError(
          fmt::format("{}() got an unexpected keyword argument '{}'", function, key));
    }
    if (out[i]) {
      throw RuntimeError(fmt::format("{}() got multiple values for argument '{}'", function, key));
    }
    out[i] = value;
  }
  return out;
}

namespace {

std::optional<std::string> opt_string(const std::optional<Value>& v, std::string_view what) {
  if (!v || v->is_none()) return std::nullopt;
  if (!v->is_string()) {
    throw RuntimeError(fmt::format("{} must be str or None, not {}", what, type_name(*v)));
  }
  return v->as_string();
}

std::string need_string(const std::optional<Value>& v, std::string_view what) {
  if (!v) throw RuntimeError(fmt::format("{}: missing required argument", what));
  if (!v->is_string()) {
    throw RuntimeError(fmt::format("{} must be str, not {}", what, type_name(*v)));
  }
  return v->as_string();
}

std::int64_t opt_int(const std::optional<Value>& v, std::int64_t dflt) {
  if (!v || v->is_none()) return dflt;
  if (!v->is_integral()) {
    throw RuntimeError(
        fmt::format("'{}' object cannot be interpreted as an integer", type_name(*v)));
  }
  return v->as_int();
}

Value string_list(const std::vector<std::string>& parts) {
  std::vector<Value> items;
  items.reserve(parts.size());
  for (const auto& p : parts) items.push_back(Value::string(p));
  return Value::list(std::move(items));
}

// startswith/endswith with a str or a tuple of str.
bool affix_match(const std::string& s, const Value& affix, bool prefix) {
  auto one = [&](const Value& a) {
    if (!a.is_string()) {
      throw RuntimeError(fmt::format("{} first arg must be str or a tuple of str, not {}",
                                     prefix ? "startswith" : "endswith", type_name(a)));
    }
    const std::string& x = a.as_string();
    if (x.size() > s.size()) return false;
    return prefix ? s.compare(0, x.size(), x) == 0
                  : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (affix.is_list() && affix.list_data().kind == ListKind::kTuple) {
    for (const Value& a : affix.list_data().items) {
      if (one(a)) return true;
    }
    return false;
  }
  return one(affix);
}

std::string str_format(const std::string& fmt_string, CallArgs& args) {
  std::string out;
  std::size_t auto_index = 0;
  for (std::size_t i = 0; i < fmt_string.size(); ++i) {
    char c = fmt_string[i];
    if (c == '{') {
      if (i + 1 < fmt_string.size() && fmt_string[i + 1] == '{') {
        out += '{';
        ++i;
        continue;
      }
      std::size_t close = fmt_string.find('}', i);
      if (close == std::string::npos) throw RuntimeError("Single '{' encountered in format string");
      std::string field = fmt_string.substr(i + 1, close - i - 1);
      if (field.find_first_of(":!.[") != std::string::npos) {
        throw RuntimeError("unsupported: format specs in str.format()");
      }
      Value v;
      if (field.empty()) {
        if (auto_index >= args.positional.size())
          throw RuntimeError("Replacement index out of range");
        v = args.positional[auto_index++];
      } else if (std::all_of(field.begin(), field.end(),
                             [](char d) { return d >= '0' && d <= '9'; })) {
        std::size_t idx = std::stoul(field);
        if (idx >= args.positional.size()) throw RuntimeError("Replacement index out of range");
        v = args.positional[idx];
      } else {
        bool found = false;
        for (auto& [k, kv] : args.keyword) {
          if (k == field) {
            v = kv;
            found = true;
          }
        }
        if (!found) throw RuntimeError(fmt::format("KeyError: '{}'", field));
      }
      out += to_str(v);
      i = close;
    } else if (c == '}') {
      if (i + 1 < fmt_string.size() && fmt_string[i + 1] == '}') ++i;
      out += '}';
    } else {
      out += c;
    }
  }
  check_string_size(out.size());
  return out;
}

Value string_method(const Value& self, const std::string& name, CallArgs& args) {
  const std::string& s = self.as_string();
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    auto a = bind_args(name, args, {"chars"});
    StripSide side = name == "strip"    ? StripSide::kBoth
                     : name == "lstrip" ? StripSide::kLeft
                                        : StripSide::kRight;
    return Value::string(py_strip(s, opt_string(a[0], "strip arg"), side));
  }
  if (name == "split" || name == "rsplit") {
    auto a = bind_args(name, args, {"sep", "maxsplit"});
    return string_list(py_split(s, opt_string(a[0], "sep"), opt_int(a[1], -1), name == "rsplit"));
  }
  if (name == "splitlines") {
    auto a = bind_args(name, args, {"keepends"});
    return string_list(py_splitlines(s, a[0] && truthy(*a[0])));
  }
  if (name == "startswith" || name == "endswith") {
    auto a = bind_args(name, args, {"prefix", "start", "end"});
    if (!a[0]) throw RuntimeError(name + "() takes at least 1 argument (0 given)");
    if (a[1] || a[2]) throw RuntimeError("unsupported: start/end arguments of " + name + "()");
    return Value::boolean(affix_match(s, *a[0], name == "startswith"));
  }
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize") {
    bind_args(name, args, {});
    if (name == "upper") return Value::string(py_upper(s));
    if (name == "lower") return Value::string(py_lower(s));
    if (name == "title") return Value::string(py_title(s));
    return Value::string(py_capitalize(s));
  }
  if (name == "replace") {
    auto a = bind_args(name, args, {"old", "new", "count"});
    return Value::string(py_replace(s, need_string(a[0], "replace() argument 1"),
                                    need_string(a[1], "replace() argument 2"), opt_int(a[2], -1)));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    auto a = bind_args(name, args, {"sub", "start", "end"});
    if (a[1] || a[2]) throw RuntimeError("unsupported: start/end arguments of " + name + "()");
    std::int64_t r = py_find(s, need_string(a[0], name + "() argument"), name[0] == 'r');
    if (r < 0 && (name == "index" || name == "rindex")) throw RuntimeError("substring not found");
    return Value::integer(r);
  }
  if (name == "count") {
    auto a = bind_args(name, args, {"sub", "start", "end"});
    if (a[1] || a[2]) throw RuntimeError("unsupported: start/end arguments of count()");
    return Value::integer(py_count(s, need_string(a[0], "count() argument")));
  }
  if (name == "join") {
    auto a = bind_args(name, args, {"iterable"});
    if (!a[0]) throw RuntimeError("join() takes exactly one argument (0 given)");
    std::string out;
    bool first = true;
    for (const Value& item : iterate(*a[0])) {
      if (!item.is_string()) {
        throw RuntimeError(
            fmt::format("sequence item: expected str instance, {} found", type_name(item)));
      }
      if (!first) out += s;
      out += item.as_string();
      first = false;
      check_string_size(out.size());
    }
    return Value::string(std::move(out));
  }
  if (name == "format") return Value::string(str_format(s, args));
  if (name == "removeprefix" || name == "removesuffix") {
    auto a = bind_args(name, args, {"affix"});
    std::string affix = need_string(a[0], name + "() argument");
    if (name == "removeprefix" && s.compare(0, affix.size(), affix) == 0) {
      return Value::string(s.substr(affix.size()));
    }
    if (name == "removesuffix" && !affix.empty() && s.size() >= affix.size() &&
        s.compare(s.size() - affix.size(), affix.size(), affix) == 0) {
      return Value::string(s.substr(0, s.size() - affix.size()));
    }
    return Value::string(s);
  }
  if (name == "partition" || name == "rpartition") {
    auto a = bind_args(name, args, {"sep"});
    std::string sep = need_string(a[0], name + "() argument");
    if (sep.empty()) throw RuntimeError("empty separator");
    std::size_t p = name == "partition" ? s.find(sep) : s.rfind(sep);
    if (p == std::string::npos) {
      if (name == "partition") {
        return Value::tuple({Value::string(s), Value::string(""), Value::string("")});
      }
      return Value::tuple({Value::string(""), Value::string(""), Value::string(s)});
    }
    return Value::tuple({Value::string(s.substr(0, p)), Value::string(sep),
                         Value::string(s.substr(p + sep.size()))});
  }
  if (name == "isdigit" || name == "isalpha" || name == "isalnum" || name == "isspace" ||
      name == "islower" || name == "isupper") {
    bind_args(name, args, {});
    if (name == "islower") return Value::boolean(py_islower(s));
    if (name == "isupper") return Value::boolean(py_isupper(s));
    std::u32string cps = to_u32(s);
    if (cps.empty()) return Value::boolean(false);
    for (char32_t c : cps) {
      bool ok;
      if (c >= 0x80 && name != "isspace") {
        throw RuntimeError("unsupported: str." + name + "() on non-ASCII text");
      }
      bool digit = c >= '0' && c <= '9';
      bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
      if (name == "isdigit") {
        ok = digit;
      } else if (name == "isalpha") {
        ok = alpha;
      } else if (name == "isalnum") {
        ok = digit || alpha;
      } else {
        ok = is_python_space(c);
      }
      if (!ok) return Value::boolean(false);
    }
    return Value::boolean(true);
  }
  throw RuntimeError("unsupported: str." + name + "()");
}

Value dict_method(const Value& self, const std::string& name, CallArgs& args) {
  const DictData& d = self.dict_data();
  if (name == "items" || name == "keys" || name == "values") {
    bind_args(name, args, {});
    std::vector<Value> out;
    for (const auto& [k, v] : d.entries) {
      if (name == "items") {
        out.push_back(Value::tuple({k, v}));
      } else {
        out.push_back(name == "keys" ? k : v);
      }
    }
    ListKind kind = name == "items"  ? ListKind::kDictItems
                    : name == "keys" ? ListKind::kDictKeys
                                     : ListKind::kDictValues;
    return Value::list(std::move(out), kind);
  }
  if (name == "get") {
    auto a = bind_args(name, args, {"key", "default"});
    if (!a[0]) throw RuntimeError("get expected at least 1 argument, got 0");
    if (a[0]->is_list() || a[0]->is_dict()) {
      throw RuntimeError(fmt::format("unhashable type: '{}'", type_name(*a[0])));
    }
    const Value* v = d.find(*a[0]);
    if (v) return *v;
    return a[1] ? *a[1] : Value::none();
  }
  if (name == "copy") {
    bind_args(name, args, {});
    return Value::dict(d);
  }
  throw RuntimeError("unsupported: dict." + name + "()");
}

Value list_method(const Value& self, const std::string& name, CallArgs& args) {
  const auto& items = self.list_data().items;
  if (name == "index" || name == "count") {
    auto a = bind_args(name, args, {"value"});
    if (!a[0]) throw RuntimeError(name + "() takes exactly one argument (0 given)");
    std::int64_t n = 0;
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (equals(items[i], *a[0])) {
        if (name == "index") return Value::integer(static_cast<std::int64_t>(i));
        ++n;
      }
    }
    if (name == "index") throw RuntimeError("value is not in list");
    return Value::integer(n);
  }
  if (name == "copy") {
    bind_args(name, args, {});
    return Value::list(items);
  }
  throw RuntimeError("unsupported: list." + name + "()");
}

const std::set<std::string>& str_methods() {
  static const std::set<std::string> names = {
      "capitalize",   "casefold",    "center",    "count",      "encode",       "endswith",
      "expandtabs",   "find",        "format",    "format_map", "index",        "isalnum",
      "isalpha",      "isascii",     "isdecimal", "isdigit",    "isidentifier", "islower",
      "isnumeric",    "isprintable", "isspace",   "istitle",    "isupper",      "join",
      "ljust",        "lower",       "lstrip",    "maketrans",  "partition",    "removeprefix",
      "removesuffix", "replace",     "rfind",     "rindex",     "rjust",        "rpartition",
      "rsplit",       "rstrip",      "split",     "splitlines", "startswith",   "strip",
      "swapcase",     "title",       "translate", "upper",      "zfill"};
  return names;
}

}  // namespace

std::optional<Value> get_method(const Value& obj, const std::string& name) {
  std::string kind;
  std::function<Value(CallArgs&)> fn;
  if (obj.is_string()) {
    if (!str_methods().count(name)) return std::nullopt;
    kind = "str";
    fn = [obj, name](CallArgs& args) { return string_method(obj, name, args); };
  } else if (obj.is_dict()) {
    static const std::set<std::string> safe = {"items", "keys", "values",
                                               "get",   "copy", "fromkeys"};
    static const std::set<std::string> unsafe = {"clear", "pop", "popitem", "setdefault", "update"};
    if (unsafe.count(name)) {
      return Value::undefined(
          fmt::format("access to attribute '{}' of 'dict' object is unsafe.", name));
    }
    if (!safe.count(name)) return std::nullopt;
    kind = "dict";
    fn = [obj, name](CallArgs& args) { return dict_method(obj, name, args); };
  } else if (obj.is_list() && (obj.list_data().kind == ListKind::kList ||
                               obj.list_data().kind == ListKind::kTuple)) {
    bool is_list = obj.list_data().kind == ListKind::kList;
    static const std::set<std::string> unsafe = {"append", "clear", "pop",    "reverse",
                                                 "insert", "sort",  "extend", "remove"};
    if (is_list && unsafe.count(name)) {
      return Value::undefined(
          fmt::format("access to attribute '{}' of 'list' object is unsafe.", name));
    }
    if (name != "index" && name != "count" && !(is_list && name == "copy")) return std::nullopt;
    kind = "list";
    fn = [obj, name](CallArgs& args) { return list_method(obj, name, args); };
  } else {
    return std::nullopt;
  }
  return Value::function(kind + "." + name, std::move(fn));
}

}  // namespace xlacel::jinja
