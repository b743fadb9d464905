#include "chat/jinja_strings.h"

#include <algorithm>

#include "chat/jinja_operators.h"
#include "chat/jinja_value.h"

namespace xlacel::jinja {

std::string py_strip(std::string_view s, const std::optional<std::string>& chars, StripSide side) {
  std::u32string cps = to_u32(s);
  std::u32string set;
  if (chars) set = to_u32(*chars);
  auto strip_it = [&](char32_t c) {
    return chars ? set.find(c) != std::u32string::npos : is_python_space(c);
  };
  std::size_t begin = 0, end = cps.size();
  if (side != StripSide::kRight) {
    while (begin < end && strip_it(cps[begin])) ++begin;
  }
  if (side != StripSide::kLeft) {
    while (end > begin && strip_it(cps[end - 1])) --end;
  }
  return from_u32(std::u32string_view(cps).substr(begin, end - begin));
}

std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep,
                                  std::int64_t maxsplit, bool from_right) {
  std::vector<std::string> out;
  if (sep) {
    if (sep->empty()) throw RuntimeError("empty separator");
    std::string_view rest = s;
    if (!from_right) {
      while (maxsplit < 0 || static_cast<std::int64_t>(out.size()) < maxsplit) {
        std::size_t p = rest.find(*sep);
        if (p == std::string_view::npos) break;
        out.emplace_back(rest.substr(0, p));
        rest = rest.substr(p + sep->size());
      }
      out.emplace_back(rest);
    } else {
      std::vector<std::string> reversed;
      while (maxsplit < 0 || static_cast<std::int64_t>(reversed.size()) < maxsplit) {
        std::size_t p = rest.rfind(*sep);
        if (p == std::string_view::npos) break;
        reversed.emplace_back(rest.substr(p + sep->size()));
        rest = rest.substr(0, p);
      }
      reversed.emplace_back(rest);
      out.assign(reversed.rbegin(), reversed.rend());
    }
    return out;
  }
  std::u32string cps = to_u32(s);
  if (!from_right) {
    std::size_t i = 0;
    while (true) {
      while (i < cps.size() && is_python_space(cps[i])) ++i;
      if (i >= cps.size()) break;
      if (maxsplit >= 0 && static_cast<std::int64_t>(out.size()) >= maxsplit) {
        std::size_t end = cps.size();
        while (end > i && is_python_space(cps[end - 1])) --end;
        out.push_back(from_u32(std::u32string_view(cps).substr(i, end - i)));
        break;
      }
      std::size_t j = i;
      while (j < cps.size() && !is_python_space(cps[j])) ++j;
      out.push_back(from_u32(std::u32string_view(cps).substr(i, j - i)));
      i = j;
    }
    return out;
  }
  std::vector<std::string> reversed;
  std::size_t end = cps.size();
  while (true) {
    while (end > 0 && is_python_space(cps[end - 1])) --end;
    if (end == 0) break;
    if (maxsplit >= 0 && static_cast<std::int64_t>(reversed.size()) >= maxsplit) {
      std::size_t b = 0;
      while (b < end && is_python_space(cps[b])) ++b;
      reversed.push_back(from_u32(std::u32string_view(cps).substr(b, end - b)));
      break;
    }
    std::size_t b = end;
    while (b > 0 && !is_python_space(cps[b - 1])) --b;
    reversed.push_back(from_u32(std::u32string_view(cps).substr(b, end - b)));
    end = b;
  }
  out.assign(reversed.rbegin(), reversed.rend());
  return out;
}

std::vector<std::string> py_splitlines(std::string_view s, bool keepends) {
  std::u32string cps = to_u32(s);
  std::vector<std::string> out;
  std::size_t start = 0, i = 0;
  auto is_break = [](char32_t c) {
    return c == '\n' || c == '\r' || c == 0x0b || c == 0x0c || c == 0x1c || c == 0x1d ||
           c == 0x1e || c == 0x85 || c == 0x2028 || c == 0x2029;
  };
  while (i < cps.size()) {
    if (is_break(cps[i])) {
      std::size_t eol = i + 1;
      if (cps[i] == '\r' && eol < cps.size() && cps[eol] == '\n') ++eol;
      out.push_back(from_u32(std::u32string_view(cps).substr(start, (keepends ? eol : i) - start)));
      start = i = eol;
    } else {
      ++i;
    }
  }
  if (start < cps.size()) out.push_back(from_u32(std::u32string_view(cps).substr(start)));
  return out;
}

std::string py_upper(std::string_view s) {
  std::u32string out;
  for (char32_t c : to_u32(s)) out += upper_of(c);
  return from_u32(out);
}

std::string py_lower(std::string_view s) {
  std::u32string cps = to_u32(s);
  std::u32string out;
  for (std::size_t i = 0; i < cps.size(); ++i) {
    char32_t c = cps[i];
    if (c == 0x3a3) {  // Final_Sigma: after a cased letter and not before one
      bool before = i > 0 && is_cased(cps[i - 1]);
      bool after = i + 1 < cps.size() && is_cased(cps[i + 1]);
      out += (before && !after) ? U'\u03c2' : U'\u03c3';
      continue;
    }
    out += lower_of(c);
  }
  return from_u32(out);
}

std::string py_title(std::string_view s) {
  std::u32string out;
  bool previous_cased = false;
  for (char32_t c : to_u32(s)) {
    out += previous_cased ? lower_of(c) : title_of(c);
    previous_cased = is_cased(c);
  }
  return from_u32(out);
}

std::string py_capitalize(std::string_view s) {
  std::u32string cps = to_u32(s);
  if (cps.empty()) return "";
  std::u32string out = title_of(cps[0]);
  out += to_u32(py_lower(from_u32(std::u32string_view(cps).substr(1))));
  return from_u32(out);
}

std::string py_replace(std::string_view s, std::string_view old, std::string_view replacement,
                       std::int64_t count) {
  std::string out;
  if (old.empty()) {
    std::u32string cps = to_u32(s);
    std::int64_t done = 0;
    for (std::size_t i = 0; i <= cps.size(); ++i) {
      if (count < 0 || done < count) {
        out += replacement;
        ++done;
      }
      if (i < cps.size()) out += from_u32(std::u32string_view(cps).substr(i, 1));
      check_string_size(out.size());
    }
    return out;
  }
  std::size_t pos = 0;
  std::int64_t done = 0;
  while (count < 0 || done < count) {
    std::size_t p = s.find(old, pos);
    if (p == std::string_view::npos) break;
    out += s.substr(pos, p - pos);
    out += replacement;
    check_string_size(out.size());
    pos = p + old.size();
    ++done;
  }
  out += s.substr(pos);
  check_string_size(out.size());
  return out;
}

std::int64_t py_count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return static_cast<std::int64_t>(to_u32(s).size()) + 1;
  std::int64_t n = 0;
  std::size_t pos = 0;
  while ((pos = s.find(sub, pos)) != std::string_view::npos) {
    ++n;
    pos += sub.size();
  }
  return n;
}

std::int64_t py_find(std::string_view s, std::string_view sub, bool from_right) {
  std::size_t p = from_right ? s.rfind(sub) : s.find(sub);
  if (p == std::string_view::npos) return -1;
  return static_cast<std::int64_t>(to_u32(s.substr(0, p)).size());
}

bool py_islower(std::string_view s) {
  bool any = false;
  for (char32_t c : to_u32(s)) {
    if (is_cased_upper(c)) return false;
    if (is_cased_lower(c)) any = true;
  }
  return any;
}

bool py_isupper(std::string_view s) {
  bool any = false;
  for (char32_t c : to_u32(s)) {
    if (is_cased_lower(c)) return false;
    if (is_cased_upper(c)) any = true;
  }
  return any;
}

}  // namespace xlacel::jinja
