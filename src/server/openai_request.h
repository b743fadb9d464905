#pragma once
// The body of POST /v1/chat/completions and /v1/completions, checked field by field: every
// problem is an ApiError naming the field, before anything reaches the engine. Options xlacel
// does not implement are refused with a 400 rather than silently ignored. Sampling fields
// (temperature, top_p, top_k, min_p, frequency_penalty, presence_penalty, logit_bias, seed) and
// logprobs (chat: `logprobs` + `top_logprobs`; completions: `logprobs` as a count) land in
// `sampling`; token ids of logit_bias are checked against the vocabulary by the server.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/json_file.h"
#include "engine/model_images.h"
#include "engine/sampler.h"
#include "server/response_format.h"
#include "server/tool_calls.h"

namespace xlacel::server {

enum class Endpoint { kChat, kCompletion };

inline constexpr int64_t kMaxChoices = 128;  // `n` at most, as OpenAI

// Images in requests, as each API sends them: Chat Completions' {"type": "image_url",
// "image_url": {"url": "data:image/png;base64,..."}} parts, the Responses API's {"type":
// "input_image", "image_url": "data:..."} and Anthropic's {"type": "image", "source": {"type":
// "base64", "media_type", "data"}} blocks. Each parser hands its image parts to one
// ImageCollector, which checks them (data: URLs only: remote images are not fetched; at most
// max_images; a model without a vision tower takes none), keeps their bytes in order, and gives
// the {"type": "image"} part chat templates render as the model's image placeholder. Every
// problem is a 400 naming the part as its API names it ("messages[0].content[1]",
// "messages.0.content.1", "input[0].content[1]"); the server decodes and preprocesses the images
// later, on the HTTP handler's thread.
inline constexpr std::size_t kDefaultMaxImages = 8;  // serve --max-images-per-request

// What the served model takes in message content.
struct ContentOptions {
  bool images = false;  // the model has a vision tower: image parts are taken
  std::size_t max_images = kDefaultMaxImages;
};

class ImageCollector {
 public:
  explicit ImageCollector(ContentOptions options) : options_(options) {}

  // An image given as a URL (`url`: a string, the part's field `where`): a data: URL with
  // base64 data. Returns the template's image part.
  Json url(const Json& url, const std::string& where);
  // An image given as base64 data and its media type (Anthropic's base64 source).
  Json base64(const std::string& media_type, const std::string& data, const std::string& where);
  // A 400 naming `where` unless the model takes images and the request has room for one more.
  void check_room(const std::string& where) const;

  std::vector<engine::ImageFile> take() { return std::move(images_); }

 private:
  Json add(const std::string& where, std::vector<uint8_t> bytes);

  ContentOptions options_;
  std::vector<engine::ImageFile> images_;
};

// A message's content as a parser reads it, part by part: for the template, its text joined
// into one string (by `separator`) when it has no image, else its parts in order ({"type":
// "text", "text"} and the collector's {"type": "image"}).
class ContentParts {
 public:
  explicit ContentParts(std::string separator = {}) : separator_(std::move(separator)) {}

  void text(const std::string& text);
  void image(Json part);
  Json take();

 private:
  std::string separator_;
  std::string text_;
  Json parts_ = Json::array();
  bool images_ = false;
};

struct GenerationRequest {
  Endpoint endpoint = Endpoint::kChat;
  std::string model;
  // chat: [{"role", "content": string}], content parts joined into one string (a user message
  // with images: its parts, text and {"type": "image"}); assistant tool_calls and tool messages
  // as templates read them (server/tool_calls.h)
  Json messages;
  // chat: the images of the messages' image parts, in order, each named by its part's field
  // (ImageCollector)
  std::vector<engine::ImageFile> images;
  ToolOptions tools;  // chat: tools, tool_choice, parallel_tool_calls
  // chat: variables the chat template also sees (e.g. {"enable_thinking": false})
  Json chat_template_kwargs = Json::object();
  // chat: whether the reply's thinking comes apart (reasoning_format "auto") or stays inline
  // ("none"); unset: as the server was started (--reasoning-format)
  std::optional<bool> split_reasoning;
  // completions: the prompt as text, or as token ids
  std::variant<std::string, std::vector<int32_t>> prompt;
  int64_t max_tokens = 0;  // 0: until the context is full
  engine::SamplingOptions sampling;
  // Choices to generate; choice i samples with seed sampling.seed + i (wrapping), so a request
  // with n = 2 and seed s gives the tokens of two requests with seeds s and s + 1.
  int64_t n = 1;
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  ResponseFormat response_format;
};

// temperature (1 when absent, at most `max_temperature`), top_p and top_k: the sampling fields
// OpenAI's and Anthropic's APIs share.
void parse_basic_sampling(const Json& body, double max_temperature,
                          engine::SamplingOptions& sampling);
// A 400 naming the field when the options are invalid together (SamplingOptions::validate).
void check_sampling(const engine::SamplingOptions& sampling);

// How hard a reasoning model should think (`field`: reasoning_effort, reasoning.effort,
// output_config.effort): none, minimal, low, medium, high, xhigh or max. It reaches the template
// as `reasoning_effort` (gpt-oss's read it), and "none" also as `enable_thinking: false` (Qwen
// 3's, SmolLM3's), unless the request's chat_template_kwargs set them.
void apply_reasoning_effort(const Json& effort, const std::string& field, Json& template_kwargs);

// `default_seed` is used when the request names none (OpenAI samples differently each time);
// `content`: whether the model takes images.
GenerationRequest parse_generation_request(Endpoint endpoint, const Json& body,
                                           uint64_t default_seed,
                                           const ContentOptions& content = {});

}  // namespace xlacel::server
