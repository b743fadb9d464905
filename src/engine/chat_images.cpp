#include "engine/chat_images.h"

#include <fmt/format.h>

#include <fstream>
#include <iterator>
#include <string_view>

#include "common/base64.h"
#include "common/error.h"

namespace xlacel::engine {

namespace {

bool is_image_part(const Json& part) {
  if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) return false;
  const std::string& type = part["type"].get_ref<const std::string&>();
  return type == "image_url" || type == "image";
}

// The part's URL or path: image_url.url, image_url as a string, or (HF's form) url / path.
std::string image_location(const Json& part, const std::string& where) {
  if (part.contains("image_url")) {
    const Json& url = part["image_url"];
    if (url.is_string()) return url.get<std::string>();
    if (url.is_object() && url.contains("url") && url["url"].is_string()) {
      return url["url"].get<std::string>();
    }
    fail(where, "image_url needs a string 'url'");
  }
  for (const char* key : {"url", "path"}) {
    if (part.contains(key) && part[key].is_string()) return part[key].get<std::string>();
  }
  fail(where, "an image part needs an image_url with a 'url'");
}

// A data: URL's bytes ("data:image/png;base64,<data>").
std::vector<uint8_t> data_url_bytes(std::string_view url, const std::string& where) {
  const std::size_t comma = url.find(',');
  if (comma == std::string_view::npos) fail(where, "a data: URL needs a ',' before its data");
  const std::string_view header = url.substr(0, comma);
  if (!header.ends_with(";base64")) fail(where, "a data: URL of an image must be base64-encoded");
  std::optional<std::vector<uint8_t>> bytes = base64_decode(url.substr(comma + 1));
  if (!bytes) fail(where, "the data: URL's base64 is malformed");
  return std::move(*bytes);
}

ImageFile image_of(const std::string& location, const ImageSources& sources,
                   const std::string& where) {
  if (location.starts_with("data:")) return {where, data_url_bytes(location, where)};
  if (location.starts_with("http://") || location.starts_with("https://")) {
    fail(where,
         "images are not fetched from URLs; send the image as a data: URL "
         "(data:image/png;base64,...)");
  }
  if (!sources.local_files) {
    fail(where, "an image must be a data: URL (data:image/png;base64,...)");
  }
  return read_image_file(location.starts_with("file://") ? location.substr(7) : location);
}

}  // namespace

Json user_content(std::string text, std::size_t images) {
  if (images == 0) return text;
  Json content = Json::array();
  for (std::size_t i = 0; i < images; ++i) content.push_back({{"type", "image"}});
  content.push_back({{"type", "text"}, {"text", std::move(text)}});
  return content;
}

bool has_image_parts(const Json& messages) {
  if (!messages.is_array()) return false;
  for (const Json& message : messages) {
    if (!message.is_object() || !message.contains("content") || !message["content"].is_array()) {
      continue;
    }
    for (const Json& part : message["content"]) {
      if (is_image_part(part)) return true;
    }
  }
  return false;
}

std::vector<ImageFile> take_image_parts(Json& messages, const ImageSources& sources) {
  std::vector<ImageFile> images;
  if (!messages.is_array()) return images;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    Json& message = messages[i];
    if (!message.is_object() || !message.contains("content") || !message["content"].is_array()) {
      continue;
    }
    Json& content = message["content"];
    for (std::size_t j = 0; j < content.size(); ++j) {
      if (!is_image_part(content[j])) continue;
      const std::string where = fmt::format("messages[{}].content[{}]", i, j);
      images.push_back(image_of(image_location(content[j], where), sources, where));
      content[j] = Json{{"type", "image"}};
    }
  }
  return images;
}

ImageFile read_image_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open the image");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  return {path, std::move(bytes)};
}

}  // namespace xlacel::engine
