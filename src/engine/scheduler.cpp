#include "engine/scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <limits>
#include <utility>

#include "common/error.h"
#include "engine/ngram_draft.h"
#include "engine/prefill_plan.h"
#include "engine/prefix_reuse.h"

namespace xlacel::engine {

namespace {

double seconds_between(std::chrono::steady_clock::time_point start,
                       std::chrono::steady_clock::time_point end) {
  return std::chrono::duration<double>(end - start).count();
}

}  // namespace

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kEos:
      return "eos";
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kCapacity:
      return "capacity";
    case FinishReason::kCancelled:
      return "cancelled";
    case FinishReason::kGrammar:
      return "grammar";
    case FinishReason::kEmbedded:
      return "embedded";
  }
  return "unknown";
}

double RequestStats::prompt_tokens_per_second() const {
  return prefill_seconds > 0 ? static_cast<double>(prompt_tokens - cached_tokens) / prefill_seconds
                             : 0;
}

double RequestStats::generation_tokens_per_second() const {
  return decode_seconds > 0 ? static_cast<double>(decode_steps) / decode_seconds : 0;
}

// The prompt the choices of one submit_choices() share: `leader` (the first) prefills it.
struct Scheduler::SharedPrompt {
  uint64_t leader = 0;
  // The leader's prefill has ended (its rows were shared, or it finished without): a choice
  // still waiting for a slot prefills its own.
  bool settled = false;
};

struct Scheduler::Sequence {
  Sequence(uint64_t request_id, std::vector<int32_t> prompt, const RequestOptions& request_options,
           EventCallback callback, const Tokenizer* tokenizer)
      : id(request_id),
        options(request_options),
        on_event(std::move(callback)),
        sampler(request_options.sampling),
        tokens(std::move(prompt)),
        prompt_tokens(static_cast<int64_t>(tokens.size())),
        stops(request_options.stop),
        submitted(Clock::now()) {
    if (options.embed) {
      return;  // no text, stop strings or grammar: no token comes out
    }
    if (tokenizer != nullptr) text.emplace(*tokenizer, true);
    if (options.grammar) grammar.emplace(options.grammar, options.eos_ids);
  }

  bool prefilling() const { return !finished && !pending; }
  bool embeds() const { return options.embed.has_value(); }
  // A grammar masks the logits on the host, so even a greedy request needs them there.
  bool needs_logits() const { return options.sampling.needs_logits() || grammar.has_value(); }
  bool decoding() const { return !finished && pending.has_value(); }
  // The choice that prefills its request's shared prompt (SharedPrompt).
  bool leads_share() const { return share && share->leader == id; }
  // A choice whose prompt another one is prefilling.
  bool waits_for_leader() const { return share && !share->settled && share->leader != id; }
  // All of its prompt but the last token is cached: that token can be fed by a decode step (the
  // row the slot gets anyway) instead of a prefill call. Not for the choices of one request,
  // whose shared prompt is copied after a prefill.
  bool one_prompt_token_left() const {
    return prefilling() && cached == prompt_tokens - 1 && !share && !embeds() &&
           !options.image_pixels;
  }

  uint64_t id;
  RequestOptions options;
  EventCallback on_event;
  Sampler sampler;
  std::optional<grammar::GrammarMatcher> grammar;
  std::vector<int32_t> tokens;  // prompt, then every output fed back; [0, cached) are cached
  // What its prompt's rows hold, for prefix reuse (Scheduler::prompt_rows), set at admission.
  std::vector<int32_t> prompt_rows;
  int64_t prompt_tokens;
  int64_t cached = 0;
  bool prefill_begun = false;
  // False once a runner call on its slot failed: the rows it wrote may not hold `tokens`.
  bool cache_trusted = true;
  uint64_t admission = 0;
  std::optional<int32_t> pending;       // the newest output, fed by the next decode step
  std::shared_ptr<SharedPrompt> share;  // with the other choices of its request, if any
  bool finished = false;
  std::optional<StreamDecoder> text;
  std::optional<EmbeddingPool> pool;  // an embedding request's, once admitted
  // The image tokens' rows, in order (RequestOptions::image_pixels encoded at its first chunk).
  std::vector<float> image_features;
  AcceptanceEstimate acceptance;  // speculative decoding: how its drafts fare
  StopStrings stops;
  Clock::time_point submitted;
  Clock::time_point prefill_started;
  Clock::time_point first_token;
  RequestStats stats;
};

Scheduler::Scheduler(executor::ModelRunner& runner, const Tokenizer* tokenizer,
                     const SchedulerOptions& options)
    : runner_(runner), tokenizer_(tokenizer), caps_(runner.capabilities()), options_(options) {
  options_.validate();
  if (options_.speculation != Speculation::kOff && caps_.verify_tokens < 2) {
    fail_field("speculation", "{} needs a runner with a verify graph, which the {} runner lacks",
               speculation_name(options_.speculation), caps_.runtime);
  }
  slots_.resize(static_cast<std::size_t>(caps_.slots));
  resident_.resize(slots_.size());
  if (options_.prompt_cache_bytes > 0) {
    prompt_cache_ = std::make_unique<PromptCache>(options_.prompt_cache_bytes);
  }
}

void SchedulerOptions::validate() const {
  if (prompt_cache_min_tokens < 1) {
    fail_field("prompt_cache_min_tokens", "must be at least 1, got {}", prompt_cache_min_tokens);
  }
  if (draft_max < 1) fail_field("draft_max", "must be at least 1, got {}", draft_max);
}

Scheduler::~Scheduler() = default;

void Scheduler::check_request(const std::vector<int32_t>& prompt,
                              const RequestOptions& options) const {
  if (prompt.empty()) fail("prompt", "is empty: a request needs at least one token");
  if (static_cast<int64_t>(prompt.size()) > caps_.capacity) {
    fail("prompt", "{} tokens do not fit the context of {} positions", prompt.size(),
         caps_.capacity);
  }
  for (int32_t id : prompt) {
    if (id < 0 || id >= caps_.vocab_size) {
      fail("prompt", "token id {} is outside the vocabulary [0, {})", id, caps_.vocab_size);
    }
  }
  check_images(prompt, options);
  if (options.embed) {
    if (caps_.hidden_size < 1) fail("embed", "the {} runner gives no hidden states", caps_.runtime);
    return;
  }
  if (options.max_tokens < 1) fail("max_tokens", "must be at least 1, got {}", options.max_tokens);
  if (!options.stop.empty() && tokenizer_ == nullptr) {
    fail("stop", "stop strings need a tokenizer");
  }
  if (std::string problem = options.sampling.validate(); !problem.empty()) throw Error(problem);
}

void Scheduler::check_images(const std::vector<int32_t>& prompt,
                             const RequestOptions& options) const {
  const int64_t image_tokens = prompt_image_tokens(prompt);
  if (!options.image_pixels) {
    if (image_tokens > 0) {
      fail("prompt", "has {} image tokens (id {}) but the request has no images", image_tokens,
           caps_.image_token_id);
    }
    return;
  }
  if (caps_.image_token_id < 0) fail("images", "the model has no vision tower: it reads text only");
  if (options.embed) fail("images", "an embedding request takes text only");
  const auto pixels = static_cast<int64_t>(options.image_pixels->size());
  if (pixels == 0 || pixels % caps_.image_pixels != 0) {
    fail("images", "{} pixel values are not a whole number of images of {}", pixels,
         caps_.image_pixels);
  }
  const int64_t images = pixels / caps_.image_pixels;
  if (image_tokens != images * caps_.image_tokens) {
    fail("images", "{} images need {} image tokens in the prompt, which has {}", images,
         images * caps_.image_tokens, image_tokens);
  }
  if (caps_.image_runs_whole) {
    int64_t run = 0;
    for (int32_t token : prompt) {
      run = token == caps_.image_token_id ? run + 1 : 0;
      if (run > caps_.prefill_bucket) {
        fail("prompt",
             "has a run of more than {} image tokens, which must prefill in one chunk "
             "(prefill_bucket {})",
             caps_.prefill_bucket, caps_.prefill_bucket);
      }
    }
  }
}

int64_t Scheduler::prompt_image_tokens(std::span<const int32_t> tokens) const {
  if (caps_.image_token_id < 0) return 0;
  return std::count(tokens.begin(), tokens.end(), caps_.image_token_id);
}

uint64_t Scheduler::submit(std::vector<int32_t> prompt, const RequestOptions& options,
                           EventCallback on_event) {
  check_request(prompt, options);
  std::lock_guard lock(mutex_);
  const uint64_t id = next_id_++;
  waiting_.push_back(
      std::make_unique<Sequence>(id, std::move(prompt), options, std::move(on_event), tokenizer_));
  return id;
}

std::vector<uint64_t> Scheduler::submit_choices(
    const std::vector<int32_t>& prompt, std::span<const RequestOptions> options,
    const std::function<EventCallback(std::size_t)>& on_event) {
  for (const RequestOptions& choice : options) check_request(prompt, choice);
  std::shared_ptr<SharedPrompt> share;
  std::lock_guard lock(mutex_);
  if (options.size() > 1 && options_.share_choice_prompts) {
    share = std::make_shared<SharedPrompt>();
    share->leader = next_id_;
  }
  std::vector<uint64_t> ids;
  for (std::size_t i = 0; i < options.size(); ++i) {
    const uint64_t id = next_id_++;
    waiting_.push_back(std::make_unique<Sequence>(id, prompt, options[i], on_event(i), tokenizer_));
    waiting_.back()->share = share;
    ids.push_back(id);
  }
  return ids;
}

void Scheduler::submit_slot_action(SlotAction action,
                                   std::function<void(const SlotActionResult&)> done) {
  if (action.slot < 0 || action.slot >= caps_.slots) {
    fail_field("slot", "{} is not one of the {} slots (0 to {})", action.slot, caps_.slots,
               caps_.slots - 1);
  }
  std::lock_guard lock(mutex_);
  slot_actions_.emplace_back(std::move(action), std::move(done));
}

void Scheduler::run_slot_actions() {
  std::deque<std::pair<SlotAction, std::function<void(const SlotActionResult&)>>> actions;
  {
    std::lock_guard lock(mutex_);
    actions.swap(slot_actions_);
  }
  for (auto& [action, done] : actions) {
    const auto slot = static_cast<std::size_t>(action.slot);
    SlotActionResult result;
    if (slots_[slot]) {
      result.problem = SlotActionResult::Problem::kBusy;
      result.message = fmt::format("slot {} is busy with a request", action.slot);
    } else {
      result = run_slot_action(runner_, action, resident_[slot]);
    }
    if (done) done(result);
  }
}

void Scheduler::cancel(uint64_t request) {
  std::lock_guard lock(mutex_);
  if (request > 0 && request < next_id_) cancelled_.insert(request);
}

bool Scheduler::idle() const {
  std::lock_guard lock(mutex_);
  return waiting_.empty() && running_ == 0;
}

std::size_t Scheduler::waiting() const {
  std::lock_guard lock(mutex_);
  return waiting_.size();
}

std::size_t Scheduler::running() const {
  return running_;
}

void Scheduler::admit() {
  std::vector<std::unique_ptr<Sequence>> dropped;  // cancelled while waiting
  std::vector<Sequence*> stopped;                  // cancelled while running
  {
    std::lock_guard lock(mutex_);
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (cancelled_.erase((*it)->id) != 0) {
        dropped.push_back(std::move(*it));
        it = waiting_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto& sequence : slots_) {
      if (sequence && cancelled_.erase(sequence->id) != 0) stopped.push_back(sequence.get());
    }
    cancelled_.clear();  // the rest had finished already
  }
  // Events go out without the lock held: a callback may submit or cancel.
  for (auto& sequence : dropped) finish(*sequence, FinishReason::kCancelled);
  for (Sequence* sequence : stopped) finish(*sequence, FinishReason::kCancelled);
  release_finished();

  while (running_ < slots_.size()) {
    // Only this thread takes from the queue, so its front stays put while the lock is let go
    // for the prompt cache's copies.
    Sequence* next = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (waiting_.empty()) break;
      next = waiting_.front().get();
    }
    if (next->prompt_rows.empty()) next->prompt_rows = prompt_rows(*next);
    auto [slot, common] = choose_slot(next->prompt_rows);
    // An embedding needs every row's hidden state, so its prompt runs from the first.
    if (next->embeds()) common = 0;
    if (!next->share) common = use_prompt_cache(slot, next->prompt_rows, common, !next->embeds());
    std::lock_guard lock(mutex_);
    Sequence& sequence = *(slots_[slot] = std::move(waiting_.front()));
    waiting_.pop_front();
    sequence.admission = admitted_++;
    sequence.cached = common;
    sequence.stats.cached_tokens = common;
    if (sequence.embeds()) {
      sequence.pool.emplace(*sequence.options.embed, caps_.hidden_size, sequence.prompt_tokens);
    }
    resident_[slot].clear();  // the sequence's tokens[0, cached) say what the slot holds now
    ++running_;
  }
}

std::pair<std::size_t, int64_t> Scheduler::choose_slot(const std::vector<int32_t>& prompt) const {
  std::size_t best = slots_.size();
  int64_t best_common = -1;
  for (std::size_t slot = 0; slot < slots_.size(); ++slot) {
    if (slots_[slot]) continue;
    int64_t common = 0;
    if (options_.prefix_reuse) {
      const std::vector<int32_t>& resident = resident_[slot];
      // The last prompt token is always run: its logits give the first new token.
      const std::size_t limit = std::min(resident.size(), prompt.size() - 1);
      const auto differ = std::mismatch(prompt.begin(), prompt.begin() + limit, resident.begin());
      common = reusable_prefix(differ.first - prompt.begin(), static_cast<int64_t>(resident.size()),
                               caps_.ring_rows);
    }
    if (common > best_common) {  // strictly longer: ties keep the lowest slot
      best = slot;
      best_common = common;
    }
  }
  return {best, best_common};
}

int64_t Scheduler::use_prompt_cache(std::size_t slot, const std::vector<int32_t>& prompt,
                                    int64_t common, bool may_restore) {
  if (!prompt_cache_ || !options_.prefix_reuse) return common;
  std::vector<int32_t>& resident = resident_[slot];
  const std::optional<PromptCache::Match> cached =
      may_restore ? prompt_cache_->best(prompt, caps_.ring_rows) : std::nullopt;
  // A copy moves the whole slot, so it has to save at least the minimum's prefill.
  const bool restore = cached && cached->common >= common + options_.prompt_cache_min_tokens;
  try {
    if ((restore || common < static_cast<int64_t>(resident.size())) &&
        static_cast<int64_t>(resident.size()) >= options_.prompt_cache_min_tokens &&
        !prompt_cache_->holds(resident)) {
      prompt_cache_->put({resident, runner_.save_slot(static_cast<int32_t>(slot),
                                                      static_cast<int64_t>(resident.size()))});
      prompt_cache_entries_ = prompt_cache_->entries();
      prompt_cache_bytes_ = prompt_cache_->bytes();
    }
    if (!restore) return common;
    const CachedSlot& entry = prompt_cache_->use(cached->id);
    runner_.restore_slot(static_cast<int32_t>(slot), entry.rows);
    resident = entry.tokens;
  } catch (const std::exception&) {
    // The runner's copy failed: what the slot holds is unknown, so the prompt starts afresh.
    resident.clear();
    return 0;
  }
  ++prompt_cache_hits_;
  return cached->common;
}

void Scheduler::release_finished() {
  for (std::size_t slot = 0; slot < slots_.size(); ++slot) {
    std::unique_ptr<Sequence>& sequence = slots_[slot];
    if (sequence && sequence->finished) {
      if (sequence->cache_trusted) {
        // Its rows as prompt_rows names them: the prompt's, then the tokens fed after it.
        std::vector<int32_t>& resident = resident_[slot];
        const auto cached = static_cast<std::size_t>(sequence->cached);
        const std::vector<int32_t>& prompt = sequence->prompt_rows;
        resident.assign(prompt.begin(), prompt.begin() + std::min(cached, prompt.size()));
        if (cached > prompt.size()) {
          resident.insert(resident.end(), sequence->tokens.begin() + prompt.size(),
                          sequence->tokens.begin() + cached);
        }
      }
      sequence.reset();
      --running_;
    }
  }
}

void Scheduler::forget_resident() {
  for (auto& resident : resident_) resident.clear();
  for (auto& sequence : slots_) {
    if (sequence) sequence->cache_trusted = false;
  }
}

void Scheduler::finish(Sequence& sequence, FinishReason reason) {
  TokenEvent event;
  event.request = sequence.id;
  emit_last(sequence, std::move(event), reason);
}

void Scheduler::emit_last(Sequence& sequence, TokenEvent event, FinishReason reason) {
  sequence.finished = true;
  // A leader ending before its prefill did (cancelled) leaves the others to prefill alone.
  if (sequence.leads_share()) sequence.share->settled = true;
  event.finished = true;
  event.reason = reason;
  sequence.stats.prompt_tokens = sequence.prompt_tokens;
  event.stats = sequence.stats;
  if (sequence.on_event) sequence.on_event(event);
}

void Scheduler::sample_and_accept(Sequence& sequence, std::span<float> logits) {
  if (sequence.grammar) {
    sequence.grammar->apply_mask(logits);
    if (std::none_of(logits.begin(), logits.end(),
                     [](float logit) { return logit > -std::numeric_limits<float>::infinity(); })) {
      TokenEvent event;
      event.request = sequence.id;
      event.message = "grammar: no token may come next";
      emit_last(sequence, std::move(event), FinishReason::kGrammar);
      return;
    }
  }
  std::optional<TokenLogprobs> logprobs;
  if (sequence.options.sampling.logprobs) logprobs.emplace();
  const int32_t token =
      sequence.sampler.sample(logits, sequence.tokens, logprobs ? &*logprobs : nullptr);
  // The mask allowed it, so the grammar accepts it.
  if (sequence.grammar && !sequence.grammar->accept(token)) {
    fail("grammar", "token {} was drawn against the grammar's mask", token);
  }
  accept_token(sequence, token, std::move(logprobs));
}

void Scheduler::accept_token(Sequence& sequence, int32_t token,
                             std::optional<TokenLogprobs> logprobs) {
  const Clock::time_point now = Clock::now();
  RequestStats& stats = sequence.stats;
  if (stats.output_tokens == 0) {
    sequence.first_token = now;
    stats.prefill_seconds = seconds_between(sequence.prefill_started, now);
  } else {
    stats.decode_seconds = seconds_between(sequence.first_token, now);
    ++stats.decode_steps;
  }
  ++stats.output_tokens;

  TokenEvent event;
  event.request = sequence.id;
  event.token = token;
  event.logprobs = std::move(logprobs);
  if (sequence.text) event.text = sequence.stops.feed(sequence.text->feed(token));

  const auto& eos = sequence.options.eos_ids;
  std::optional<FinishReason> reason;
  if (std::find(eos.begin(), eos.end(), token) != eos.end()) {
    reason = FinishReason::kEos;
  } else if (sequence.stops.stopped()) {
    reason = FinishReason::kStop;
    event.stop = sequence.stops.matched();
  } else if (sequence.grammar && sequence.grammar->terminated()) {
    reason = FinishReason::kGrammar;
  } else if (stats.output_tokens >= sequence.options.max_tokens) {
    reason = FinishReason::kLength;
  } else if (sequence.cached >= caps_.capacity) {
    // The new token needs a cache row of its own before the next one can be computed.
    reason = FinishReason::kCapacity;
    event.message =
        fmt::format("context full: {} of {} positions used", sequence.cached, caps_.capacity);
  }
  if (!reason) {
    sequence.pending = token;
    if (sequence.on_event) sequence.on_event(event);
    return;
  }
  if (sequence.text && *reason != FinishReason::kStop) {
    event.text += sequence.stops.feed(sequence.text->flush());
    event.text += sequence.stops.flush();
  }
  emit_last(sequence, std::move(event), *reason);
}

void Scheduler::prefill_some() {
  // The sequences with prompt left to prefill (choices waiting for their leader aside), oldest
  // first.
  std::vector<std::size_t> ready;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    const Sequence* sequence = slots_[i].get();
    if (sequence && sequence->prefilling() && !sequence->waits_for_leader() &&
        !rides_decode(*sequence)) {
      ready.push_back(i);
    }
  }
  if (ready.empty()) return;
  std::sort(ready.begin(), ready.end(), [&](std::size_t a, std::size_t b) {
    return slots_[a]->admission < slots_[b]->admission;
  });
  // Embeddings' chunks run through the embed graph, generations' through the prefill graph: the
  // oldest decides which this call is, and takes the others of its kind.
  const bool embedding = slots_[ready.front()]->embeds();
  std::erase_if(ready, [&](std::size_t slot) { return slots_[slot]->embeds() != embedding; });
  // With several prompts to prefill and calls that take several sequences, chunks of the small
  // bucket of up to prefill_sequences of them (oldest first) go in one call, so a burst of
  // prompts advances together and a short prompt in it is not queued behind the full chunks of
  // the others (by default 4 x 16 rows a call, one full bucket's). That pays where the call is
  // full (prefill_sequences prompts wait) or a prompt's first token is at most a small chunk
  // away; otherwise (a few long prompts: two alone would get 2 x 16 rows a call, slower than full
  // chunks in turn: docs/PERFORMANCE.md, "Prefill chunks of several prompts") the oldest takes a
  // full chunk, as a prompt prefilling alone does.
  const int64_t small = caps_.prefill_buckets.front();
  const auto left = [&](std::size_t slot) {
    return slots_[slot]->prompt_tokens - slots_[slot]->cached;
  };
  // A chunk of at most `tokens`; with no row (valid 0) where an image's tokens, which must go
  // in one chunk (Capabilities::image_runs_whole), do not fit that many.
  auto chunk_of = [&](std::size_t slot, int64_t tokens) {
    const Sequence& sequence = *slots_[slot];
    return whole_image_runs(sequence,
                            next_prefill_chunk(sequence.cached, sequence.prompt_tokens, tokens));
  };
  const bool together =
      caps_.prefill_sequences > 1 && ready.size() > 1 &&
      (static_cast<int64_t>(ready.size()) >= caps_.prefill_sequences ||
       std::any_of(ready.begin(), ready.end(), [&](std::size_t i) { return left(i) <= small; })) &&
      chunk_of(ready.front(), small).valid > 0;
  const int64_t chunk_tokens = together ? small : caps_.prefill_bucket;
  auto next_chunk = [&](std::size_t slot) { return chunk_of(slot, chunk_tokens); };
  std::vector<std::size_t> batch = {ready.front()};
  for (std::size_t i = 1; together && i < ready.size(); ++i) {
    if (static_cast<int64_t>(batch.size()) == caps_.prefill_sequences) break;
    if (next_chunk(ready[i]).valid > 0) batch.push_back(ready[i]);
  }
  if (embedding) {
    embed_some(batch, chunk_tokens);
    return;
  }

  struct Planned {
    PrefillChunk chunk;
    std::vector<int32_t> bucket;
    bool last = false;
    // The slots of the choices that take this prompt's rows once its last chunk has run.
    std::vector<std::size_t> sharing;
    std::vector<float> images;  // the chunk's image embeddings (empty: no image token)
  };
  const Clock::time_point start = Clock::now();
  std::vector<Planned> plans(batch.size());
  std::vector<executor::PrefillInput> inputs(batch.size());
  bool want_logits = false;
  for (std::size_t n = 0; n < batch.size(); ++n) {
    Sequence& sequence = *slots_[batch[n]];
    begin_prefill(sequence, start);
    Planned& plan = plans[n];
    plan.chunk = next_chunk(batch[n]);
    plan.bucket.assign(
        static_cast<std::size_t>(prefill_bucket_for(plan.chunk.valid, caps_.prefill_buckets)), 0);
    std::copy_n(sequence.tokens.begin() + plan.chunk.start, plan.chunk.valid, plan.bucket.begin());
    plan.images = chunk_image_embeddings(sequence, plan.chunk, plan.bucket.size());
    plan.last = plan.chunk.chunk_end == sequence.prompt_tokens;
    want_logits = want_logits || (plan.last && sequence.needs_logits());
    if (plan.last && sequence.leads_share()) plan.sharing = waiting_on(sequence);
    for (std::size_t i : plan.sharing) want_logits = want_logits || slots_[i]->needs_logits();
    inputs[n] = {static_cast<int32_t>(batch[n]), plan.bucket,
                 static_cast<int32_t>(plan.chunk.start), static_cast<int32_t>(plan.chunk.valid),
                 plan.images};
  }
  prefill_outs_.resize(batch.size());
  try {
    runner_.prefill_chunks(inputs, want_logits, prefill_outs_);
  } catch (...) {
    forget_resident();
    throw;
  }
  for (std::size_t n = 0; n < batch.size(); ++n) {
    Sequence& sequence = *slots_[batch[n]];
    sequence.cached = plans[n].chunk.chunk_end;
    last_step_.prefill_tokens += plans[n].chunk.valid;
  }
  last_step_.prefill_sequences = static_cast<int64_t>(batch.size());
  last_step_.prefill_seconds = seconds_between(start, Clock::now());
  for (std::size_t n = 0; n < batch.size(); ++n) {
    if (!plans[n].last) continue;
    Sequence& sequence = *slots_[batch[n]];
    const executor::PrefillOutput& out = prefill_outs_[n];
    if (sequence.leads_share()) {
      share_prompt(sequence, static_cast<int32_t>(batch[n]), plans[n].sharing, out);
    }
    if (sequence.needs_logits()) {
      sample_and_accept(sequence, prefill_outs_[n].logits);
    } else {
      accept_token(sequence, out.token);
    }
  }
}

void Scheduler::embed_some(std::span<const std::size_t> batch, int64_t chunk_tokens) {
  const Clock::time_point start = Clock::now();
  std::vector<PrefillChunk> chunks(batch.size());
  std::vector<std::vector<int32_t>> buckets(batch.size());
  std::vector<executor::PrefillInput> inputs(batch.size());
  for (std::size_t n = 0; n < batch.size(); ++n) {
    Sequence& sequence = *slots_[batch[n]];
    begin_prefill(sequence, start);
    const PrefillChunk& chunk = chunks[n] =
        next_prefill_chunk(sequence.cached, sequence.prompt_tokens, chunk_tokens);
    buckets[n].assign(
        static_cast<std::size_t>(prefill_bucket_for(chunk.valid, caps_.prefill_buckets)), 0);
    std::copy_n(sequence.tokens.begin() + chunk.start, chunk.valid, buckets[n].begin());
    inputs[n] = {static_cast<int32_t>(batch[n]),
                 buckets[n],
                 static_cast<int32_t>(chunk.start),
                 static_cast<int32_t>(chunk.valid),
                 {}};
  }
  hidden_.resize(batch.size());
  try {
    runner_.embed_chunks(inputs, hidden_);
  } catch (...) {
    forget_resident();
    throw;
  }
  const Clock::time_point end = Clock::now();
  last_step_.prefill_sequences = static_cast<int64_t>(batch.size());
  last_step_.prefill_seconds = seconds_between(start, end);
  for (std::size_t n = 0; n < batch.size(); ++n) {
    Sequence& sequence = *slots_[batch[n]];
    const PrefillChunk& chunk = chunks[n];
    sequence.cached = chunk.chunk_end;
    sequence.pool->add(hidden_[n], chunk.start);
    last_step_.prefill_tokens += chunk.valid;
    if (chunk.chunk_end < sequence.prompt_tokens) continue;
    sequence.stats.prefill_seconds = seconds_between(sequence.prefill_started, end);
    TokenEvent event;
    event.request = sequence.id;
    event.embedding = sequence.pool->pooled();
    emit_last(sequence, std::move(event), FinishReason::kEmbedded);
  }
}

bool Scheduler::rides_decode(const Sequence& sequence) const {
  // Only where the host sees no logits: the decode graph's agree with a prefill's to ~1e-6, not
  // to the bit, and a repeated request's logprobs (or a sample drawn from them) should be the
  // first one's.
  return options_.last_prompt_token_in_decode && sequence.one_prompt_token_left() &&
         !sequence.needs_logits();
}

void Scheduler::begin_prefill(Sequence& sequence, Clock::time_point now) {
  if (sequence.prefill_begun) return;
  sequence.prefill_begun = true;
  sequence.prefill_started = now;
  sequence.stats.queued_seconds = seconds_between(sequence.submitted, now);
  // Its images count in its prefill time: the vision tower runs before its first chunk, on the
  // images whose rows the slot does not hold already (prefix reuse: a chat's earlier images).
  if (sequence.options.image_pixels) encode_images(sequence);
}

void Scheduler::encode_images(Sequence& sequence) {
  const std::vector<float>& pixels = *sequence.options.image_pixels;
  const auto per_image = static_cast<std::size_t>(caps_.image_pixels);
  const auto rows = static_cast<std::size_t>(caps_.image_tokens * caps_.hidden_size);
  const std::size_t images = pixels.size() / per_image;
  // The image tokens before the first row to prefill: their images need no features.
  const auto cached_tokens = static_cast<std::size_t>(
      prompt_image_tokens({sequence.tokens.data(), static_cast<std::size_t>(sequence.cached)}));
  const std::size_t first = cached_tokens / static_cast<std::size_t>(caps_.image_tokens);
  sequence.image_features.assign(images * rows, 0.0f);
  if (first == images) return;
  const Clock::time_point start = Clock::now();
  const std::vector<float> features = runner_.encode_images(
      std::span<const float>(pixels).subspan(first * per_image, (images - first) * per_image));
  std::copy(features.begin(), features.end(),
            sequence.image_features.begin() + static_cast<std::ptrdiff_t>(first * rows));
  sequence.stats.images_encoded = static_cast<int64_t>(images - first);
  sequence.stats.image_seconds = seconds_between(start, Clock::now());
}

std::vector<int32_t> Scheduler::prompt_rows(const Sequence& sequence) {
  std::vector<int32_t> rows(sequence.tokens.begin(),
                            sequence.tokens.begin() + sequence.prompt_tokens);
  if (!sequence.options.image_pixels) return rows;
  const std::vector<float>& pixels = *sequence.options.image_pixels;
  const auto per_image = static_cast<std::size_t>(caps_.image_pixels);
  int64_t image_row = 0;
  int32_t id = 0;
  for (int32_t& row : rows) {
    if (row != caps_.image_token_id) continue;
    const int64_t in_image = image_row % caps_.image_tokens;
    if (in_image == 0) {
      // The image's pixels name it: the same pixels give the same rows, whatever request.
      const auto image = static_cast<std::size_t>(image_row / caps_.image_tokens);
      const std::string_view bytes(reinterpret_cast<const char*>(pixels.data() + image * per_image),
                                   per_image * sizeof(float));
      const auto [known, added] = image_ids_.try_emplace(std::hash<std::string_view>()(bytes),
                                                         static_cast<int32_t>(image_ids_.size()));
      id = known->second;
    }
    row = -1 - static_cast<int32_t>(id * caps_.image_tokens + in_image);
    ++image_row;
  }
  return rows;
}

PrefillChunk Scheduler::whole_image_runs(const Sequence& sequence, PrefillChunk chunk) const {
  if (!caps_.image_runs_whole || chunk.chunk_end >= sequence.prompt_tokens) return chunk;
  const std::vector<int32_t>& tokens = sequence.tokens;
  const auto is_image = [&](int64_t i) {
    return tokens[static_cast<std::size_t>(i)] == caps_.image_token_id;
  };
  int64_t end = chunk.chunk_end;
  if (!is_image(end) || !is_image(end - 1)) return chunk;
  while (end > chunk.start && is_image(end - 1)) --end;  // back to the run's first token
  chunk.chunk_end = end;
  chunk.valid = end - chunk.start;
  return chunk;
}

std::vector<float> Scheduler::chunk_image_embeddings(const Sequence& sequence,
                                                     const PrefillChunk& chunk,
                                                     std::size_t bucket) const {
  const auto first = sequence.tokens.begin() + chunk.start;
  const auto last = first + chunk.valid;
  if (sequence.image_features.empty() || std::find(first, last, caps_.image_token_id) == last) {
    return {};
  }
  // transformers fills the image tokens with the features in order: the chunk's first image
  // token takes the row after those of the image tokens before it.
  const auto hidden = static_cast<std::size_t>(caps_.hidden_size);
  auto row = static_cast<std::size_t>(
      prompt_image_tokens({sequence.tokens.data(), static_cast<std::size_t>(chunk.start)}));
  std::vector<float> images(bucket * hidden, 0.0f);
  for (auto token = first; token != last; ++token) {
    if (*token != caps_.image_token_id) continue;
    const auto from = sequence.image_features.begin() + static_cast<std::ptrdiff_t>(row++ * hidden);
    std::copy(from, from + static_cast<std::ptrdiff_t>(hidden),
              images.begin() + (token - first) * static_cast<std::ptrdiff_t>(hidden));
  }
  return images;
}

std::vector<std::size_t> Scheduler::waiting_on(const Sequence& leader) const {
  std::vector<std::size_t> waiting;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    const Sequence* choice = slots_[i].get();
    if (choice && choice->share == leader.share && choice->prefilling() &&
        choice->waits_for_leader()) {
      waiting.push_back(i);
    }
  }
  return waiting;
}

void Scheduler::share_prompt(Sequence& leader, int32_t slot, std::span<const std::size_t> sharing,
                             const executor::PrefillOutput& out) {
  leader.share->settled = true;
  for (std::size_t i : sharing) {
    Sequence* choice = slots_[i].get();
    try {
      runner_.copy_slot(slot, static_cast<int32_t>(i));
    } catch (...) {
      forget_resident();
      throw;
    }
    // Its prompt is in its slot now, as if it had prefilled it in the leader's time.
    choice->cached = choice->prompt_tokens;
    choice->prefill_begun = true;
    choice->prefill_started = leader.prefill_started;
    choice->stats.queued_seconds = seconds_between(choice->submitted, leader.prefill_started);
    choice->stats.cached_tokens = choice->prompt_tokens;
    if (choice->needs_logits()) {
      std::vector<float> logits = out.logits;  // the sampler and a grammar's mask write to it
      sample_and_accept(*choice, logits);
    } else {
      accept_token(*choice, out.token);
    }
  }
}

void Scheduler::decode_all() {
  int64_t highest = -1;
  int64_t sequences = 0;
  bool want_logits = false;
  // Rows that feed a token: a sequence's newest output, or its prompt's last token.
  std::vector<bool> fed(slots_.size(), false);
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    const Sequence* sequence = slots_[i].get();
    if (sequence && feeds_token(*sequence)) {
      fed[i] = true;
      highest = static_cast<int64_t>(i);
      ++sequences;
      want_logits = want_logits || sequence->needs_logits();
    }
  }
  if (highest < 0) return;
  const Clock::time_point start = Clock::now();
  const int64_t rows = runner_.decode_rows(highest + 1);
  std::vector<int32_t> tokens(static_cast<std::size_t>(rows), 0);
  std::vector<int32_t> positions(static_cast<std::size_t>(rows), 0);
  for (std::size_t b = 0; b < static_cast<std::size_t>(rows); ++b) {
    const Sequence* sequence = slots_[b].get();
    if (sequence == nullptr) {
      // A free slot's row lands just past its resident tokens, so they stay reusable; a slot
      // full to the capacity gives up its last one.
      std::vector<int32_t>& resident = resident_[b];
      if (static_cast<int64_t>(resident.size()) >= caps_.capacity) {
        resident.resize(static_cast<std::size_t>(caps_.capacity - 1));
      }
      positions[b] = static_cast<int32_t>(resident.size());
      continue;
    }
    // A sequence still prefilling gets its next unwritten row, which its next chunk rewrites.
    positions[b] = static_cast<int32_t>(sequence->cached);
    if (fed[b]) tokens[b] = token_to_feed(*sequence);
  }
  // Each grammar's next mask is computed while the device runs the step: it depends only on
  // the tokens drawn so far.
  std::future<void> masks;
  if (std::any_of(slots_.begin(), slots_.end(),
                  [](const auto& sequence) { return sequence && sequence->grammar; })) {
    masks = std::async(std::launch::async, [this] {
      for (auto& sequence : slots_) {
        if (sequence && feeds_token(*sequence) && sequence->grammar)
          sequence->grammar->compute_mask();
      }
    });
  }
  try {
    runner_.decode(tokens, positions, want_logits, decode_out_);
  } catch (...) {
    if (masks.valid()) masks.wait();
    forget_resident();
    throw;
  }
  if (masks.valid()) masks.get();
  const auto vocab = static_cast<std::size_t>(caps_.vocab_size);
  for (std::size_t b = 0; b < static_cast<std::size_t>(rows); ++b) {
    Sequence* sequence = slots_[b].get();
    if (!fed[b]) continue;
    token_fed(*sequence, start);
    if (sequence->needs_logits()) {
      sample_and_accept(*sequence, std::span<float>(decode_out_.logits).subspan(b * vocab, vocab));
    } else {
      accept_token(*sequence, decode_out_.tokens[b]);
    }
  }
  last_step_.decode_sequences = sequences;
  last_step_.decode_rows = rows;
  last_step_.decode_seconds = seconds_between(start, Clock::now());
  costs_.decode_took(rows, last_step_.decode_seconds);
  for (const auto& sequence : slots_) {
    if (sequence) sequence->acceptance.decoded();
  }
}

std::vector<int32_t> Scheduler::draft_for(Sequence& sequence) {
  if (!sequence.decoding()) return {};  // a prompt's last token: nothing generated to go on
  // The verify call's rows stay inside the cache, and drafts past the token budget are wasted.
  int64_t most =
      std::min({options_.draft_max, caps_.verify_tokens - 1, caps_.capacity - sequence.cached - 1,
                sequence.options.max_tokens - sequence.stats.output_tokens - 1});
  // A rejected draft's row replaces a ring's row of an older position that later tokens still
  // attend to (a window, a convolution's inputs, a scan's state): no drafts once a ring wraps.
  if (caps_.ring_rows > 0) most = std::min(most, caps_.ring_rows - sequence.cached - 1);
  if (most < 1) return {};
  std::vector<int32_t> context = sequence.tokens;
  context.push_back(*sequence.pending);
  return ngram_draft(context, most);
}

bool Scheduler::verify_drafts() {
  if (options_.speculation == Speculation::kOff) return false;
  // Every sequence with a token to feed goes in the call: any that needs logits on the host,
  // or more than one call holds, and the decode step runs instead.
  std::vector<std::size_t> fed;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    const Sequence* sequence = slots_[i].get();
    if (!sequence || !feeds_token(*sequence)) continue;
    if (sequence->needs_logits()) return false;
    fed.push_back(i);
  }
  if (fed.empty() || static_cast<int64_t>(fed.size()) > caps_.verify_sequences) return false;
  std::vector<std::vector<int32_t>> drafts(fed.size());
  bool drafted = false;
  for (std::size_t n = 0; n < fed.size(); ++n) {
    drafts[n] = draft_for(*slots_[fed[n]]);
    drafted = drafted || !drafts[n].empty();
  }
  if (!drafted) return false;
  // Only where the tokens it should give come sooner than decode steps would give them.
  double expected = 0;
  for (std::size_t n = 0; n < fed.size(); ++n) {
    expected += 1 + slots_[fed[n]]->acceptance.expected(static_cast<int64_t>(drafts[n].size()));
  }
  const int64_t rows = runner_.decode_rows(static_cast<int64_t>(fed.back()) + 1);
  if (options_.verify_when_it_pays &&
      !costs_.verify_pays(static_cast<int64_t>(fed.size()), expected, rows)) {
    return false;
  }

  const Clock::time_point start = Clock::now();
  std::vector<std::vector<int32_t>> buckets(fed.size());
  std::vector<executor::PrefillInput> inputs(fed.size());
  for (std::size_t n = 0; n < fed.size(); ++n) {
    const Sequence& sequence = *slots_[fed[n]];
    std::vector<int32_t>& bucket = buckets[n];
    bucket.assign(static_cast<std::size_t>(caps_.verify_tokens), 0);
    bucket[0] = token_to_feed(sequence);
    std::copy(drafts[n].begin(), drafts[n].end(), bucket.begin() + 1);
    inputs[n] = {static_cast<int32_t>(fed[n]),
                 bucket,
                 static_cast<int32_t>(sequence.cached),
                 static_cast<int32_t>(drafts[n].size() + 1),
                 {}};
  }
  std::vector<std::vector<int32_t>> next(fed.size());
  try {
    runner_.verify(inputs, next);
  } catch (...) {
    forget_resident();
    throw;
  }
  for (std::size_t n = 0; n < fed.size(); ++n) {
    Sequence& sequence = *slots_[fed[n]];
    const auto guessed = static_cast<int64_t>(drafts[n].size());
    const int64_t stood = accept_verified(sequence, drafts[n], next[n], start);
    sequence.acceptance.verified(guessed, stood);
    last_step_.drafted_tokens += guessed;
    last_step_.accepted_tokens += stood;
  }
  last_step_.decode_sequences = static_cast<int64_t>(fed.size());
  last_step_.decode_rows = static_cast<int64_t>(fed.size()) * caps_.verify_tokens;
  last_step_.decode_seconds = seconds_between(start, Clock::now());
  costs_.verify_took(static_cast<int64_t>(fed.size()), last_step_.decode_seconds);
  return true;
}

int64_t Scheduler::accept_verified(Sequence& sequence, std::span<const int32_t> draft,
                                   std::span<const int32_t> next, Clock::time_point start) {
  const int64_t stand = accepted_drafts(draft, next);
  sequence.stats.drafted_tokens += static_cast<int64_t>(draft.size());
  // Token i of the call (the one fed, then the drafts that stand) has its rows written; the
  // argmax after it is the next output, as a decode step feeding it would give.
  // Counted before each token goes out: the last one's event carries the stats.
  int64_t i = 0;
  for (; i <= stand && !sequence.finished; ++i) {
    token_fed(sequence, start);
    if (i > 0) ++sequence.stats.accepted_tokens;
    accept_token(sequence, next[static_cast<std::size_t>(i)]);
  }
  return i - 1;  // the drafts fed after the first token
}

bool Scheduler::feeds_token(const Sequence& sequence) const {
  return sequence.decoding() || rides_decode(sequence);
}

int32_t Scheduler::token_to_feed(const Sequence& sequence) const {
  return sequence.decoding() ? *sequence.pending
                             : sequence.tokens[static_cast<std::size_t>(sequence.cached)];
}

void Scheduler::token_fed(Sequence& sequence, Clock::time_point start) {
  if (sequence.decoding()) {
    sequence.tokens.push_back(*sequence.pending);
    sequence.pending.reset();
  } else {
    begin_prefill(sequence, start);  // its prompt's last token: the first output comes next
  }
  ++sequence.cached;
}

bool Scheduler::step() {
  last_step_ = StepReport{};
  run_slot_actions();
  admit();
  if (running_ == 0) return false;
  prefill_some();
  release_finished();
  if (!verify_drafts()) decode_all();
  release_finished();
  return true;
}

void Scheduler::run_until_idle() {
  while (step()) {
  }
}

}  // namespace xlacel::engine
