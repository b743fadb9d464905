#include "engine/scheduler_thread.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <future>
#include <memory>

namespace xlacel::engine {

SchedulerThread::SchedulerThread(Scheduler& scheduler, std::size_t max_waiting,
                                 std::function<void(const StepReport&)> on_step)
    : scheduler_(scheduler), max_waiting_(max_waiting), on_step_(std::move(on_step)) {
  thread_ = std::thread([this] { run(); });
}

SchedulerThread::~SchedulerThread() {
  stop();
}

uint64_t SchedulerThread::submit(std::vector<int32_t> prompt, const RequestOptions& options,
                                 EventCallback on_event) {
  std::lock_guard lock(mutex_);
  check_room(1);
  const uint64_t id = scheduler_.submit(std::move(prompt), options, std::move(on_event));
  last_id_ = std::max(last_id_, id);
  work_ = true;
  wake_.notify_one();
  return id;
}

std::vector<uint64_t> SchedulerThread::submit_all(
    const std::vector<int32_t>& prompt, const std::vector<RequestOptions>& options,
    const std::function<EventCallback(std::size_t)>& on_event) {
  std::lock_guard lock(mutex_);
  check_room(options.size());
  std::vector<uint64_t> ids = scheduler_.submit_choices(prompt, options, on_event);
  for (uint64_t id : ids) last_id_ = std::max(last_id_, id);
  work_ = true;
  wake_.notify_one();
  return ids;
}

void SchedulerThread::check_room(std::size_t count) const {
  if (stopping_) throw QueueFull("the scheduler thread has stopped");
  // Requests leave the system only on the stepping thread, so the bound holds under the lock.
  const std::size_t limit = scheduler_.slots() + max_waiting_;
  if (scheduler_.waiting() + scheduler_.running() + count > limit) {
    throw QueueFull(
        count == 1
            ? fmt::format("all slots are busy and {} requests wait already", max_waiting_)
            : fmt::format("{} choices do not fit: at most {} requests run or wait", count, limit));
  }
}

SlotActionResult SchedulerThread::slot_action(SlotAction action) {
  auto result = std::make_shared<std::promise<SlotActionResult>>();
  std::future<SlotActionResult> done = result->get_future();
  {
    std::lock_guard lock(mutex_);
    if (stopping_) {
      SlotActionResult stopped;
      stopped.problem = SlotActionResult::Problem::kFailed;
      stopped.message = "the scheduler thread has stopped";
      return stopped;
    }
    scheduler_.submit_slot_action(std::move(action),
                                  [result](const SlotActionResult& r) { result->set_value(r); });
    work_ = true;
    wake_.notify_one();
  }
  return done.get();
}

void SchedulerThread::cancel(uint64_t request) {
  std::lock_guard lock(mutex_);
  scheduler_.cancel(request);
  work_ = true;
  wake_.notify_one();
}

void SchedulerThread::cancel_all() {
  std::lock_guard lock(mutex_);
  for (uint64_t id = 1; id <= last_id_; ++id) scheduler_.cancel(id);
  work_ = true;
  wake_.notify_one();
}

void SchedulerThread::stop() {
  {
    std::lock_guard lock(mutex_);
    if (!thread_.joinable()) return;
  }
  cancel_all();
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    wake_.notify_one();
  }
  thread_.join();
}

void SchedulerThread::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return work_ || stopping_; });
    work_ = false;
    lock.unlock();
    bool busy = true;
    while (busy) {
      try {
        busy = scheduler_.step();
      } catch (const std::exception& e) {
        // A failing device call must not take the process down with every stream: report it
        // and end what is running (each request gets its last event).
        std::fprintf(stderr, "xlacel: step failed: %s\n", e.what());
        cancel_all();
        continue;
      }
      if (busy && on_step_) on_step_(scheduler_.last_step());
    }
    lock.lock();
    if (stopping_ && !work_) return;
  }
}

}  // namespace xlacel::engine
