#pragma once
// The images of chat messages as clients send them: OpenAI's content parts
// {"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}} (the url may also be
// given as a plain string), and in files the CLI reads, local paths ({"type": "image", "path":
// "photo.jpg"} or an image_url naming a file). Each is taken out of the messages and replaced by
// {"type": "image"}, the part chat templates render as the model's image placeholder.
#include <string>
#include <vector>

#include "common/json_file.h"
#include "engine/model_images.h"

namespace xlacel::engine {

struct ImageSources {
  // Local files (the CLI); a server takes data: URLs only.
  bool local_files = false;
};

// The images of `messages`, in the order the template meets them, after replacing their parts
// as above. Error "messages[i].content[j]: <problem>" for a part that is malformed or names an
// image that cannot be read from the allowed sources (an http(s) URL, a file for a server).
std::vector<ImageFile> take_image_parts(Json& messages, const ImageSources& sources);

// A user message's content: `text` after `images` image parts ({"type": "image"}, as
// take_image_parts leaves them), as chat templates place them; the plain string without images.
Json user_content(std::string text, std::size_t images);

// Whether any message has an image part (before take_image_parts).
bool has_image_parts(const Json& messages);

// One image file read from disk; Error naming the path when it cannot be read.
ImageFile read_image_file(const std::string& path);

}  // namespace xlacel::engine
