#include "session/generator.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "common/error.h"

namespace xlacel::session {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double>(end - start).count();
}

}  // namespace

const char* stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::kEos:
      return "eos";
    case StopReason::kLength:
      return "length";
    case StopReason::kCapacity:
      return "capacity";
    case StopReason::kCallback:
      return "callback";
  }
  return "unknown";
}

double GenerateResult::prompt_tokens_per_second() const {
  return prefill_seconds > 0 ? static_cast<double>(prompt_tokens) / prefill_seconds : 0;
}

double GenerateResult::generation_tokens_per_second() const {
  return decode_seconds > 0 ? static_cast<double>(decode_steps) / decode_seconds : 0;
}

GenerateResult generate(Session& session, std::span<const int32_t> prompt,
                        const GenerateOptions& options, const TokenCallback& on_token) {
  if (options.max_new_tokens <= 0) {
    fail("generate", "the number of new tokens must be at least 1, got {}", options.max_new_tokens);
  }
  Sampler sampler(options.sampling);  // validates the sampling options before anything runs
  // Greedy without a penalty reads back 4 bytes per step (the device argmax); everything else
  // samples on the host from the logits. Without the decode graph, greedy decode steps read the
  // logits too and use their argmax (out.token).
  const Capabilities& caps = session.capabilities();
  const bool want_logits = options.sampling.needs_logits();
  const bool decode_logits = want_logits || !caps.argmax_on_device;
  if (decode_logits && !caps.logits) {
    fail("generate", "{} needs the decode-logits graph, which the backend has not loaded",
         want_logits ? "sampling" : "decoding without the decode graph");
  }

  GenerateResult result;
  result.prompt_tokens = static_cast<int64_t>(prompt.size());
  StepOutput out;
  // The history already holds every fed token (prompt and earlier outputs): the penalty context.
  auto next_token = [&] {
    return want_logits ? sampler.sample(out.logits, session.history()) : out.token;
  };

  const Clock::time_point prefill_start = Clock::now();
  session.prefill(prompt, want_logits, out);
  int32_t token = next_token();
  result.prefill_seconds = seconds_between(prefill_start, Clock::now());

  while (true) {
    result.output_ids.push_back(token);
    const bool keep_going = !on_token || on_token(token);
    if (std::find(options.eos_ids.begin(), options.eos_ids.end(), token) != options.eos_ids.end()) {
      result.stop = StopReason::kEos;
      break;
    }
    if (static_cast<int64_t>(result.output_ids.size()) >= options.max_new_tokens) {
      result.stop = StopReason::kLength;
      break;
    }
    if (!keep_going) {
      result.stop = StopReason::kCallback;
      break;
    }
    // The new token needs a cache row of its own before the next one can be computed.
    if (session.remaining() <= 0) {
      result.stop = StopReason::kCapacity;
      result.stop_message = fmt::format("context full: {} of {} positions used; raise --context",
                                        session.position(), caps.capacity);
      break;
    }
    const Clock::time_point step_start = Clock::now();
    session.decode_step(token, decode_logits, out);
    token = next_token();
    result.decode_seconds += seconds_between(step_start, Clock::now());
    ++result.decode_steps;
  }
  return result;
}

}  // namespace xlacel::session
