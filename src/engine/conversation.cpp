#include "engine/conversation.h"

#include "engine/chat_images.h"

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
  image_pixels_.clear();
  image_layouts_.clear();
}

ChatTurn Conversation::reply(Scheduler& scheduler, std::string user, const RequestOptions& request,
                             const std::function<void(std::string_view)>& on_text,
                             const PreparedImages& images) {
  Json messages = messages_;
  std::vector<ImageLayout> layouts = image_layouts_;
  RequestOptions options = request;
  messages.push_back(
      Json{{"role", "user"}, {"content", user_content(std::move(user), images.layouts.size())}});
  layouts.insert(layouts.end(), images.layouts.begin(), images.layouts.end());
  auto pixels = std::make_shared<std::vector<float>>(image_pixels_);
  if (images.pixels) pixels->insert(pixels->end(), images.pixels->begin(), images.pixels->end());
  if (!pixels->empty()) options.image_pixels = pixels;
  ChatTurn turn;
  turn.prompt_ids = text_.encode_chat(messages, Json::object(), nullptr, layouts);
  scheduler.submit(turn.prompt_ids, options, [&](const TokenEvent& event) {
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
  image_layouts_ = std::move(layouts);
  image_pixels_ = std::move(*pixels);
  return turn;
}

}  // namespace xlacel::engine
