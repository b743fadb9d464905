#include "server/embedding_batch.h"

#include <chrono>
#include <memory>
#include <optional>

#include "server/api_error.h"
#include "server/event_stream.h"

namespace xlacel::server {

std::vector<std::vector<float>> embed_all(
    engine::SchedulerThread& scheduler, const std::vector<std::vector<int32_t>>& prompts,
    const engine::RequestOptions& options,
    const std::function<void(const engine::RequestStats&, bool cancelled)>& on_finished) {
  auto events = std::make_shared<EventStream>();
  std::vector<std::vector<float>> vectors(prompts.size());
  std::vector<uint64_t> submitted;
  std::size_t finished = 0;
  std::optional<ApiError> failure;
  std::vector<ChoiceEvent> arrived;
  for (;;) {
    while (!failure && submitted.size() < prompts.size()) {
      const std::size_t index = submitted.size();
      try {
        submitted.push_back(scheduler.submit(
            prompts[index], options,
            [events, index](const engine::TokenEvent& event) { events->push(index, event); }));
      } catch (const engine::QueueFull& e) {
        // Ours free room as they end; with none of ours running, others hold the queue: refused
        // as any request would be.
        if (finished == submitted.size()) {
          failure.emplace(429, "rate_limit_error", e.what(), "", "queue_full");
        }
        break;
      }
    }
    if (finished == submitted.size()) break;
    if (!events->pop_all(arrived, std::chrono::milliseconds(1000))) continue;
    for (ChoiceEvent& choice : arrived) {
      if (!choice.event.finished) continue;
      ++finished;
      const bool cancelled = choice.event.reason != engine::FinishReason::kEmbedded;
      on_finished(choice.event.stats, cancelled);
      if (!cancelled) {
        vectors[choice.choice] = std::move(choice.event.embedding);
      } else if (!failure) {
        failure.emplace(
            503, "unavailable_error",
            choice.event.message.empty() ? "the request was cancelled" : choice.event.message);
        for (uint64_t id : submitted) scheduler.cancel(id);
      }
    }
  }
  if (failure) throw *failure;
  return vectors;
}

}  // namespace xlacel::server
