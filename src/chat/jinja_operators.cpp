#include "chat/jinja_operators.h"

#include <fmt/format.h>

#include <cmath>

namespace xlacel::jinja {
namespace {

[[noreturn]] void unsupported_operands(std::string_view op, const Value& a, const Value& b) {
  throw RuntimeError(fmt::format("unsupported operand type(s) for {}: '{}' and '{}'", op,
                                 type_name(a), type_name(b)));
}

[[noreturn]] void overflow() {
  throw RuntimeError("integer overflow (integers are limited to 64 bits)");
}

std::int64_t checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_add_overflow(a, b, &r)) overflow();
  return r;
}
std::int64_t checked_sub(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) overflow();
  return r;
}
std::int64_t checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) overflow();
  return r;
}

double float_mod(double vx, double wx) {
  double mod = std::fmod(vx, wx);
  if (mod != 0.0) {
    if ((wx < 0) != (mod < 0)) mod += wx;
  } else {
    mod = std::copysign(0.0, wx);
  }
  return mod;
}

double float_floordiv(double vx, double wx) {
  double mod = std::fmod(vx, wx);
  double div = (vx - mod) / wx;
  if (mod != 0.0 && ((wx < 0) != (mod < 0))) div -= 1.0;
  double floordiv;
  if (div != 0.0) {
    floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
  } else {
    floordiv = std::copysign(0.0, vx / wx);
  }
  return floordiv;
}

Value repeat(const Value& seq, std::int64_t n) {
  if (n < 0) n = 0;
  if (seq.is_string()) {
    std::size_t size = seq.as_string().size();
    if (size != 0 && static_cast<std::uint64_t>(n) > kMaxStringBytes / size) {
      check_string_size(kMaxStringBytes + 1);
    }
    std::string out;
    out.reserve(size * static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) out += seq.as_string();
    return Value::string(std::move(out), seq.is_markup());
  }
  const auto& items = seq.list_data().items;
  if (!items.empty() && static_cast<std::uint64_t>(n) > kMaxListItems / items.size()) {
    throw RuntimeError("list too large");
  }
  std::vector<Value> out;
  for (std::int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::list(std::move(out), seq.list_data().kind);
}

bool is_sequence_list(const Value& v) {
  return v.is_list() &&
         (v.list_data().kind == ListKind::kList || v.list_data().kind == ListKind::kTuple);
}

}  // namespace

void check_string_size(std::size_t size) {
  if (size > kMaxStringBytes) {
    throw RuntimeError(fmt::format("string too large (limit {} bytes)", kMaxStringBytes));
  }
}

std::string html_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

Value binary_op(std::string_view op, const Value& a, const Value& b) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  bool ints = a.is_integral() && b.is_integral();
  bool numbers = a.is_number() && b.is_number();
  if (op == "+") {
    if (ints) return Value::integer(checked_add(a.as_int(), b.as_int()));
    if (numbers) return Value::floating(a.as_double() + b.as_double());
    if (a.is_string() && b.is_string()) {
      check_string_size(a.as_string().size() + b.as_string().size());
      if (a.is_markup() || b.is_markup()) {
        std::string left = a.is_markup() ? a.as_string() : html_escape(a.as_string());
        std::string right = b.is_markup() ? b.as_string() : html_escape(b.as_string());
        return Value::string(left + right, true);
      }
      return Value::string(a.as_string() + b.as_string());
    }
    if (is_sequence_list(a) && is_sequence_list(b) && a.list_data().kind == b.list_data().kind) {
      if (a.list_data().items.size() + b.list_data().items.size() > kMaxListItems) {
        throw RuntimeError("list too large");
      }
      std::vector<Value> items = a.list_data().items;
      items.insert(items.end(), b.list_data().items.begin(), b.list_data().items.end());
      return Value::list(std::move(items), a.list_data().kind);
    }
    if (a.is_string() || b.is_string()) {
      if (a.is_string()) {
        throw RuntimeError(
            fmt::format("can only concatenate str (not \"{}\") to str", type_name(b)));
      }
    }
    unsupported_operands(op, a, b);
  }
  if (op == "-") {
    if (ints) return Value::integer(checked_sub(a.as_int(), b.as_int()));
    if (numbers) return Value::floating(a.as_double() - b.as_double());
    unsupported_operands(op, a, b);
  }
  if (op == "*") {
    if (ints) return Value::integer(checked_mul(a.as_int(), b.as_int()));
    if (numbers) return Value::floating(a.as_double() * b.as_double());
    if ((a.is_string() || is_sequence_list(a)) && b.is_integral()) return repeat(a, b.as_int());
    if ((b.is_string() || is_sequence_list(b)) && a.is_integral()) return repeat(b, a.as_int());
    unsupported_operands(op, a, b);
  }
  if (op == "/") {
    if (!numbers) unsupported_operands(op, a, b);
    if (b.as_double() == 0.0) throw RuntimeError("division by zero");
    return Value::floating(a.as_double() / b.as_double());
  }
  if (op == "//" || op == "%") {
    if (!numbers) {
      if (op == "%" && a.is_string()) {
        throw RuntimeError("unsupported: printf-style string formatting with %");
      }
      unsupported_operands(op, a, b);
    }
    if (ints) {
      std::int64_t x = a.as_int(), y = b.as_int();
      if (y == 0) throw RuntimeError("integer division or modulo by zero");
      if (x == INT64_MIN && y == -1) overflow();
      std::int64_t q = x / y, r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) {
        q -= 1;
        r += y;
      }
      return Value::integer(op == "//" ? q : r);
    }
    double x = a.as_double(), y = b.as_double();
    if (y == 0.0) throw RuntimeError("float divmod()");
    return Value::floating(op == "//" ? float_floordiv(x, y) : float_mod(x, y));
  }
  if (op == "**") {
    if (!numbers) unsupported_operands("** or pow()", a, b);
    if (ints && b.as_int() >= 0) {
      std::int64_t base = a.as_int(), exponent = b.as_int(), result = 1;
      while (exponent > 0) {
        if (exponent & 1) result = checked_mul(result, base);
        exponent >>= 1;
        if (exponent > 0) base = checked_mul(base, base);
      }
      return Value::integer(result);
    }
    double x = a.as_double(), y = b.as_double();
    if (x == 0.0 && y < 0) throw RuntimeError("0.0 cannot be raised to a negative power");
    if (x < 0 && std::floor(y) != y) {
      throw RuntimeError("unsupported: complex result of ** on a negative number");
    }
    return Value::floating(std::pow(x, y));
  }
  throw RuntimeError(fmt::format("unknown operator {}", op));
}

Value negate(const Value& v) {
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_integral()) return Value::integer(checked_sub(0, v.as_int()));
  if (v.is_float()) return Value::floating(-v.as_double());
  throw RuntimeError(fmt::format("bad operand type for unary -: '{}'", type_name(v)));
}

Value positive(const Value& v) {
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_integral()) return Value::integer(v.as_int());
  if (v.is_float()) return v;
  throw RuntimeError(fmt::format("bad operand type for unary +: '{}'", type_name(v)));
}

bool contains(const Value& container, const Value& item) {
  if (container.is_string()) {
    if (!item.is_string()) {
      if (item.is_undefined()) fail_undefined(item);
      throw RuntimeError(
          fmt::format("'in <string>' requires string as left operand, not {}", type_name(item)));
    }
    return container.as_string().find(item.as_string()) != std::string::npos;
  }
  if (container.is_dict()) return container.dict_data().find(item) != nullptr;
  if (container.is_object() || container.is_function() || container.is_none() ||
      container.is_number()) {
    throw RuntimeError(fmt::format("argument of type '{}' is not iterable", type_name(container)));
  }
  for (const Value& v : iterate(container)) {
    if (equals(v, item)) return true;
  }
  return false;
}

}  // namespace xlacel::jinja
