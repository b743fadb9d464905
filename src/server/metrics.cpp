#include "server/metrics.h"

#include <fmt/format.h>

#include "common/process_stats.h"

namespace xlacel::server {

namespace {

void add(std::atomic<double>& total, double value) {
  double old = total.load();
  while (!total.compare_exchange_weak(old, old + value)) {
  }
}

void write(std::string& out, const char* name, const char* type, const char* help, double value,
           const char* labels = "") {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{}{} {}\n", name, help, name, type, name, labels,
                     value);
}

}  // namespace

void Metrics::request_finished(const engine::RequestStats& stats, bool cancelled) {
  (cancelled ? requests_cancelled_ : requests_ok_)++;
  prompt_tokens_ += static_cast<uint64_t>(stats.prompt_tokens);
  generated_tokens_ += static_cast<uint64_t>(stats.output_tokens);
}

void Metrics::request_refused(int status) {
  (status >= 500 ? requests_server_error_ : requests_client_error_)++;
}

void Metrics::step(const engine::StepReport& report) {
  if (report.prefill_tokens > 0) {
    prefill_tokens_ += static_cast<uint64_t>(report.prefill_tokens);
    add(prefill_seconds_, report.prefill_seconds);
  }
  if (report.decode_sequences > 0) {
    ++decode_steps_;
    add(decode_seconds_, report.decode_seconds);
    last_batch_ = report.decode_sequences;
    last_step_seconds_ = report.decode_seconds;
  }
  if (report.drafted_tokens > 0) {
    ++verify_calls_;
    drafted_tokens_ += static_cast<uint64_t>(report.drafted_tokens);
    accepted_tokens_ += static_cast<uint64_t>(report.accepted_tokens);
  }
}

std::string Metrics::prometheus_text(const QueueState& queue) const {
  std::string out;
  const char* requests = "xlacel_requests_total";
  out += fmt::format("# HELP {} Generation requests, by outcome.\n# TYPE {} counter\n", requests,
                     requests);
  out += fmt::format("{}{{outcome=\"ok\"}} {}\n", requests, requests_ok_.load());
  out += fmt::format("{}{{outcome=\"cancelled\"}} {}\n", requests, requests_cancelled_.load());
  out +=
      fmt::format("{}{{outcome=\"client_error\"}} {}\n", requests, requests_client_error_.load());
  out +=
      fmt::format("{}{{outcome=\"server_error\"}} {}\n", requests, requests_server_error_.load());
  write(out, "xlacel_prompt_tokens_total", "counter", "Prompt tokens of finished requests.",
        static_cast<double>(prompt_tokens_.load()));
  write(out, "xlacel_generated_tokens_total", "counter", "Tokens generated.",
        static_cast<double>(generated_tokens_.load()));
  write(out, "xlacel_prefill_tokens_total", "counter", "Prompt tokens run through prefill.",
        static_cast<double>(prefill_tokens_.load()));
  write(out, "xlacel_prefill_seconds_total", "counter", "Time in prefill calls.",
        prefill_seconds_.load());
  write(out, "xlacel_decode_steps_total", "counter", "Decode steps run (verify calls included).",
        static_cast<double>(decode_steps_.load()));
  write(out, "xlacel_decode_seconds_total", "counter",
        "Time in decode steps (and the verify calls that replaced them).", decode_seconds_.load());
  write(out, "xlacel_verify_calls_total", "counter",
        "Decode steps that were speculative decoding's verify calls (--speculative).",
        static_cast<double>(verify_calls_.load()));
  write(out, "xlacel_drafted_tokens_total", "counter", "Tokens drafted and verified.",
        static_cast<double>(drafted_tokens_.load()));
  write(out, "xlacel_accepted_tokens_total", "counter",
        "Drafted tokens that stood (tokens without a decode step of their own).",
        static_cast<double>(accepted_tokens_.load()));
  write(out, "xlacel_queue_depth", "gauge", "Requests waiting for a slot.",
        static_cast<double>(queue.waiting));
  write(out, "xlacel_running_requests", "gauge", "Requests holding a slot.",
        static_cast<double>(queue.running));
  write(out, "xlacel_slots", "gauge", "Sequences the KV cache holds (--parallel).",
        static_cast<double>(queue.slots));
  write(out, "xlacel_prompt_cache_hits_total", "counter",
        "Prompts whose prefix came from the host prompt cache (--cache-ram).",
        static_cast<double>(queue.prompt_cache_hits));
  write(out, "xlacel_prompt_cache_entries", "gauge", "Prompts the host prompt cache keeps.",
        static_cast<double>(queue.prompt_cache_entries));
  write(out, "xlacel_prompt_cache_bytes", "gauge", "Bytes the host prompt cache holds.",
        static_cast<double>(queue.prompt_cache_bytes));
  write(out, "xlacel_decode_batch_size", "gauge", "Sequences advanced by the last decode step.",
        static_cast<double>(last_batch_.load()));
  write(out, "xlacel_decode_step_seconds", "gauge", "Duration of the last decode step.",
        last_step_seconds_.load());
  write(out, "process_resident_memory_bytes", "gauge", "Resident memory of the server.",
        static_cast<double>(current_rss_bytes()));
  return out;
}

}  // namespace xlacel::server
