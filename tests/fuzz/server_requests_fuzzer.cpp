// The request parsers of every generation endpoint (Chat Completions, completions, Anthropic's
// Messages and count_tokens, the Responses API) and of embeddings on any JSON body: each either
// gives a request or throws an ApiError naming a field, never anything else; the chat messages it
// makes are what chat templates read (objects with a string role and string content, or for a
// model that takes images, text and image parts, one image part per image taken, at most
// max_images of them), and an embeddings request has 1 to kMaxEmbeddingInputs inputs, none of
// them empty. The first byte picks the parser and (its sixes) whether the model takes images.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string_view>
#include <variant>
#include <vector>

#include "common/json_file.h"
#include "server/api_error.h"
#include "server/embeddings_request.h"
#include "server/messages_request.h"
#include "server/openai_request.h"
#include "server/responses_request.h"

namespace {

using xlacel::Json;
using xlacel::server::GenerationRequest;

constexpr std::size_t kMaxImages = 3;

// Text parts with string text and image parts; counts the image parts.
bool valid_parts(const Json& content, std::size_t& image_parts) {
  if (!content.is_array()) return false;
  for (const Json& part : content) {
    if (part == Json{{"type", "image"}}) {
      ++image_parts;
    } else if (!part.is_object() || part.size() != 2 || part.value("type", "") != "text" ||
               !part["text"].is_string()) {
      return false;
    }
  }
  return true;
}

void check_messages(const GenerationRequest& request) {
  if (request.endpoint != xlacel::server::Endpoint::kChat) return;
  if (!request.messages.is_array()) std::abort();
  std::size_t image_parts = 0;
  for (const Json& message : request.messages) {
    if (!message.is_object() || !message.contains("role") || !message["role"].is_string() ||
        !message.contains("content") ||
        !(message["content"].is_string() || valid_parts(message["content"], image_parts))) {
      std::abort();
    }
  }
  if (image_parts != request.images.size() || image_parts > kMaxImages) std::abort();
  for (const auto& image : request.images) {
    if (image.bytes.empty() || image.name.empty()) std::abort();
  }
}

void check_embeddings(const xlacel::server::EmbeddingsRequest& request) {
  using xlacel::server::kMaxEmbeddingInputs;
  if (request.inputs.empty() || request.inputs.size() > kMaxEmbeddingInputs) std::abort();
  std::vector<std::vector<float>> vectors;
  for (const auto& input : request.inputs) {
    const bool empty = std::visit([](const auto& value) { return value.empty(); }, input);
    if (empty) std::abort();
    vectors.push_back({1.0F, -2.5F});
  }
  (void)xlacel::server::embeddings_response(request, vectors, 1);
}

template <typename Parse>
void parse_or_refuse(Parse parse) {
  try {
    parse();
  } catch (const xlacel::server::ApiError&) {
  } catch (const std::exception&) {
    std::abort();  // anything but a 400 naming the field is a bug
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const Json body = Json::parse(std::string_view(reinterpret_cast<const char*>(data + 1), size - 1),
                                nullptr, false);
  if (body.is_discarded()) return 0;
  using namespace xlacel::server;
  const ContentOptions content{.images = (data[0] / 6) % 2 == 1, .max_images = kMaxImages};
  switch (data[0] % 6) {
    case 0:
      parse_or_refuse(
          [&] { check_messages(parse_generation_request(Endpoint::kChat, body, 1, content)); });
      break;
    case 1:
      parse_or_refuse([&] { parse_generation_request(Endpoint::kCompletion, body, 1, content); });
      break;
    case 2:
      parse_or_refuse([&] { check_messages(parse_messages_request(body, 1, content)); });
      break;
    case 3:
      parse_or_refuse([&] { check_messages(parse_count_tokens_request(body, content)); });
      break;
    case 4:
      parse_or_refuse(
          [&] { check_messages(parse_responses_request(body, 1, content).generation); });
      break;
    default:
      parse_or_refuse([&] { check_embeddings(parse_embeddings_request(body)); });
      break;
  }
  return 0;
}
