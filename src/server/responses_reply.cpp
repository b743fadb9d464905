#include "server/responses_reply.h"

#include <fmt/format.h>

#include <utility>

#include "server/api_error.h"
#include "server/tool_calls.h"

namespace xlacel::server {

namespace {

// The text an item of `kind` grows: its content part's for messages and reasoning.
Json part_of(const Json& item) {
  if (item["type"] == "message") {
    return {{"type", "output_text"}, {"text", ""}, {"annotations", Json::array()}};
  }
  return {{"type", "reasoning_text"}, {"text", ""}};
}

}  // namespace

ResponsesReply::ResponsesReply(ResponseHeader header, Json echo, Choice prototype)
    : header_(std::move(header)), echo_(std::move(echo)), choice_(std::move(prototype)) {}

Json ResponsesReply::response(const char* status) const {
  Json response = echo_;
  response["id"] = header_.id;
  response["object"] = "response";
  response["created_at"] = header_.created;
  response["model"] = header_.model;
  response["status"] = status;
  response["error"] = Json();
  response["incomplete_details"] = Json();
  response["output"] = output_;
  response["usage"] = Json();
  return response;
}

void ResponsesReply::emit(Json event, std::string& out) {
  event["sequence_number"] = sequence_++;
  out += typed_sse_event(event);
}

void ResponsesReply::open(Item kind, Json item, std::string& out) {
  close(out);
  const std::size_t index = output_.size();
  emit({{"type", "response.output_item.added"}, {"output_index", index}, {"item", item}}, out);
  if (kind != Item::kFunctionCall) {
    emit({{"type", "response.content_part.added"},
          {"item_id", item["id"]},
          {"output_index", index},
          {"content_index", 0},
          {"part", part_of(item)}},
         out);
    item["content"] = Json::array({part_of(item)});
  }
  output_.push_back(std::move(item));
  open_ = kind;
}

void ResponsesReply::close(std::string& out) {
  if (open_ == Item::kNone) return;
  const std::size_t index = output_.size() - 1;
  Json& item = output_.back();
  item["status"] = "completed";
  const Json id = item["id"];
  if (open_ == Item::kFunctionCall) {
    emit({{"type", "response.function_call_arguments.done"},
          {"item_id", id},
          {"output_index", index},
          {"name", item["name"]},
          {"arguments", item["arguments"]}},
         out);
  } else {
    const Json& part = item["content"][0];
    Json done = {{"type", open_ == Item::kMessage ? "response.output_text.done"
                                                  : "response.reasoning_text.done"},
                 {"item_id", id},
                 {"output_index", index},
                 {"content_index", 0},
                 {"text", part["text"]}};
    if (open_ == Item::kMessage) done["logprobs"] = Json::array();
    emit(std::move(done), out);
    emit({{"type", "response.content_part.done"},
          {"item_id", id},
          {"output_index", index},
          {"content_index", 0},
          {"part", part}},
         out);
  }
  emit({{"type", "response.output_item.done"}, {"output_index", index}, {"item", item}}, out);
  open_ = Item::kNone;
}

void ResponsesReply::grow(Item kind, const std::string& text, std::string& out) {
  if (text.empty()) return;
  if (open_ != kind) {
    const std::string id =
        fmt::format("{}_{}_{}", kind == Item::kMessage ? "msg" : "rs", header_.id, output_.size());
    Json item = kind == Item::kMessage ? Json{{"type", "message"},
                                              {"id", id},
                                              {"status", "in_progress"},
                                              {"role", "assistant"},
                                              {"content", Json::array()}}
                                       : Json{{"type", "reasoning"},
                                              {"id", id},
                                              {"status", "in_progress"},
                                              {"summary", Json::array()},
                                              {"content", Json::array()}};
    open(kind, std::move(item), out);
  }
  Json& part = output_.back()["content"][0];
  part["text"] = part["text"].get<std::string>() + text;
  Json delta = {{"type", kind == Item::kMessage ? "response.output_text.delta"
                                                : "response.reasoning_text.delta"},
                {"item_id", output_.back()["id"]},
                {"output_index", output_.size() - 1},
                {"content_index", 0},
                {"delta", text}};
  if (kind == Item::kMessage) delta["logprobs"] = Json::array();
  emit(std::move(delta), out);
}

bool ResponsesReply::append(const engine::TokenEvent& event, std::size_t,
                            const std::string& cancel_message, std::string& out) {
  if (finished_) return true;
  if (!started_) {
    emit({{"type", "response.created"}, {"response", response("in_progress")}}, out);
    emit({{"type", "response.in_progress"}, {"response", response("in_progress")}}, out);
    started_ = true;
  }
  if (event.finished && event.reason == engine::FinishReason::kCancelled) {
    emit({{"type", "error"},
          {"code", "unavailable"},
          {"message", cancel_message},
          {"param", Json()}},
         out);
    finished_ = true;
    return true;
  }
  ReplyDelta delta = choice_.add(event);
  grow(Item::kReasoning, delta.reasoning, out);
  grow(Item::kMessage, delta.content, out);
  // OpenAI-shaped fragments (ToolReply): a call's first names it, later ones grow its arguments.
  for (const Json& fragment : delta.calls) {
    if (fragment.contains("id")) {
      open(Item::kFunctionCall,
           {{"type", "function_call"},
            {"id", fmt::format("fc_{}_{}", header_.id, output_.size())},
            {"call_id", fragment["id"]},
            {"name", fragment["function"]["name"]},
            {"arguments", ""},
            {"status", "in_progress"}},
           out);
    }
    const std::string arguments = fragment["function"].value("arguments", "");
    if (arguments.empty()) continue;
    Json& item = output_.back();
    item["arguments"] = item["arguments"].get<std::string>() + arguments;
    emit({{"type", "response.function_call_arguments.delta"},
          {"item_id", item["id"]},
          {"output_index", output_.size() - 1},
          {"delta", arguments}},
         out);
  }
  if (!event.finished) return false;
  close(out);
  const Json final = whole();
  emit({{"type", final["status"] == "completed" ? "response.completed" : "response.incomplete"},
        {"response", final}},
       out);
  finished_ = true;
  return true;
}

Json ResponsesReply::whole() const {
  const bool cut = choice_.reason == engine::FinishReason::kLength ||
                   choice_.reason == engine::FinishReason::kCapacity;
  Json response = this->response(cut ? "incomplete" : "completed");
  if (cut) response["incomplete_details"] = {{"reason", "max_output_tokens"}};
  const engine::RequestStats& stats = choice_.stats;
  response["usage"] = {
      {"input_tokens", stats.prompt_tokens},
      {"input_tokens_details", {{"cached_tokens", stats.cached_tokens}, {"cache_write_tokens", 0}}},
      {"output_tokens", stats.output_tokens},
      {"output_tokens_details", {{"reasoning_tokens", choice_.reasoning_tokens}}},
      {"total_tokens", stats.prompt_tokens + stats.output_tokens}};
  return response;
}

Json ResponsesReply::assistant_turn() const {
  Json turn = {{"role", "assistant"}, {"content", choice_.text}};
  if (!choice_.reasoning.empty()) turn["reasoning_content"] = choice_.reasoning;
  if (choice_.tools && !choice_.tools->calls().empty()) {
    turn["tool_calls"] = template_tool_calls(Json(choice_.tools->calls()), "output");
  }
  return turn;
}

}  // namespace xlacel::server
