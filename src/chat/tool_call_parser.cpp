#include "chat/tool_call_parser.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <utility>

#include "common/json_file.h"

namespace xlacel {

namespace {

constexpr std::size_t kIncomplete = std::string_view::npos;
constexpr std::size_t kInvalid = std::string_view::npos - 1;

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

std::size_t skip_space(std::string_view text, std::size_t at) {
  while (at < text.size() && is_space(text[at])) ++at;
  return at;
}

// Where the JSON string starting at `at` (its opening quote) ends, past the closing quote.
std::size_t string_end(std::string_view text, std::size_t at) {
  for (std::size_t i = at + 1; i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;
    } else if (text[i] == '"') {
      return i + 1;
    }
  }
  return kIncomplete;
}

// Where the JSON value starting at `at` ends: brackets are matched outside strings, scalars run
// to the next delimiter. It only finds the extent; Json::parse of the span validates it.
std::size_t value_end(std::string_view text, std::size_t at) {
  if (at >= text.size()) return kIncomplete;
  const char first = text[at];
  if (first == '"') return string_end(text, at);
  if (first == '{' || first == '[') {
    int depth = 0;
    for (std::size_t i = at; i < text.size(); ++i) {
      const char c = text[i];
      if (c == '"') {
        i = string_end(text, i);
        if (i == kIncomplete) return kIncomplete;
        --i;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) return i + 1;
      }
    }
    return kIncomplete;
  }
  if (first == '-' || (first >= '0' && first <= '9') || first == 't' || first == 'f' ||
      first == 'n') {
    for (std::size_t i = at; i < text.size(); ++i) {
      const char c = text[i];
      if (c == ',' || c == '}' || c == ']' || is_space(c)) return i;
    }
    return kIncomplete;
  }
  return kInvalid;
}

// The text of a call object's arguments: an object as written, a string holding an object's
// JSON, or "{}" when absent. nullopt when the object is not a call.
std::optional<ToolCall> call_from_object(std::string_view object) {
  std::optional<std::string> name;
  std::optional<std::string> arguments;
  std::size_t at = skip_space(object, 1);
  while (at < object.size() && object[at] == '"') {
    const std::size_t key_end = string_end(object, at);
    const std::string key = Json::parse(object.substr(at, key_end - at)).get<std::string>();
    at = skip_space(object, skip_space(object, key_end) + 1);  // past ':'
    const std::size_t end = value_end(object, at);
    const std::string_view value = object.substr(at, end - at);
    if (key == "name") {
      const Json parsed = Json::parse(value);
      if (!parsed.is_string() || parsed.get<std::string>().empty()) return std::nullopt;
      name = parsed.get<std::string>();
    } else if (key == "arguments" || key == "parameters") {
      if (value.front() == '{') {
        arguments = std::string(value);
      } else if (value.front() == '"') {
        // Some models write the arguments as a string of JSON, as OpenAI's API carries them.
        std::string text = Json::parse(value).get<std::string>();
        const Json inner = Json::parse(text, nullptr, false);
        if (!inner.is_object()) return std::nullopt;
        arguments = std::move(text);
      } else {
        return std::nullopt;
      }
    }
    at = skip_space(object, end);
    if (at < object.size() && object[at] == ',') at = skip_space(object, at + 1);
  }
  if (!name) return std::nullopt;
  return ToolCall{*name, arguments.value_or("{}")};
}

// The calls in a complete JSON value: one object, or (list syntax) an array of them. nullopt
// when it is not valid JSON or holds anything else.
std::optional<std::vector<ToolCall>> calls_from_value(std::string_view value, bool list) {
  const Json parsed = Json::parse(value, nullptr, false);
  if (parsed.is_discarded()) return std::nullopt;
  std::vector<ToolCall> calls;
  if (parsed.is_object()) {
    auto call = call_from_object(value);
    if (!call) return std::nullopt;
    calls.push_back(std::move(*call));
    return calls;
  }
  if (!list || !parsed.is_array() || parsed.empty()) return std::nullopt;
  std::size_t at = skip_space(value, 1);
  while (at < value.size() && value[at] == '{') {
    const std::size_t end = value_end(value, at);
    auto call = call_from_object(value.substr(at, end - at));
    if (!call) return std::nullopt;
    calls.push_back(std::move(*call));
    at = skip_space(value, end);
    if (at < value.size() && value[at] == ',') at = skip_space(value, at + 1);
  }
  if (calls.size() != parsed.size()) return std::nullopt;
  return calls;
}

// Whether `name` may be (the start of) a function name: OpenAI's rule, at most 64 letters,
// digits, '_' or '-'.
bool function_name_so_far(std::string_view name) {
  return name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
         });
}

// The JSON string at `at` (its opening quote) decoded, when it is complete and valid.
std::optional<std::string> string_at(std::string_view text, std::size_t at) {
  if (at >= text.size() || text[at] != '"') return std::nullopt;
  const std::size_t end = string_end(text, at);
  if (end == kIncomplete) return std::nullopt;
  const Json parsed = Json::parse(text.substr(at, end - at), nullptr, false);
  if (!parsed.is_string()) return std::nullopt;
  return parsed.get<std::string>();
}

// `at` past the whitespace, then past `c` and the whitespace after it; npos when `c` is not next.
std::size_t past(std::string_view text, std::size_t at, char c) {
  at = skip_space(text, at);
  return at < text.size() && text[at] == c ? skip_space(text, at + 1) : std::string_view::npos;
}

// The object at `at` as far as it is written, up to its end when complete.
std::string object_so_far(std::string_view text, std::size_t at) {
  const std::size_t end = value_end(text, at);
  return std::string(text.substr(at, (end == kIncomplete ? text.size() : end) - at));
}

// Whether `text` is a proper, non-empty prefix of `whole`.
bool is_proper_prefix(std::string_view text, std::string_view whole) {
  return !text.empty() && text.size() < whole.size() && whole.starts_with(text);
}

// How many of the last bytes of `text` could begin `marker`.
std::size_t marker_prefix_at_end(std::string_view text, std::string_view marker) {
  for (std::size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n) {
    if (marker.starts_with(text.substr(text.size() - n))) return n;
  }
  return 0;
}

}  // namespace

ToolCallParser::ToolCallParser(ToolCallSyntax syntax, bool parallel, bool constrained)
    : syntax_(std::move(syntax)),
      parallel_(parallel),
      constrained_(constrained),
      mode_(syntax_.start.empty() ? Mode::kStart : Mode::kText) {}

ToolCallUpdate ToolCallParser::feed(std::string_view text) {
  buffer_ += text;
  ToolCallUpdate out;
  advance(false, out);
  if (constrained_ && mode_ == Mode::kCallBody) out.partial = call_so_far();
  return out;
}

ToolCallUpdate ToolCallParser::finish() {
  ToolCallUpdate out;
  advance(true, out);
  // Whitespace around calls is dropped; a reply without calls keeps all of its text.
  if (calls_ == 0) out.content += pending_space_;
  pending_space_.clear();
  return out;
}

void ToolCallParser::advance(bool final, ToolCallUpdate& out) {
  while (step(final, out)) {
  }
}

bool ToolCallParser::step(bool final, ToolCallUpdate& out) {
  switch (mode_) {
    case Mode::kStart:
      return step_start(final);
    case Mode::kText:
      return step_text(final, out);
    case Mode::kPlain:
      add_content(std::string_view(buffer_).substr(pos_), out);
      pos_ = buffer_.size();
      return false;
    case Mode::kCallBody:
      return step_call_body(final, out);
    case Mode::kAfterCall:
      return step_after_call(final);
  }
  return false;
}

bool ToolCallParser::step_start(bool final) {
  const std::string_view text(buffer_);
  const std::size_t first = skip_space(text, pos_);
  if (first == text.size()) {
    if (final) mode_ = Mode::kPlain;
    return final;
  }
  call_start_ = pos_;
  for (const std::string& marker : syntax_.special_markers) {
    const std::string_view rest = text.substr(first);
    if (rest.starts_with(marker)) {
      pos_ = first + marker.size();
      mode_ = Mode::kCallBody;
      return true;
    }
    if (is_proper_prefix(rest, marker) && !final) return false;
  }
  mode_ = text[first] == '{' ? Mode::kCallBody : Mode::kPlain;
  return true;
}

bool ToolCallParser::step_text(bool final, ToolCallUpdate& out) {
  const std::string_view text(buffer_);
  const std::size_t marker = text.find(syntax_.start, pos_);
  if (marker != std::string_view::npos) {
    add_content(text.substr(pos_, marker - pos_), out);
    call_start_ = marker;
    pos_ = marker + syntax_.start.size();
    mode_ = Mode::kCallBody;
    return true;
  }
  const std::size_t held = final ? 0 : marker_prefix_at_end(text.substr(pos_), syntax_.start);
  add_content(text.substr(pos_, text.size() - held - pos_), out);
  pos_ = text.size() - held;
  return false;
}

bool ToolCallParser::step_call_body(bool final, ToolCallUpdate& out) {
  const std::string_view text(buffer_);
  if (!syntax_.name_end.empty()) return step_named_call(final, out);
  const std::size_t at = skip_space(text, pos_);
  const std::size_t end = value_end(text, at);
  if (end == kIncomplete && !final) return false;
  const bool object = at < text.size() && text[at] == '{';
  const bool list = at < text.size() && text[at] == '[' && syntax_.array_body;
  std::optional<std::vector<ToolCall>> calls;
  if (end != kIncomplete && end != kInvalid && (object || list)) {
    calls = calls_from_value(text.substr(at, end - at), syntax_.array_body);
  }
  if (!calls) {
    fall_back(out);
    return true;
  }
  for (ToolCall& call : *calls) add_call(std::move(call), out);
  pos_ = end;
  mode_ = Mode::kAfterCall;
  return true;
}

bool ToolCallParser::step_named_call(bool final, ToolCallUpdate& out) {
  const std::string_view text(buffer_);
  const std::size_t name_at = skip_space(text, pos_);
  const std::size_t separator = text.find(syntax_.name_end, name_at);
  std::string_view name = text.substr(name_at, separator - name_at);
  if (separator == std::string_view::npos) {
    name.remove_suffix(marker_prefix_at_end(name, syntax_.name_end));  // "[AR" may be "[ARGS]"
  }
  if (!function_name_so_far(name) || (separator == std::string_view::npos && final)) {
    fall_back(out);
    return true;
  }
  if (separator == std::string_view::npos) return false;
  const std::size_t at = skip_space(text, separator + syntax_.name_end.size());
  const std::size_t end = value_end(text, at);
  if (end == kIncomplete && !final) return false;
  const bool object = !name.empty() && end != kIncomplete && end != kInvalid && text[at] == '{' &&
                      Json::parse(text.substr(at, end - at), nullptr, false).is_object();
  if (!object) {
    fall_back(out);
    return true;
  }
  add_call({std::string(name), std::string(text.substr(at, end - at))}, out);
  pos_ = end;
  mode_ = Mode::kAfterCall;
  return true;
}

bool ToolCallParser::step_after_call(bool final) {
  const std::string_view text(buffer_);
  const std::size_t at = skip_space(text, pos_);
  if (at == text.size() && !final) return false;
  const std::string_view rest = text.substr(at);
  after_call_ = true;
  if (!syntax_.end.empty()) {
    if (rest.starts_with(syntax_.end)) {
      pos_ = at + syntax_.end.size();
    } else if (is_proper_prefix(rest, syntax_.end) && !final) {
      return false;
    }
    // A missing end marker is forgiven: the call itself was complete.
    mode_ = Mode::kText;
    return true;
  }
  if (!syntax_.start.empty()) {
    mode_ = Mode::kText;
    return true;
  }
  // Bare JSON: calls joined by ';' (Llama 3), or text after them.
  if (!rest.empty() && (rest.front() == ';' || rest.front() == '{')) {
    call_start_ = at;
    pos_ = rest.front() == ';' ? at + 1 : at;
    mode_ = Mode::kCallBody;
    return true;
  }
  mode_ = Mode::kPlain;
  return true;
}

void ToolCallParser::fall_back(ToolCallUpdate& out) {
  mode_ = Mode::kPlain;
  if (std::optional<ToolCall> call = constrained_ ? call_so_far() : std::nullopt) {
    // Cut off (or, against its grammar, malformed) after its partial may have been streamed:
    // what was written of it is the call.
    add_call(std::move(*call), out);
    pos_ = buffer_.size();
    return;
  }
  pos_ = call_start_;
}

std::optional<ToolCall> ToolCallParser::call_so_far() const {
  if (!parallel_ && calls_ > 0) return std::nullopt;  // dropped when complete
  const std::string_view text(buffer_);
  std::size_t at = skip_space(text, pos_);
  if (!syntax_.name_end.empty()) {
    const std::size_t separator = text.find(syntax_.name_end, at);
    if (separator == std::string_view::npos) return std::nullopt;
    const std::string_view name = text.substr(at, separator - at);
    if (name.empty() || !function_name_so_far(name)) return std::nullopt;
    at = skip_space(text, separator + syntax_.name_end.size());
    if (at >= text.size() || text[at] != '{') return std::nullopt;
    return ToolCall{std::string(name), object_so_far(text, at)};
  }
  if (syntax_.array_body) at = past(text, at, '[');  // the list's first call
  if (at == std::string_view::npos || (at = past(text, at, '{')) == std::string_view::npos ||
      string_at(text, at) != "name") {
    return std::nullopt;
  }
  at = past(text, string_end(text, at), ':');
  if (at == std::string_view::npos) return std::nullopt;
  std::optional<std::string> name = string_at(text, at);
  if (!name || name->empty()) return std::nullopt;
  at = past(text, string_end(text, at), ',');
  if (at == std::string_view::npos) return std::nullopt;
  const std::optional<std::string> key = string_at(text, at);
  if (key != "arguments" && key != "parameters") return std::nullopt;
  at = past(text, string_end(text, at), ':');
  if (at == std::string_view::npos || at >= text.size() || text[at] != '{') return std::nullopt;
  return ToolCall{std::move(*name), object_so_far(text, at)};
}

void ToolCallParser::add_content(std::string_view text, ToolCallUpdate& out) {
  if (after_call_) {
    const std::size_t first = skip_space(text, 0);
    if (first == text.size()) return;
    text.remove_prefix(first);
    after_call_ = false;
  }
  std::size_t last = text.size();
  while (last > 0 && is_space(text[last - 1])) --last;
  if (last == 0) {
    pending_space_ += text;
    return;
  }
  out.content += pending_space_;
  out.content += text.substr(0, last);
  pending_space_ = std::string(text.substr(last));
}

void ToolCallParser::add_call(ToolCall call, ToolCallUpdate& out) {
  if (!parallel_ && calls_ > 0) return;
  ++calls_;
  pending_space_.clear();  // the whitespace before a call is not content
  out.calls.push_back(std::move(call));
}

}  // namespace xlacel
