// The global functions of transformers' chat-template environment.
#include <fmt/format.h>

#include <chrono>
#include <ctime>

#include "chat/jinja_builtins.h"

namespace xlacel::jinja {
namespace {

constexpr std::int64_t kMaxRange = 100000;  // jinja2.sandbox.MAX_RANGE

Value range_function(CallArgs& args) {
  if (!args.keyword.empty()) throw RuntimeError("range() takes no keyword arguments");
  std::vector<std::int64_t> n;
  for (const Value& v : args.positional) {
    if (!v.is_integral()) {
      throw RuntimeError(
          fmt::format("'{}' object cannot be interpreted as an integer", type_name(v)));
    }
    n.push_back(v.as_int());
  }
  std::int64_t start = 0, stop = 0, step = 1;
  if (n.size() == 1) {
    stop = n[0];
  } else if (n.size() == 2 || n.size() == 3) {
    start = n[0];
    stop = n[1];
    if (n.size() == 3) step = n[2];
  } else {
    throw RuntimeError(fmt::format("range expected 1 to 3 arguments, got {}", n.size()));
  }
  if (step == 0) throw RuntimeError("range() arg 3 must not be zero");
  std::uint64_t span = 0;
  if (step > 0 && stop > start) {
    std::uint64_t diff = static_cast<std::uint64_t>(stop) - static_cast<std::uint64_t>(start);
    auto s = static_cast<std::uint64_t>(step);
    span = diff / s + (diff % s != 0);
  } else if (step < 0 && start > stop) {
    std::uint64_t diff = static_cast<std::uint64_t>(start) - static_cast<std::uint64_t>(stop);
    std::uint64_t s = static_cast<std::uint64_t>(-(step + 1)) + 1;
    span = diff / s + (diff % s != 0);
  }
  if (span > static_cast<std::uint64_t>(kMaxRange)) {
    throw RuntimeError("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  }
  return Value::range(start, stop, step);
}

// dict(*args, **kwargs) into d
void fill_dict(DictData& d, CallArgs& args, std::string_view function) {
  if (args.positional.size() > 1) {
    throw RuntimeError(
        fmt::format("{} expected at most 1 argument, got {}", function, args.positional.size()));
  }
  if (!args.positional.empty()) {
    const Value& src = args.positional[0];
    if (src.is_dict()) {
      for (const auto& [k, v] : src.dict_data().entries) d.set(k, v);
    } else {
      for (const Value& pair : iterate(src)) {
        std::vector<Value> kv = iterate(pair);
        if (kv.size() != 2)
          throw RuntimeError("dictionary update sequence element has wrong length");
        d.set(kv[0], kv[1]);
      }
    }
  }
  for (auto& [k, v] : args.keyword) d.set(Value::string(k), v);
}

Value strftime_now(CallArgs& args) {
  auto a = bind_args("strftime_now", args, {"format"});
  if (!a[0] || !a[0]->is_string()) throw RuntimeError("strftime_now() needs a format string");
  std::string format = a[0]->as_string();
  if (format.find("%f") != std::string::npos) throw RuntimeError("unsupported: %f in strftime_now");
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm local{};
  localtime_r(&t, &local);
  std::string out(256 + format.size() * 8, '\0');
  std::size_t n = std::strftime(out.data(), out.size(), format.c_str(), &local);
  if (n == 0 && !format.empty()) throw RuntimeError("strftime_now: result too long");
  out.resize(n);
  return Value::string(std::move(out));
}

Value unsupported_global(const std::string& name) {
  return Value::function(name, [name](CallArgs&) -> Value {
    throw RuntimeError("unsupported: global function '" + name + "'");
  });
}

}  // namespace

DictData make_globals() {
  DictData g;
  g.set(Value::string("range"), Value::function("range", range_function));
  g.set(Value::string("dict"), Value::function("dict", [](CallArgs& args) {
          DictData d;
          fill_dict(d, args, "dict");
          return Value::dict(std::move(d));
        }));
  g.set(Value::string("namespace"), Value::function("namespace", [](CallArgs& args) {
          DictData d;
          fill_dict(d, args, "namespace");
          for (const auto& [k, v] : d.entries) {
            if (k.is_string() && !k.as_string().empty() && k.as_string()[0] == '_') {
              throw RuntimeError(fmt::format(
                  "Chat templates cannot store underscore-prefixed attributes on a namespace, "
                  "but got '{}'. Please rename the attribute.",
                  k.as_string()));
            }
          }
          return Value::object("Namespace", true, std::move(d));
        }));
  g.set(
      Value::string("raise_exception"),
      Value::function("raise_exception", [](CallArgs& args) -> Value {
        auto a = bind_args("raise_exception", args, {"message"});
        if (!a[0])
          throw RuntimeError("raise_exception() missing 1 required positional argument: 'message'");
        throw TemplateRaised(to_str(*a[0]));
      }));
  g.set(Value::string("strftime_now"), Value::function("strftime_now", strftime_now));
  for (const char* name : {"lipsum", "cycler", "joiner"}) {
    g.set(Value::string(name), unsupported_global(name));
  }
  return g;
}

}  // namespace xlacel::jinja
