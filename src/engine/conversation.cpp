#include "engine/conversation.h"

namespace xlacel::engine {

namespace {

Json message(std::string_view role, std::string content) {
  return Json{{"role", role}, {"content", std::move(content)}};
}

}  // namespace

Conversation::Conversation(const ModelText& text, std::string system)
    : text_(text), system_(std::move(system)) {
  reset();
}

void Conversation::reset() {
  messages_ = Json::array();
  if (!system_.empty()) messages_.push_back(message("system", system_));
}

ChatTurn Conversation::reply(Scheduler& scheduler, std::string user, const RequestOptions& request,
                             const std::function<void(std::string_view)>& on_text) {
  Json messages = messages_;
  messages.push_back(message("user", std::move(user)));
  ChatTurn turn;
  turn.prompt_ids = text_.encode_chat(messages, Json::object());
  scheduler.submit(turn.prompt_ids, request, [&](const TokenEvent& event) {
    if (event.token >= 0) turn.output_ids.push_back(event.token);
    turn.reply += event.text;
    if (on_text && !event.text.empty()) on_text(event.text);
    if (event.finished) {
      turn.reason = event.reason;
      turn.message = event.message;
      turn.stats = event.stats;
    }
  });
  scheduler.run_until_idle();
  messages.push_back(message("assistant", turn.reply));
  messages_ = std::move(messages);
  return turn;
}

}  // namespace xlacel::engine
