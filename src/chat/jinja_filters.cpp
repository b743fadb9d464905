// jinja2's builtin filters, with transformers' own tojson.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>

#include "chat/jinja_builtins.h"
#include "chat/jinja_interpreter.h"
#include "chat/jinja_operators.h"
#include "chat/jinja_strings.h"

namespace xlacel::jinja {
namespace {

using Filter = std::function<Value(Interpreter&, const Value&, CallArgs&)>;

std::string soft_str(const Value& v) {
  return to_str(v);
}

Value str_result(const Value& input, std::string s) {
  return Value::string(std::move(s), input.is_string() && input.is_markup());
}

// Attribute paths as make_attrgetter splits them ("a.b.0").
Value get_path(Interpreter& interp, const Value& item, const Value& attribute) {
  if (!attribute.is_string()) return interp.getitem(item, attribute);
  Value v = item;
  std::string path = attribute.as_string();
  std::size_t start = 0;
  while (true) {
    std::size_t dot = path.find('.', start);
    std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(),
                                               [](char c) { return c >= '0' && c <= '9'; });
    v = interp.getitem(v, digits ? Value::integer(std::stoll(part)) : Value::string(part));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return v;
}

Value lowered(const Value& v) {
  return v.is_string() ? Value::string(py_lower(v.as_string())) : v;
}

void sort_values(std::vector<Value>& items, const std::function<Value(const Value&)>& key,
                 bool reverse) {
  std::vector<std::pair<Value, Value>> keyed;
  for (auto& item : items) keyed.emplace_back(key(item), item);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    return reverse ? less_than(b.first, a.first, "<") : less_than(a.first, b.first, "<");
  });
  for (std::size_t i = 0; i < items.size(); ++i) items[i] = keyed[i].second;
}

Value do_int(const Value& v, const Value& dflt, std::int64_t base) {
  auto parse_float = [](const std::string& text, double& out) {
    std::string t = py_strip(text, std::nullopt, StripSide::kBoth);
    std::string cleaned;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t[i] == '_' && i > 0 && i + 1 < t.size() &&
          std::isdigit(static_cast<unsigned char>(t[i - 1])) &&
          std::isdigit(static_cast<unsigned char>(t[i + 1]))) {
        continue;
      }
      cleaned += t[i];
    }
    if (cleaned.empty()) return false;
    std::string lower = py_lower(cleaned);
    std::string body = (lower[0] == '+' || lower[0] == '-') ? lower.substr(1) : lower;
    if (body == "inf" || body == "infinity" || body == "nan") {
      out = body == "nan" ? NAN : (lower[0] == '-' ? -INFINITY : INFINITY);
      return true;
    }
    if (lower.find_first_not_of("0123456789.e+-") != std::string::npos) return false;
    if (lower.find("0x") != std::string::npos) return false;
    char* end = nullptr;
    out = std::strtod(cleaned.c_str(), &end);
    return end && *end == '\0';
  };
  if (v.is_integral()) return Value::integer(v.as_int());
  if (v.is_float()) {
    double d = v.as_double();
    if (std::isnan(d) || std::isinf(d)) return dflt;
    if (d >= 9.2e18 || d <= -9.2e18) throw RuntimeError("integer overflow in int()");
    return Value::integer(static_cast<std::int64_t>(std::trunc(d)));
  }
  if (v.is_string()) {
    std::string t = py_strip(v.as_string(), std::nullopt, StripSide::kBoth);
    std::string digits;
    bool ok = !t.empty();
    std::size_t i = 0;
    bool negative = false;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) negative = t[i++] == '-';
    if (base == 16 && t.compare(i, 2, "0x") == 0) i += 2;
    if (base == 8 && t.compare(i, 2, "0o") == 0) i += 2;
    if (base == 2 && t.compare(i, 2, "0b") == 0) i += 2;
    for (; i < t.size() && ok; ++i) {
      char c = static_cast<char>(std::tolower(static_cast<unsigned char>(t[i])));
      int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'z') ? c - 'a' + 10 : 99;
      if (c == '_' && !digits.empty() && i + 1 < t.size() && t[i + 1] != '_') continue;
      if (d >= base) ok = false;
      digits += c;
    }
    if (ok && !digits.empty()) {
      errno = 0;
      long long r = std::strtoll(digits.c_str(), nullptr, static_cast<int>(base));
      if (errno == ERANGE) throw RuntimeError("integer overflow in int()");
      return Value::integer(negative ? -r : r);
    }
    double d;
    if (parse_float(v.as_string(), d)) return do_int(Value::floating(d), dflt, base);
    return dflt;
  }
  return dflt;
}

Value do_float(const Value& v, const Value& dflt) {
  if (v.is_number()) return Value::floating(v.as_double());
  if (v.is_string()) {
    std::string t = py_strip(v.as_string(), std::nullopt, StripSide::kBoth);
    std::string lower = py_lower(t);
    std::string body =
        (!lower.empty() && (lower[0] == '+' || lower[0] == '-')) ? lower.substr(1) : lower;
    if (body == "inf" || body == "infinity")
      return Value::floating(lower[0] == '-' ? -INFINITY : INFINITY);
    if (body == "nan") return Value::floating(NAN);
    if (t.empty() || lower.find_first_not_of("0123456789.e+-_") != std::string::npos) return dflt;
    std::string cleaned;
    for (char c : t) {
      if (c != '_') cleaned += c;
    }
    char* end = nullptr;
    double d = std::strtod(cleaned.c_str(), &end);
    if (!end || *end != '\0') return dflt;
    return Value::floating(d);
  }
  return dflt;
}

Value do_round(const Value& v, std::int64_t precision, const std::string& method) {
  if (method != "common" && method != "ceil" && method != "floor") {
    throw RuntimeError("method must be common, ceil or floor");
  }
  if (!v.is_number()) {
    throw RuntimeError(fmt::format("type {} doesn't define __round__ method", type_name(v)));
  }
  if (method == "common") {
    if (v.is_integral()) {
      if (precision >= 0) return Value::integer(v.as_int());
      throw RuntimeError("unsupported: round() of an integer to negative precision");
    }
    double d = v.as_double();
    if (std::isnan(d) || std::isinf(d)) return v;
    if (precision == 0) return Value::floating(std::nearbyint(d));
    if (precision < 0 || precision > 300) throw RuntimeError("unsupported: round() precision");
    std::string text = fmt::format("{:.{}f}", d, precision);
    return Value::floating(std::strtod(text.c_str(), nullptr));
  }
  double scale = std::pow(10.0, static_cast<double>(precision));
  double x = v.as_double() * scale;
  return Value::floating((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

std::string do_indent(const std::string& s, const Value& width, bool first, bool blank) {
  if (width.is_integral() && width.as_int() > 4096) throw RuntimeError("indent width too large");
  std::string indention =
      width.is_string()
          ? width.as_string()
          : std::string(static_cast<std::size_t>(std::max<std::int64_t>(0, width.as_int())), ' ');
  std::vector<std::string> lines = py_splitlines(s + "\n", false);
  std::string rv;
  if (blank) {
    for (std::size_t i = 0; i < lines.size(); ++i) {
      if (i) rv += "\n" + indention;
      rv += lines[i];
    }
  } else {
    rv = lines.empty() ? "" : lines[0];
    for (std::size_t i = 1; i < lines.size(); ++i) {
      rv += "\n";
      if (!lines[i].empty()) rv += indention;
      rv += lines[i];
    }
  }
  if (first) rv = indention + rv;
  check_string_size(rv.size());
  return rv;
}

std::int64_t word_count(const std::string& s) {
  std::int64_t n = 0;
  bool in_word = false;
  for (char32_t c : to_u32(s)) {
    bool word = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                c == '_' ||
                (c >= 0x80 && !is_python_space(c) && !(c >= 0x2000 && c <= 0x206f) &&
                 !(c >= 0x3000 && c <= 0x303f) && c != 0xa0 &&
                 !(c >= 0xa1 && c <= 0xbf && c != 0xaa && c != 0xb5 && c != 0xba) && c != 0xd7 &&
                 c != 0xf7);
    if (word && !in_word) ++n;
    in_word = word;
  }
  return n;
}

// select/reject/selectattr/rejectattr
Value select_or_reject(Interpreter& interp, const Value& value, CallArgs& args, bool select,
                       bool lookup_attr) {
  std::vector<Value> out;
  if (truthy(value) || value.is_iterator()) {
    std::size_t off = 0;
    Value attribute;
    if (lookup_attr) {
      if (args.positional.empty()) throw RuntimeError("Missing parameter for attribute name");
      attribute = args.positional[0];
      off = 1;
    }
    std::optional<std::string> test;
    CallArgs test_args;
    if (args.positional.size() > off) {
      if (!args.positional[off].is_string()) throw RuntimeError("test name must be a string");
      test = args.positional[off].as_string();
      test_args.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(off + 1),
                                  args.positional.end());
      test_args.keyword = args.keyword;
    }
    for (const Value& item : iterate(value)) {
      interp.count_iterations(1);
      Value subject = lookup_attr ? get_path(interp, item, attribute) : item;
      bool r;
      if (test) {
        CallArgs copy = test_args;
        r = apply_test(interp, *test, subject, copy);
      } else {
        r = truthy(subject);
      }
      if (r == select) out.push_back(item);
    }
  }
  return Value::iterator("generator", std::move(out));
}

const std::map<std::string, Filter>& filters() {
  static const std::map<std::string, Filter> table = [] {
    std::map<std::string, Filter> t;
    t["abs"] = [](Interpreter&, const Value& v, CallArgs& args) {
      bind_args("abs", args, {});
      if (v.is_integral()) return Value::integer(std::llabs(v.as_int()));
      if (v.is_float()) return Value::floating(std::fabs(v.as_double()));
      throw RuntimeError(fmt::format("bad operand type for abs(): '{}'", type_name(v)));
    };
    t["attr"] = [](Interpreter& interp, const Value& v, CallArgs& args) {
      auto a = bind_args("attr", args, {"name"});
      if (!a[0] || !a[0]->is_string()) throw RuntimeError("attr() needs an attribute name");
      if (v.is_dict()) {
        auto m = get_method(v, a[0]->as_string());
        return m ? *m : Value::undefined("no such attribute");
      }
      return interp.getattr(v, a[0]->as_string());
    };
    t["center"] = [](Interpreter&, const Value& v, CallArgs& args) {
      auto a = bind_args("center", args, {"width"});
      std::int64_t width = a[0] && a[0]->is_integral() ? a[0]->as_int() : 80;
      if (width > 4096) throw RuntimeError("center width too large");
      std::u32string cps = to_u32(soft_str(v));
      std::int64_t marg = width - static_cast<std::int64_t>(cps.size());
      if (marg <= 0) return Value::string(soft_str(v));
      std::int64_t left = marg / 2 + (marg & width & 1);
      return Value::string(std::string(static_cast<std::size_t>(left), ' ') + soft_str(v) +
                           std::string(static_cast<std::size_t>(marg - left), ' '));
    };
    t["capitalize"] = [](Interpreter&, const Value& v, CallArgs& args) {
      bind_args("capitalize", args, {});
      return str_result(v, py_capitalize(soft_str(v)));
    };
    t["length"] = [](Interpreter&, const Value& v, CallArgs& args) {
      bind_args("length", args, {});
      return Value::integer(length(v));
    };
    t["count"] = t["length"];
    t["default"] = [](Interpreter&, const Value& v, CallArgs& args) {
      auto a = bind_args("default", args, {"default_value", "boolean"});
      bool boolean = a[1] && truthy(*a[1]);
      if (v.is_undefined() || (boolean && !truthy(v))) return a[0] ? *a[0] : Value::string("");
      return v;
    };
    t["d"] = t["default"];
    t["dictsort"] = [](Interpreter&, const Value& v, CallArgs& args) {
      auto a = bind_args("dictsort", args, {"case_sensitive", "by", "reverse"});
      if (!v.is_dict()) throw RuntimeError("dictsort needs a mapping");
      bool case_sensitive = a[0] && truthy(*a[0]);
      std::string by = a[1] && a[1]->is_string() ? a[1]->as_string() : "key";
      if (by != "key" && by != "value") {
        throw RuntimeError("You can only sort by either \"key\" or \"value\"");
      }
      std::vector<Value> items;
      for (const auto& [k, val] : v.dict_data().entries) items.push_back(Value::tuple({k, val}));
      std::size_t pos = by == "key" ? 0 : 1;
      sort_values(
          items,
          [&](const Value& item) {
            const Value& x = item.list_data().items[pos];
            return case_sensitive ? x : lowered(x);
          },
          a[2] && truthy(*a[2]));
      return Value::list(std::move(items));
    };
    t["escape"] = [](Interpreter&, const Value& v, CallArgs& args) {
      bind_args("escape", args, {});
      if (v.is_string() && v.is_markup()) return v;
      return Value::string(html_escape(soft_str(v)), true);
    };
    t["e"] = t["escape"];
    t["first"] = [](Interpreter&, const Value& v, CallArgs& args) {
      bind_args("first", args, {});
      if (v.is_iterator()) {
        IteratorData& it = v.iterator_data();
        if (it.position >= it.items.size())
          return Value::undefined("No first item, sequence was empty.");
        return it.items[it.position++];
      }
      std::vector<Value> items = iterate(v);
      if (items.empty()) return Value::undefined("No first item, sequence was empty.");
      return items[0];
    };
    t["last"] = [](Interpreter&, const Value& v, CallArgs& args) {
      bind_args("last", args, {});
      if (v.is_iterator()) {
        throw RuntimeError(fmt::format("'{}' object is not reversible", type_name(v)));
      }
      if (v.is_undefined()) fail_undefined(v);
      std::vector<Value> items = iterate(v);
      if (items.empty()) return Value::undefined("No last item, sequence was empty.");
      return items.back();
    };
    t["float"] = [](Interpreter&, const Value& v, CallArgs& args) {
      auto a = bind_args("float", args, {"default"});
      return do_float(v, a[0] ? *a[0] : Value::floating(0.0));
    };
    t["int"] = [](Interpreter&, const Value& v, CallArgs& args) {
      auto a = bind_args("int", args, {"default", "base"});
      std::int64_t base = a[1] && a[1]->is_integral() ? a[1]->as_int() : 10;
      return do_int(v, a[0] ? *a[0] : Value::integer(0), base);
    };
    t["indent"] = [](Interpreter&, const Value& v, CallArgs& args) {
      auto a = bind_args("indent", args, {"width", "first", "blank"});
      Value width = a[0] ? *a[0] : Value::integer(4);
      if (!width.is_string() && !width.is_integral())
        throw RuntimeError("indent width must be int or str");
      return str_result(
          v, do_indent(soft_str(v), width, a[1] && truthy(*a[1]), a[2] && truthy(*a[2])));
    };
    t["items"] = [](Interpreter&, const Value& v, CallArgs& args) {
      bind_args("items", args, {});
      if (v.is_undefined()) return Value::iterator("generator", {});
      if (!v.is_dict()) throw RuntimeError("Can only get item pairs from a mapping.");
      std::vector<Value> out;
      for (const auto& [k, val] : v.dict_data().entries) out.push_back(Value::tuple({k, val}));
      return Value::iterator("generator", std::move(out));
    };
    t["join"] = [](Interpreter& interp, const Value& v, CallArgs& args) {
      auto a = bind_args("join", args, {"d", "attribute"});
      std::string sep = a[0] ? soft_str(*a[0]) : "";
      std::string out;
      bool first = true;
      for (const Value& item : iterate(v)) {
        if (!first) out += sep;
        out += soft_str(a[1] && !a[1]->is_none() ? get_path(interp, item, *a[1]) : item);
        first = false;
        check_string_size(out.size());
      }
      return Value::string(std::move(out));
    };
    t["list"] = [](Interpreter&, const Value& v, CallArgs& args) {
      bind_args("list", args, {});
      return Value::list(iterate(v));
    };
    t["lower"] = [](Interpreter&, const Value& v, CallArgs& args) {
      bind_args("lower", args, {});
      return str_result(v, py_lower(soft_str(v)));
    };
    t["upper"] = [](Interpreter&, const Value& v, CallArgs& args) {
      bind_args("upper", args, {});
      return str_result(v, py_upper(soft_str(v)));
    };
    t["map"] = [](Interpreter& interp, const Value& v, CallArgs& args) {
      std::vector<Value> out;
      bool by_attribute = args.positional.empty();
      Value attribute, dflt;
      bool has_default = false;
      std::string filter;
      CallArgs rest;
      if (by_attribute) {
        for (auto& [k, val] : args.keyword) {
          if (k == "attribute") {
            attribute = val;
          } else if (k == "default") {
            dflt = val;
            has_default = !val.is_none();
          } else {
            throw RuntimeError(fmt::format("Unexpected keyword argument '{}'", k));
          }
        }
        if (attribute.is_undefined()) throw RuntimeError("map requires a filter argument");
      } else {
        if (!args.positional[0].is_string()) throw RuntimeError("map filter name must be a string");
        filter = args.positional[0].as_string();
        rest.positional.assign(args.positional.begin() + 1, args.positional.end());
        rest.keyword = args.keyword;
      }
      for (const Value& item : iterate(v)) {
        interp.count_iterations(1);
        if (by_attribute) {
          Value x = get_path(interp, item, attribute);
          out.push_back(has_default && x.is_undefined() ? dflt : x);
        } else {
          CallArgs copy = rest;
          out.push_back(apply_filter(interp, filter, item, copy));
        }
      }
      return Value::iterator("generator", std::move(out));
    };
    auto min_max = [](bool is_max) {
      return [is_max](Interpreter& interp, const Value& v, CallArgs& args) {
        auto a = bind_args(is_max ? "max" : "min", args, {"case_sensitive", "attribute"});
        bool case_sensitive = a[0] && truthy(*a[0]);
        std::vector<Value> items = iterate(v);
        if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
        auto key = [&](const Value& item) {
          Value k = a[1] && !a[1]->is_none() ? get_path(interp, item, *a[1]) : item;
          return case_sensitive ? k : lowered(k);
        };
        std::size_t best = 0;
        Value best_key = key(items[0]);
        for (std::size_t i = 1; i < items.size(); ++i) {
          Value k = key(items[i]);
          if (is_max ? less_than(best_key, k, "<") : less_than(k, best_key, "<")) {
            best = i;
            best_key = k;
          }
        }
        return items[best];
      };
    };
    t["max"] = min_max(true);
    t["min"] = min_max(false);
    t["select"] = [](Interpreter& interp, const Value& v, CallArgs& args) {
      return select_or_reject(interp, v, args, true, false);
    };
    t["reject"] = [](Interpreter& interp, const Value& v, CallArgs& args) {
      return select_or_reject(interp, v, args, false, false);
    };
    t["selectattr"] = [](Interpreter& interp, const Value& v, CallArgs& args) {
      return select_or_reject(interp, v, args, true, true);
    };
    t["rejectattr"] = [](Interpreter& interp, const Value& v, CallArgs& args) {
      return select_or_reject(interp, v, args, false, true);
    };
    t["replace"] = [](Interpreter&, const Value& v, CallArgs& args) {
      auto a = bind_args("replace", args, {"old", "new", "count"});
      if (!a[0] || !a[1]) throw RuntimeError("replace() needs old and new");
      std::int64_t count = a[2] && !a[2]->is_none() ? a[2]->as_int() : -1;
      return Value::string(py_replace(soft_str(v), soft_str(*a[0]), soft_str(*a[1]), count));
    };
    t["reverse"] = [](Interpreter&, const Value& v, CallArgs& args) {
      bind_args("reverse", args, {});
      if (v.is_string()) {
        std::u32string cps = to_u32(v.as_string());
        std::reverse(cps.begin(), cps.end());
        return Value::string(from_u32(cps));
      }
      std::vector<Value> items = iterate(v);
      std::reverse(items.begin(), items.end());
      if (v.is_iterator()) return Value::list(std::move(items));
      std::string type =
          v.is_dict()                                               ? "dict_reversekeyiterator"
          : (v.is_list() && v.list_data().kind == ListKind::kRange) ? "range_iterator"
          : (v.is_list() && v.list_data().kind == ListKind::kTuple) ? "reversed"
                                                                    : "list_reverseiterator";
      return Value::iterator(type, std::move(items));
    };
    t["round"] = [](Interpreter&, const Value& v, CallArgs& args) {
      auto a = bind_args("round", args, {"precision", "method"});
      std::int64_t precision = a[0] && a[0]->is_integral() ? a[0]->as_int() : 0;
      std::string method = a[1] && a[1]->is_string() ? a[1]->as_string() : "common";
      return do_round(v, precision, method);
    };
    t["safe"] = [](Interpreter&, const Value& v, CallArgs& args) {
      bind_args("safe", args, {});
      return Value::string(soft_str(v), true);
    };
    t["sort"] = [](Interpreter& interp, const Value& v, CallArgs& args) {
      auto a = bind_args("sort", args, {"reverse", "case_sensitive", "attribute"});
      bool case_sensitive = a[1] && truthy(*a[1]);
      std::vector<Value> items = iterate(v);
      std::vector<Value> attrs;
      if (a[2] && !a[2]->is_none()) {
        if (a[2]->is_string()) {
          for (const auto& part : py_split(a[2]->as_string(), std::string(","), -1)) {
            attrs.push_back(Value::string(part));
          }
        } else {
          attrs.push_back(*a[2]);
        }
      }
      sort_values(
          items,
          [&](const Value& item) {
            if (attrs.empty()) return case_sensitive ? item : lowered(item);
            std::vector<Value> keys;
            for (const Value& attr : attrs) {
              Value k = get_path(interp, item, attr);
              keys.push_back(case_sensitive ? k : lowered(k));
            }
            return Value::list(std::move(keys));
          },
          a[0] && truthy(*a[0]));
      return Value::list(std::move(items));
    };
    t["string"] = [](Interpreter&, const Value& v, CallArgs& args) {
      bind_args("string", args, {});
      if (v.is_string()) return v;
      return Value::string(soft_str(v));
    };
    t["sum"] = [](Interpreter& interp, const Value& v, CallArgs& args) {
      auto a = bind_args("sum", args, {"attribute", "start"});
      Value total = a[1] ? *a[1] : Value::integer(0);
      for (const Value& item : iterate(v)) {
        total =
            binary_op("+", total, a[0] && !a[0]->is_none() ? get_path(interp, item, *a[0]) : item);
      }
      return total;
    };
    t["title"] = [](Interpreter&, const Value& v, CallArgs& args) {
      bind_args("title", args, {});
      // jinja2 splits before runs of [-\s({\[<] and capitalizes each piece.
      std::u32string cps = to_u32(soft_str(v));
      auto boundary = [](char32_t c) {
        return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || is_python_space(c);
      };
      std::u32string out;
      std::size_t i = 0;
      while (i < cps.size()) {
        std::size_t j = i;
        bool b = boundary(cps[i]);
        while (j < cps.size() && boundary(cps[j]) == b) ++j;
        std::u32string piece = cps.substr(i, j - i);
        out += upper_of(piece[0]);
        out += to_u32(py_lower(from_u32(std::u32string_view(piece).substr(1))));
        i = j;
      }
      return str_result(v, from_u32(out));
    };
    t["tojson"] = [](Interpreter&, const Value& v, CallArgs& args) {
      auto a = bind_args("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
      if (a[0] && truthy(*a[0])) throw RuntimeError("unsupported: tojson(ensure_ascii=True)");
      JsonDumpOptions o;
      if (a[1] && !a[1]->is_none()) {
        o.has_indent = true;
        if (a[1]->is_string()) {
          o.indent = a[1]->as_string();
        } else if (a[1]->is_integral()) {
          std::int64_t width = std::clamp<std::int64_t>(a[1]->as_int(), 0, 1001);
          o.indent.assign(static_cast<std::size_t>(width), ' ');
        } else {
          throw RuntimeError("tojson indent must be an int or a string");
        }
        if (o.indent.size() > 1000) throw RuntimeError("tojson indent too large");
        o.item_separator.assign(1, ',');
      }
      if (a[2] && !a[2]->is_none()) {
        if (!a[2]->is_list() || a[2]->list_data().items.size() != 2 ||
            !a[2]->list_data().items[0].is_string() || !a[2]->list_data().items[1].is_string()) {
          throw RuntimeError("tojson separators must be a pair of strings");
        }
        o.item_separator = a[2]->list_data().items[0].as_string();
        o.key_separator = a[2]->list_data().items[1].as_string();
      }
      o.sort_keys = a[3] && truthy(*a[3]);
      std::string out = json_dumps(v, o);
      check_string_size(out.size());
      return Value::string(std::move(out));
    };
    t["trim"] = [](Interpreter&, const Value& v, CallArgs& args) {
      auto a = bind_args("trim", args, {"chars"});
      std::optional<std::string> chars;
      if (a[0] && !a[0]->is_none()) chars = soft_str(*a[0]);
      return Value::string(py_strip(soft_str(v), chars, StripSide::kBoth));
    };
    t["unique"] = [](Interpreter& interp, const Value& v, CallArgs& args) {
      auto a = bind_args("unique", args, {"case_sensitive", "attribute"});
      bool case_sensitive = a[0] && truthy(*a[0]);
      std::vector<Value> out, seen;
      for (const Value& item : iterate(v)) {
        interp.count_iterations(1);
        Value k = a[1] && !a[1]->is_none() ? get_path(interp, item, *a[1]) : item;
        if (!case_sensitive) k = lowered(k);
        if (k.is_list() || k.is_dict())
          throw RuntimeError(fmt::format("unhashable type: '{}'", type_name(k)));
        bool found = false;
        for (const Value& s : seen) {
          if (equals(s, k)) {
            found = true;
            break;
          }
        }
        if (!found) {
          seen.push_back(k);
          out.push_back(item);
        }
      }
      return Value::iterator("generator", std::move(out));
    };
    t["wordcount"] = [](Interpreter&, const Value& v, CallArgs& args) {
      bind_args("wordcount", args, {});
      return Value::integer(word_count(soft_str(v)));
    };
    return t;
  }();
  return table;
}

const std::set<std::string>& known_unsupported() {
  static const std::set<std::string> names = {
      "batch", "filesizeformat", "forceescape", "format",    "groupby", "pprint",   "random",
      "slice", "striptags",      "truncate",    "urlencode", "urlize",  "wordwrap", "xmlattr"};
  return names;
}

}  // namespace

Value apply_filter(Interpreter& interp, const std::string& name, const Value& input,
                   CallArgs& args) {
  const auto& table = filters();
  auto it = table.find(name);
  if (it != table.end()) return it->second(interp, input, args);
  if (known_unsupported().count(name)) throw RuntimeError("unsupported: filter '" + name + "'");
  throw RuntimeError("No filter named '" + name + "'.");
}

}  // namespace xlacel::jinja
