#pragma once
// The embeddings of one POST /v1/embeddings request, run through the scheduler thread: as many
// of its inputs are submitted as the queue takes, the rest as earlier ones finish, so a request
// of many inputs neither waits for room for all of them nor is refused for their number.
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/request.h"
#include "engine/scheduler_thread.h"

namespace xlacel::server {

// The pooled vector of each prompt, in order (`options` an embedding request's: embed set).
// `on_finished` hears each prompt's stats as it ends (on this thread). ApiError 429 when the
// queue takes none of them, 503 when one is cancelled (the server drains, or a step failed): the
// rest are cancelled then and waited for.
std::vector<std::vector<float>> embed_all(
    engine::SchedulerThread& scheduler, const std::vector<std::vector<int32_t>>& prompts,
    const engine::RequestOptions& options,
    const std::function<void(const engine::RequestStats&, bool cancelled)>& on_finished);

}  // namespace xlacel::server
