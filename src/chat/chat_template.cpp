#include "chat/chat_template.h"

#include "chat/jinja_ast.h"
#include "chat/jinja_builtins.h"
#include "chat/jinja_interpreter.h"
#include "chat/jinja_parser.h"
#include "common/error.h"

namespace xlacel {
namespace {

using jinja::DictData;
using jinja::Value;

// transformers' _alias_reasoning_fields: {"thinking": r, **message, "reasoning_content": r}.
Value alias_reasoning(const Value& message) {
  if (!message.is_dict()) return message;
  const DictData& d = message.dict_data();
  const Value* reasoning = nullptr;
  for (const char* key : {"reasoning_content", "thinking", "reasoning"}) {
    const Value* v = d.find(Value::string(key));
    if (v && !v->is_none()) {
      reasoning = v;
      break;
    }
  }
  if (!reasoning) return message;
  DictData out;
  out.set(Value::string("thinking"), *reasoning);
  for (const auto& [k, v] : d.entries) out.set(k, v);
  out.set(Value::string("reasoning_content"), *reasoning);
  return Value::dict(std::move(out));
}

}  // namespace

ChatTemplate::ChatTemplate(std::string source, std::string where)
    : source_(std::move(source)), where_(std::move(where)) {
  template_ = std::make_unique<jinja::Template>(jinja::parse(source_, where_));
}

ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;

std::string ChatTemplate::render(const Json& messages, const ChatTemplateOptions& options) const {
  if (!messages.is_array()) fail(where_, "messages must be a JSON array");
  if (!options.special_tokens.is_object() || !options.extra_context.is_object()) {
    fail(where_, "special_tokens and extra_context must be JSON objects");
  }
  DictData vars;
  try {
    std::vector<Value> chat;
    for (const Json& message : messages) {
      if (!message.is_object())
        fail(where_, "chat messages must be objects, got {}", message.dump());
      chat.push_back(alias_reasoning(jinja::from_json(message)));
    }
    vars.set(Value::string("messages"), Value::list(std::move(chat)));
    Value tools = Value::none(), documents = Value::none();
    if (options.extra_context.contains("tools")) {
      tools = jinja::from_json(options.extra_context["tools"]);
    }
    if (options.extra_context.contains("documents")) {
      documents = jinja::from_json(options.extra_context["documents"]);
    }
    vars.set(Value::string("tools"), tools);
    vars.set(Value::string("documents"), documents);
    vars.set(Value::string("add_generation_prompt"), Value::boolean(options.add_generation_prompt));
    for (const auto& [key, value] : options.special_tokens.items()) {
      vars.set(Value::string(key), jinja::from_json(value));
    }
    for (const auto& [key, value] : options.extra_context.items()) {
      if (key == "tools" || key == "documents") continue;
      if (key == "messages" || key == "add_generation_prompt") {
        fail(where_, "extra_context must not set '{}'", key);
      }
      vars.set(Value::string(key), jinja::from_json(value));
    }
  } catch (const jinja::RuntimeError& e) {
    fail(where_, "{}", e.what());
  }
  jinja::Interpreter interpreter(where_, jinja::Limits{});
  return interpreter.render(*template_, jinja::make_globals(), vars);
}

}  // namespace xlacel
