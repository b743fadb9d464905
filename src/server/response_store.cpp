#include "server/response_store.h"

#include <utility>

namespace xlacel::server {

void ResponseStore::put(const std::string& id, StoredResponse stored) {
  std::lock_guard lock(mutex_);
  if (auto known = index_.find(id); known != index_.end()) {
    entries_.erase(known->second);
    index_.erase(known);
  }
  entries_.emplace_front(id, std::move(stored));
  index_[id] = entries_.begin();
  while (entries_.size() > capacity_) {
    index_.erase(entries_.back().first);
    entries_.pop_back();
  }
}

std::optional<StoredResponse> ResponseStore::get(const std::string& id) {
  std::lock_guard lock(mutex_);
  auto known = index_.find(id);
  if (known == index_.end()) return std::nullopt;
  entries_.splice(entries_.begin(), entries_, known->second);
  return known->second->second;
}

bool ResponseStore::erase(const std::string& id) {
  std::lock_guard lock(mutex_);
  auto known = index_.find(id);
  if (known == index_.end()) return false;
  entries_.erase(known->second);
  index_.erase(known);
  return true;
}

}  // namespace xlacel::server
