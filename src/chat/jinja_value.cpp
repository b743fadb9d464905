#include "chat/jinja_value.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "common/utf8.h"

namespace xlacel::jinja {

// ---- construction ----------------------------------------------------------------------------

Value Value::undefined(std::string hint) {
  Value v;
  v.string_ = std::move(hint);
  return v;
}
Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}
Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.bool_ = b;
  return v;
}
Value Value::integer(std::int64_t i) {
  Value v;
  v.kind_ = Kind::kInt;
  v.int_ = i;
  return v;
}
Value Value::floating(double f) {
  Value v;
  v.kind_ = Kind::kFloat;
  v.float_ = f;
  return v;
}
Value Value::string(std::string s, bool markup) {
  Value v;
  v.kind_ = Kind::kString;
  v.string_ = std::move(s);
  v.markup_ = markup;
  return v;
}
static int nesting_of(const Value& v) {
  if (v.is_list()) return v.list_data().depth;
  if (v.is_dict()) return v.dict_data().depth;
  return 0;
}

static int checked_depth(int depth) {
  if (depth > kMaxNesting) {
    throw RuntimeError(fmt::format("value nested too deeply (limit {})", kMaxNesting));
  }
  return depth;
}

Value Value::list(std::vector<Value> items, ListKind kind) {
  int depth = 0;
  for (const Value& item : items) depth = std::max(depth, nesting_of(item));
  Value v;
  v.kind_ = Kind::kList;
  v.list_ = std::make_shared<ListData>();
  v.list_->kind = kind;
  v.list_->items = std::move(items);
  v.list_->depth = checked_depth(depth + 1);
  return v;
}
Value Value::range(std::int64_t start, std::int64_t stop, std::int64_t step) {
  std::vector<Value> items;
  if (step > 0) {
    for (std::int64_t i = start; i < stop; i += step) items.push_back(integer(i));
  } else {
    for (std::int64_t i = start; i > stop; i += step) items.push_back(integer(i));
  }
  Value v = list(std::move(items), ListKind::kRange);
  v.list_->range_start = start;
  v.list_->range_stop = stop;
  v.list_->range_step = step;
  return v;
}
Value Value::dict(DictData data) {
  int depth = 0;
  for (const auto& [k, item] : data.entries)
    depth = std::max({depth, nesting_of(k), nesting_of(item)});
  data.depth = checked_depth(depth + 1);
  Value v;
  v.kind_ = Kind::kDict;
  v.dict_ = std::make_shared<DictData>(std::move(data));
  return v;
}
Value Value::object(std::string type_name, bool is_namespace, DictData attributes) {
  Value v;
  v.kind_ = Kind::kObject;
  v.object_ = std::make_shared<ObjectData>();
  v.object_->type_name = std::move(type_name);
  v.object_->is_namespace = is_namespace;
  v.object_->attributes = std::move(attributes);
  return v;
}
Value Value::function(std::string name, NativeFunction call) {
  Value v;
  v.kind_ = Kind::kFunction;
  v.function_ = std::make_shared<FunctionData>(FunctionData{std::move(name), std::move(call)});
  return v;
}
Value Value::iterator(std::string type_name, std::vector<Value> items) {
  Value v;
  v.kind_ = Kind::kIterator;
  v.iterator_ = std::make_shared<IteratorData>();
  v.iterator_->type_name = std::move(type_name);
  v.iterator_->items = std::move(items);
  return v;
}

double Value::as_double() const {
  if (kind_ == Kind::kFloat) return float_;
  return static_cast<double>(as_int());
}

const void* Value::identity() const {
  switch (kind_) {
    case Kind::kList:
      return list_.get();
    case Kind::kDict:
      return dict_.get();
    case Kind::kObject:
      return object_.get();
    case Kind::kFunction:
      return function_.get();
    case Kind::kIterator:
      return iterator_.get();
    default:
      return nullptr;
  }
}

const Value* DictData::find(const Value& key) const {
  for (const auto& [k, v] : entries) {
    if (equals(k, key)) return &v;
  }
  return nullptr;
}
Value* DictData::find(const Value& key) {
  for (auto& [k, v] : entries) {
    if (equals(k, key)) return &v;
  }
  return nullptr;
}
void DictData::set(Value key, Value value) {
  if (Value* existing = find(key)) {
    *existing = std::move(value);
  } else {
    entries.emplace_back(std::move(key), std::move(value));
  }
}

// ---- unicode helpers ----------------------------------------------------------------------

std::u32string to_u32(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  std::size_t pos = 0;
  while (pos < s.size()) {
    auto c = utf8::decode(s, pos);
    if (!c) {  // cannot happen for validated input; keep the byte as a code point
      out.push_back(static_cast<unsigned char>(s[pos]));
      ++pos;
    } else {
      out.push_back(*c);
    }
  }
  return out;
}

std::string from_u32(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) utf8::append(out, c);
  return out;
}

bool is_python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
         c == 0x205f || c == 0x3000;
}

// ---- Python semantics -----------------------------------------------------------------------

std::string type_name(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return v.is_markup() ? "Markup" : "str";
    case Kind::kList:
      switch (v.list_data().kind) {
        case ListKind::kList:
          return "list";
        case ListKind::kTuple:
          return "tuple";
        case ListKind::kRange:
          return "range";
        case ListKind::kDictKeys:
          return "dict_keys";
        case ListKind::kDictValues:
          return "dict_values";
        case ListKind::kDictItems:
          return "dict_items";
      }
      return "list";
    case Kind::kDict:
      return "dict";
    case Kind::kObject:
      return v.object_data().type_name;
    case Kind::kFunction:
      return "function";
    case Kind::kIterator:
      return v.iterator_data().type_name;
  }
  return "object";
}

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return v.as_bool();
    case Kind::kInt:
      return v.as_int() != 0;
    case Kind::kFloat:
      return v.as_double() != 0.0;
    case Kind::kString:
      return !v.as_string().empty();
    case Kind::kList:
      return !v.list_data().items.empty();
    case Kind::kDict:
      return !v.dict_data().entries.empty();
    default:
      return true;
  }
}

void fail_undefined(const Value& v) {
  throw RuntimeError(v.as_string().empty() ? std::string("'undefined' value used") : v.as_string());
}

std::string python_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0.0) return std::signbit(d) ? "-0.0" : "0.0";
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof(buffer), d, std::chars_format::scientific);
  std::string sci(buffer, result.ptr);  // e.g. "-1.2345e+02"
  bool negative = sci[0] == '-';
  if (negative) sci.erase(0, 1);
  std::size_t e = sci.find('e');
  int exponent = std::atoi(sci.c_str() + e + 1);
  std::string digits;
  for (std::size_t i = 0; i < e; ++i) {
    if (sci[i] != '.') digits += sci[i];
  }
  std::string out;
  if (exponent >= -5 + 1 && exponent < 16) {  // Python: fixed unless decpt <= -4 or > 16
    int decpt = exponent + 1;
    if (decpt <= 0) {
      out = "0." + std::string(static_cast<std::size_t>(-decpt), '0') + digits;
    } else if (static_cast<std::size_t>(decpt) >= digits.size()) {
      out = digits + std::string(static_cast<std::size_t>(decpt) - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, static_cast<std::size_t>(decpt)) + "." +
            digits.substr(static_cast<std::size_t>(decpt));
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    out += fmt::format("e{}{:02d}", exponent < 0 ? '-' : '+', std::abs(exponent));
  }
  return negative ? "-" + out : out;
}

static bool is_printable(char32_t c) {
  if (c < 0x20 || c == 0x7f) return false;
  if (c >= 0x80 && c <= 0xa0) return false;
  if (c == 0xad) return false;
  if (c == 0x1680 || (c >= 0x2000 && c <= 0x200f) || (c >= 0x2028 && c <= 0x202f)) return false;
  if ((c >= 0x205f && c <= 0x2064) || c == 0x3000 || c == 0xfeff) return false;
  if (c >= 0xd800 && c <= 0xf8ff) return false;  // surrogates, private use
  if (c >= 0xfff9 && c <= 0xfffb) return false;
  if (c >= 0xe0000) return false;
  return true;
}

std::string python_string_repr(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t c : to_u32(s)) {
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (!is_printable(c)) {
      if (c < 0x100) {
        out += fmt::format("\\x{:02x}", static_cast<unsigned>(c));
      } else if (c < 0x10000) {
        out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
      } else {
        out += fmt::format("\\U{:08x}", static_cast<unsigned>(c));
      }
    } else {
      utf8::append(out, c);
    }
  }
  out += quote;
  return out;
}

static std::string join_repr(const std::vector<Value>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += repr(items[i]);
  }
  return out;
}

static std::string dict_repr(const DictData& d) {
  std::string out = "{";
  for (std::size_t i = 0; i < d.entries.size(); ++i) {
    if (i) out += ", ";
    out += repr(d.entries[i].first) + ": " + repr(d.entries[i].second);
  }
  return out + "}";
}

std::string repr(const Value& v) {
  // Namespaces are references and may contain themselves; containers are depth-limited.
  static thread_local int depth = 0;
  struct Guard {
    Guard() {
      if (++depth > 2 * kMaxNesting) {
        --depth;
        throw RuntimeError("value nested too deeply to print (or contains itself)");
      }
    }
    ~Guard() { --depth; }
  } guard;
  switch (v.kind()) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kString:
      return v.is_markup() ? "Markup(" + python_string_repr(v.as_string()) + ")"
                           : python_string_repr(v.as_string());
    case Kind::kList: {
      const ListData& l = v.list_data();
      switch (l.kind) {
        case ListKind::kList:
          return "[" + join_repr(l.items) + "]";
        case ListKind::kTuple:
          if (l.items.size() == 1) return "(" + repr(l.items[0]) + ",)";
          return "(" + join_repr(l.items) + ")";
        case ListKind::kRange:
          if (l.range_step == 1) return fmt::format("range({}, {})", l.range_start, l.range_stop);
          return fmt::format("range({}, {}, {})", l.range_start, l.range_stop, l.range_step);
        case ListKind::kDictKeys:
          return "dict_keys([" + join_repr(l.items) + "])";
        case ListKind::kDictValues:
          return "dict_values([" + join_repr(l.items) + "])";
        case ListKind::kDictItems:
          return "dict_items([" + join_repr(l.items) + "])";
      }
      return "";
    }
    case Kind::kDict:
      return dict_repr(v.dict_data());
    case Kind::kObject:
      if (v.object_data().is_namespace) {
        return "<Namespace " + dict_repr(v.object_data().attributes) + ">";
      }
      throw RuntimeError(
          fmt::format("printing a {} object is not supported (its text is an address)",
                      v.object_data().type_name));
    case Kind::kFunction:
    case Kind::kIterator:
      throw RuntimeError(
          fmt::format("printing a {} object is not supported (jinja2 prints its memory address)",
                      type_name(v)));
    default:
      return to_str(v);
  }
}

std::string to_str(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return "";
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return v.as_bool() ? "True" : "False";
    case Kind::kInt:
      return std::to_string(v.as_int());
    case Kind::kFloat:
      return python_float_repr(v.as_double());
    case Kind::kString:
      return v.as_string();
    default:
      return repr(v);
  }
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kString:
      return a.as_string() == b.as_string();
    case Kind::kList: {
      const ListData& x = a.list_data();
      const ListData& y = b.list_data();
      bool x_seq = x.kind == ListKind::kList || x.kind == ListKind::kTuple;
      if (x.kind != y.kind) return false;
      if (x.kind == ListKind::kDictValues) return &x == &y;
      if (x.items.size() != y.items.size()) return false;
      if (x_seq || x.kind == ListKind::kRange) {
        for (std::size_t i = 0; i < x.items.size(); ++i) {
          if (!equals(x.items[i], y.items[i])) return false;
        }
        return true;
      }
      // dict_keys / dict_items compare as sets
      for (const Value& item : x.items) {
        bool found = false;
        for (const Value& other : y.items) {
          if (equals(item, other)) {
            found = true;
            break;
          }
        }
        if (!found) return false;
      }
      return true;
    }
    case Kind::kDict: {
      const DictData& x = a.dict_data();
      const DictData& y = b.dict_data();
      if (x.entries.size() != y.entries.size()) return false;
      for (const auto& [k, val] : x.entries) {
        const Value* other = y.find(k);
        if (!other || !equals(val, *other)) return false;
      }
      return true;
    }
    default:
      return a.identity() == b.identity();
  }
}

bool less_than(const Value& a, const Value& b, std::string_view op) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();  // UTF-8 order
  if (a.is_list() && b.is_list() && a.list_data().kind == b.list_data().kind &&
      (a.list_data().kind == ListKind::kList || a.list_data().kind == ListKind::kTuple)) {
    const auto& x = a.list_data().items;
    const auto& y = b.list_data().items;
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!equals(x[i], y[i])) return less_than(x[i], y[i], op);
    }
    return x.size() < y.size();
  }
  throw RuntimeError(fmt::format("'{}' not supported between instances of '{}' and '{}'", op,
                                 type_name(a), type_name(b)));
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return {};
    case Kind::kString: {
      std::vector<Value> out;
      for (char32_t c : to_u32(v.as_string())) out.push_back(Value::string(from_u32({&c, 1})));
      return out;
    }
    case Kind::kList:
      return v.list_data().items;
    case Kind::kDict: {
      std::vector<Value> out;
      for (const auto& entry : v.dict_data().entries) out.push_back(entry.first);
      return out;
    }
    case Kind::kIterator: {
      IteratorData& it = v.iterator_data();
      std::vector<Value> out(it.items.begin() + static_cast<std::ptrdiff_t>(it.position),
                             it.items.end());
      it.position = it.items.size();
      return out;
    }
    default:
      throw RuntimeError(fmt::format("'{}' object is not iterable", type_name(v)));
  }
}

std::int64_t length(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return 0;
    case Kind::kString:
      return static_cast<std::int64_t>(to_u32(v.as_string()).size());
    case Kind::kList:
      return static_cast<std::int64_t>(v.list_data().items.size());
    case Kind::kDict:
      return static_cast<std::int64_t>(v.dict_data().entries.size());
    default:
      throw RuntimeError(fmt::format("object of type '{}' has no len()", type_name(v)));
  }
}

Value from_json(const Json& json) {
  switch (json.type()) {
    case Json::value_t::null:
      return Value::none();
    case Json::value_t::boolean:
      return Value::boolean(json.get<bool>());
    case Json::value_t::number_integer:
      return Value::integer(json.get<std::int64_t>());
    case Json::value_t::number_unsigned: {
      auto u = json.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(INT64_MAX)) {
        throw RuntimeError(fmt::format("integer {} is too large", u));
      }
      return Value::integer(static_cast<std::int64_t>(u));
    }
    case Json::value_t::number_float:
      return Value::floating(json.get<double>());
    case Json::value_t::string:
      return Value::string(json.get<std::string>());
    case Json::value_t::array: {
      std::vector<Value> items;
      items.reserve(json.size());
      for (const auto& item : json) items.push_back(from_json(item));
      return Value::list(std::move(items));
    }
    case Json::value_t::object: {
      DictData d;
      for (const auto& [key, item] : json.items()) {
        d.entries.emplace_back(Value::string(key), from_json(item));
      }
      return Value::dict(std::move(d));
    }
    default:
      throw RuntimeError("unsupported JSON value (binary)");
  }
}

static void json_string(std::string& out, std::string_view s) {
  out += '"';
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

static std::string json_float(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return python_float_repr(d);
}

static void json_dump(std::string& out, const Value& v, const JsonDumpOptions& o, int level,
                      int depth) {
  if (depth > 2 * kMaxNesting) throw RuntimeError("tojson: value nested too deeply");
  auto newline = [&](int lvl) {
    if (!o.has_indent) return;
    out += '\n';
    for (int i = 0; i < lvl; ++i) out += o.indent;
  };
  switch (v.kind()) {
    case Kind::kNone:
      out += "null";
      return;
    case Kind::kBool:
      out += v.as_bool() ? "true" : "false";
      return;
    case Kind::kInt:
      out += std::to_string(v.as_int());
      return;
    case Kind::kFloat:
      out += json_float(v.as_double());
      return;
    case Kind::kString:
      json_string(out, v.as_string());
      return;
    case Kind::kList: {
      const ListData& l = v.list_data();
      if (l.kind != ListKind::kList && l.kind != ListKind::kTuple) break;
      if (l.items.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (std::size_t i = 0; i < l.items.size(); ++i) {
        if (i) out += o.item_separator;
        newline(level + 1);
        json_dump(out, l.items[i], o, level + 1, depth + 1);
      }
      newline(level);
      out += ']';
      return;
    }
    case Kind::kDict: {
      const DictData& d = v.dict_data();
      if (d.entries.empty()) {
        out += "{}";
        return;
      }
      std::vector<std::pair<std::string, const Value*>> entries;
      for (const auto& [key, item] : d.entries) {
        std::string k;
        switch (key.kind()) {
          case Kind::kString:
            k = key.as_string();
            break;
          case Kind::kInt:
            k = std::to_string(key.as_int());
            break;
          case Kind::kFloat:
            k = json_float(key.as_double());
            break;
          case Kind::kBool:
            k = key.as_bool() ? "true" : "false";
            break;
          case Kind::kNone:
            k = "null";
            break;
          default:
            throw RuntimeError(
                fmt::format("keys must be str, int, float, bool or None, not {}", type_name(key)));
        }
        entries.emplace_back(std::move(k), &item);
      }
      if (o.sort_keys) {
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto& x, const auto& y) { return x.first < y.first; });
      }
      out += '{';
      for (std::size_t i = 0; i < entries.size(); ++i) {
        if (i) out += o.item_separator;
        newline(level + 1);
        json_string(out, entries[i].first);
        out += o.key_separator;
        json_dump(out, *entries[i].second, o, level + 1, depth + 1);
      }
      newline(level);
      out += '}';
      return;
    }
    default:
      break;
  }
  throw RuntimeError(fmt::format("Object of type {} is not JSON serializable", type_name(v)));
}

std::string json_dumps(const Value& v, const JsonDumpOptions& options) {
  std::string out;
  json_dump(out, v, options, 0, 0);
  return out;
}

}  // namespace xlacel::jinja
