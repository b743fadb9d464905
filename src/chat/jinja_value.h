#pragma once
// The values a Jinja template computes with, modelled on the Python objects jinja2 hands around:
// None, bool, int, float, str, list, tuple, dict (insertion-ordered), range, dict views,
// generators (one-shot iterators), Namespace/loop objects, callables and jinja2's Undefined.
// Printing, repr, equality, ordering and truthiness follow Python's rules.
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/json_file.h"

namespace xlacel::jinja {

// An error raised while evaluating (Python's TypeError, jinja2's UndefinedError, ...). The
// interpreter adds the template's name and line before it becomes an xlacel::Error.
class RuntimeError : public std::runtime_error {
 public:
  explicit RuntimeError(const std::string& message) : std::runtime_error(message) {}
};

// jinja2.exceptions.TemplateError raised by the template itself (raise_exception).
class TemplateRaised : public RuntimeError {
 public:
  explicit TemplateRaised(const std::string& message) : RuntimeError(message) {}
};

class Value;

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

using NativeFunction = std::function<Value(CallArgs&)>;

enum class Kind : std::uint8_t {
  kUndefined,
  kNone,
  kBool,
  kInt,
  kFloat,
  kString,
  kList,
  kDict,
  kObject,
  kFunction,
  kIterator,
};

enum class ListKind : std::uint8_t { kList, kTuple, kRange, kDictKeys, kDictValues, kDictItems };

// Containers may nest at most this deep (recursive printing, comparison and destruction).
inline constexpr int kMaxNesting = 500;

struct ListData {
  ListKind kind = ListKind::kList;
  int depth = 1;
  std::vector<Value> items;
  std::int64_t range_start = 0, range_stop = 0, range_step = 1;
};

struct DictData {
  std::vector<std::pair<Value, Value>> entries;
  int depth = 1;  // set by Value::dict
  const Value* find(const Value& key) const;
  Value* find(const Value& key);
  void set(Value key, Value value);
};

// Namespace and loop objects: attributes only.
struct ObjectData {
  std::string type_name;  // "Namespace" or "LoopContext"
  bool is_namespace = false;
  DictData attributes;
};

struct FunctionData {
  std::string name;
  NativeFunction call;
};

struct IteratorData {
  std::string type_name;  // "generator", "list_reverseiterator", ...
  std::vector<Value> items;
  std::size_t position = 0;
};

class Value {
 public:
  Value() = default;  // undefined
  static Value undefined(std::string hint = {});
  static Value none();
  static Value boolean(bool b);
  static Value integer(std::int64_t i);
  static Value floating(double f);
  static Value string(std::string s, bool markup = false);
  static Value list(std::vector<Value> items, ListKind kind = ListKind::kList);
  static Value tuple(std::vector<Value> items) { return list(std::move(items), ListKind::kTuple); }
  static Value range(std::int64_t start, std::int64_t stop, std::int64_t step);
  static Value dict(DictData data = {});
  static Value object(std::string type_name, bool is_namespace, DictData attributes = {});
  static Value function(std::string name, NativeFunction call);
  static Value iterator(std::string type_name, std::vector<Value> items);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return is_bool() || is_int() || is_float(); }  // bool is an int
  bool is_integral() const { return is_bool() || is_int(); }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_object() const { return kind_ == Kind::kObject; }
  bool is_function() const { return kind_ == Kind::kFunction; }
  bool is_iterator() const { return kind_ == Kind::kIterator; }

  bool as_bool() const { return bool_; }
  std::int64_t as_int() const { return is_bool() ? (bool_ ? 1 : 0) : int_; }
  double as_double() const;
  const std::string& as_string() const { return string_; }  // also the Undefined hint
  bool is_markup() const { return markup_; }
  ListData& list_data() const { return *list_; }
  DictData& dict_data() const { return *dict_; }
  ObjectData& object_data() const { return *object_; }
  FunctionData& function_data() const { return *function_; }
  IteratorData& iterator_data() const { return *iterator_; }
  const void* identity() const;  // for `is sameas` on containers

 private:
  Kind kind_ = Kind::kUndefined;
  bool bool_ = false;
  bool markup_ = false;
  std::int64_t int_ = 0;
  double float_ = 0.0;
  std::string string_;
  std::shared_ptr<ListData> list_;
  std::shared_ptr<DictData> dict_;
  std::shared_ptr<ObjectData> object_;
  std::shared_ptr<FunctionData> function_;
  std::shared_ptr<IteratorData> iterator_;
};

// Python's type(x).__name__.
std::string type_name(const Value& v);
bool truthy(const Value& v);
// str(x): what {{ x }} prints. Throws RuntimeError for values whose text is an address.
std::string to_str(const Value& v);
std::string repr(const Value& v);
std::string python_float_repr(double d);
std::string python_string_repr(std::string_view s);
bool equals(const Value& a, const Value& b);
// a < b (op names the operator for the TypeError).
bool less_than(const Value& a, const Value& b, std::string_view op);
// UndefinedError with the undefined's hint.
[[noreturn]] void fail_undefined(const Value& v);

// Elements of an iterable (a string gives its characters); consumes an iterator. Throws
// RuntimeError when not iterable. Undefined iterates as empty.
std::vector<Value> iterate(const Value& v);
// len(x), or RuntimeError.
std::int64_t length(const Value& v);

Value from_json(const Json& json);
// json.dumps(x, ensure_ascii=False, indent=..., separators=..., sort_keys=...).
struct JsonDumpOptions {
  bool has_indent = false;
  std::string indent;
  bool has_separators = false;
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
};
std::string json_dumps(const Value& v, const JsonDumpOptions& options);

// UTF-8 <-> code points (the template's strings are always valid UTF-8).
std::u32string to_u32(std::string_view s);
std::string from_u32(std::u32string_view s);
bool is_python_space(char32_t c);
// Python's full case mappings of one code point (jinja_unicode.cpp).
std::u32string upper_of(char32_t c);
std::u32string lower_of(char32_t c);
std::u32string title_of(char32_t c);
bool is_cased(char32_t c);        // Unicode "Cased"
bool is_cased_upper(char32_t c);  // an uppercase or titlecase letter
bool is_cased_lower(char32_t c);

}  // namespace xlacel::jinja
