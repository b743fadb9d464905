#pragma once
// A chat kept across turns: the messages so far (an optional system message, the user's turns
// and the assistant's replies), rendered through the model's chat template at every turn. The
// rendered prompt of a turn starts with the previous turn's prompt and reply, so with the
// scheduler's prefix reuse only what is new is prefilled.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_file.h"
#include "engine/model_images.h"
#include "engine/model_text.h"
#include "engine/request.h"
#include "engine/scheduler.h"

namespace xlacel::engine {

// What one turn gave.
struct ChatTurn {
  std::vector<int32_t> prompt_ids;  // the conversation with the assistant's turn opened
  std::vector<int32_t> output_ids;  // the reply's tokens (an end-of-sequence id included)
  std::string reply;                // its text, as kept in the conversation
  FinishReason reason = FinishReason::kLength;
  std::string message;  // for people, e.g. "context full: ..."
  RequestStats stats;
};

class Conversation {
 public:
  // `system`: the system message; empty leaves it to the template (which may add a default).
  // `text` must outlive the conversation.
  Conversation(const ModelText& text, std::string system);

  // The messages so far, as the template gets them.
  const Json& messages() const { return messages_; }
  // Forgets every turn; the system message stays.
  void reset();

  // Adds the user's message, runs the conversation on `scheduler` until the reply is done
  // (`on_text` gets each piece of its text as it comes) and keeps the reply. Error, with the
  // conversation unchanged, when the prompt cannot be submitted (e.g. it does not fit the
  // context). `images` (a vision-language model's, prepared by ModelImages) go before the
  // message's text; every turn's prompt holds the images of all turns so far.
  ChatTurn reply(Scheduler& scheduler, std::string user, const RequestOptions& request,
                 const std::function<void(std::string_view)>& on_text,
                 const PreparedImages& images = {});

 private:
  const ModelText& text_;
  std::string system_;
  Json messages_;
  std::vector<float> image_pixels_;  // every image of the messages, in order
  std::vector<ImageLayout> image_layouts_;
};

}  // namespace xlacel::engine
