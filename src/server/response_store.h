#pragma once
// The responses /v1/responses stored (`store`, the default): each response object, for GET and
// DELETE /v1/responses/{id}, and its conversation (the messages it was given, as templates read
// them, and its reply), which a request naming it as `previous_response_id` continues. Kept in
// memory, at most `capacity` of them: the least recently used goes first. Thread-safe.
#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/json_file.h"
#include "engine/model_images.h"

namespace xlacel::server {

struct StoredResponse {
  Json response;      // the response object
  Json conversation;  // the messages, without the instructions, and the reply as the last one
  // The images of the conversation's image parts, in order (shared: not copied on get()).
  std::shared_ptr<const std::vector<engine::ImageFile>> images;
};

class ResponseStore {
 public:
  explicit ResponseStore(std::size_t capacity) : capacity_(capacity) {}

  void put(const std::string& id, StoredResponse stored);
  // The response (now the most recently used), or nullopt when unknown or evicted.
  std::optional<StoredResponse> get(const std::string& id);
  bool erase(const std::string& id);

 private:
  using Entry = std::pair<std::string, StoredResponse>;
  std::size_t capacity_;
  std::mutex mutex_;
  std::list<Entry> entries_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

}  // namespace xlacel::server
