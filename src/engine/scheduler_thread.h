#pragma once
// Drives a Scheduler from its own thread, for callers that submit from many threads and wait
// for events (the HTTP server): it steps while there is work and sleeps otherwise, and it
// bounds how many requests may wait for a slot: at most slots + max_waiting are in the system.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "common/error.h"
#include "engine/request.h"
#include "engine/scheduler.h"

namespace xlacel::engine {

// submit() when every slot is taken and `max_waiting` requests wait already.
class QueueFull : public Error {
 public:
  using Error::Error;
};

class SchedulerThread {
 public:
  // `on_step` (may be empty) hears every step that did work, on the stepping thread.
  SchedulerThread(Scheduler& scheduler, std::size_t max_waiting,
                  std::function<void(const StepReport&)> on_step = {});
  ~SchedulerThread();  // stops (cancelling what is left) and joins
  SchedulerThread(const SchedulerThread&) = delete;
  SchedulerThread& operator=(const SchedulerThread&) = delete;

  // Scheduler::submit, refused with QueueFull when the waiting queue is full. The callback
  // runs on the stepping thread.
  uint64_t submit(std::vector<int32_t> prompt, const RequestOptions& options,
                  EventCallback on_event);
  // Scheduler::submit_choices (the choices of one API request, prefilled once): all of them, or
  // none with QueueFull when they do not all fit.
  std::vector<uint64_t> submit_all(const std::vector<int32_t>& prompt,
                                   const std::vector<RequestOptions>& options,
                                   const std::function<EventCallback(std::size_t)>& on_event);
  void cancel(uint64_t request);
  // Scheduler::submit_slot_action, waiting here for its result (kFailed once the thread stopped).
  SlotActionResult slot_action(SlotAction action);
  // Cancels every request submitted so far that has not finished.
  void cancel_all();
  // Cancels what is left, steps until the scheduler is idle, and ends the thread.
  void stop();

  std::size_t waiting() const { return scheduler_.waiting(); }
  std::size_t running() const { return scheduler_.running(); }

 private:
  void run();
  // QueueFull unless `count` more requests fit; with mutex_ held.
  void check_room(std::size_t count) const;

  Scheduler& scheduler_;
  const std::size_t max_waiting_;
  std::function<void(const StepReport&)> on_step_;

  std::mutex mutex_;
  std::condition_variable wake_;
  bool work_ = false;  // something was submitted or cancelled since the last step
  bool stopping_ = false;
  uint64_t last_id_ = 0;  // requests 1..last_id_ were submitted (ids count up from 1)
  std::thread thread_;
};

}  // namespace xlacel::engine
