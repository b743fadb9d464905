#pragma once
// Hands one request's token events (those of each of its choices, tagged with the choice) from
// the stepping thread to the HTTP thread answering it.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <vector>

#include "engine/request.h"

namespace xlacel::server {

struct ChoiceEvent {
  std::size_t choice = 0;
  engine::TokenEvent event;
};

class EventStream {
 public:
  void push(std::size_t choice, const engine::TokenEvent& event) {
    std::lock_guard lock(mutex_);
    events_.push_back({choice, event});
    ready_.notify_one();
  }

  // Moves every queued event into `out`, waiting up to `timeout` for the first; false when
  // none came.
  bool pop_all(std::vector<ChoiceEvent>& out, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    if (!ready_.wait_for(lock, timeout, [this] { return !events_.empty(); })) return false;
    out.assign(std::make_move_iterator(events_.begin()), std::make_move_iterator(events_.end()));
    events_.clear();
    return true;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<ChoiceEvent> events_;
};

}  // namespace xlacel::server
