#pragma once
// The server's counters and gauges, updated from the request and stepping threads and read as
// Prometheus text by GET /metrics.
#include <atomic>
#include <cstdint>
#include <string>

#include "engine/request.h"
#include "engine/scheduler.h"

namespace xlacel::server {

struct QueueState {
  std::size_t waiting = 0;
  std::size_t running = 0;
  std::size_t slots = 0;
  int64_t prompt_cache_hits = 0;  // the host prompt cache (--cache-ram)
  std::size_t prompt_cache_entries = 0;
  std::size_t prompt_cache_bytes = 0;
};

class Metrics {
 public:
  void request_finished(const engine::RequestStats& stats, bool cancelled);
  void request_refused(int status);  // 4xx/5xx answered before generating
  void step(const engine::StepReport& report);

  std::string prometheus_text(const QueueState& queue) const;

 private:
  std::atomic<uint64_t> requests_ok_ = 0;
  std::atomic<uint64_t> requests_cancelled_ = 0;
  std::atomic<uint64_t> requests_client_error_ = 0;
  std::atomic<uint64_t> requests_server_error_ = 0;
  std::atomic<uint64_t> prompt_tokens_ = 0;
  std::atomic<uint64_t> generated_tokens_ = 0;
  std::atomic<uint64_t> prefill_tokens_ = 0;
  std::atomic<double> prefill_seconds_ = 0;
  std::atomic<uint64_t> decode_steps_ = 0;
  std::atomic<double> decode_seconds_ = 0;
  std::atomic<uint64_t> verify_calls_ = 0;  // speculative decoding
  std::atomic<uint64_t> drafted_tokens_ = 0;
  std::atomic<uint64_t> accepted_tokens_ = 0;
  std::atomic<int64_t> last_batch_ = 0;
  std::atomic<double> last_step_seconds_ = 0;
};

}  // namespace xlacel::server
