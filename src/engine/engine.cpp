#include "engine/engine.h"

#include <algorithm>
#include <future>

#include "common/error.h"
#include "models/tensor_parallel.h"

namespace xlacel::engine {

namespace {

// The runtime's lowering, then its device: options the model or the runtime cannot honour fail
// before a device starts (which prints its progress).
backends::Runtime open_runtime(const ModelFiles& model, const EngineOptions& options) {
  models::check_tensor_parallel(model.config(), options.device.tensor_parallel);
  options.scheduler.validate();
  // A slot's rows come to the host whole: partitioned caches would come in slices.
  if (options.scheduler.prompt_cache_bytes > 0 && options.device.tensor_parallel > 1) {
    fail_field("prompt_cache_bytes", "needs one device (tensor_parallel is {})",
               options.device.tensor_parallel);
  }
  backends::Runtime runtime;
  runtime.lowering = backends::make_lowering(options.runtime, options.device);
  options.executor.validate(*runtime.lowering, options.runtime);
  runtime.device = backends::open_device(options.runtime, options.device, options.runtime_options);
  return runtime;
}

}  // namespace

Engine::Engine(ModelFiles model, const EngineOptions& options) : model_(std::move(model)) {
  // The text side is read on another thread while the runtime starts: each takes a noticeable
  // part of a second with a large vocabulary (docs/PERFORMANCE.md, "Loading"). It
  // is joined before any graph is compiled, so a broken tokenizer still fails in seconds.
  std::future<std::optional<ModelText>> text = std::async(std::launch::async, [this] {
    return has_tokenizer(model_) ? std::optional<ModelText>(std::in_place, model_) : std::nullopt;
  });
  backends::Runtime runtime = open_runtime(model_, options);
  text_ = text.get();
  load(std::move(runtime), options);
}

Engine::Engine(ModelFiles model, ModelText text, const EngineOptions& options)
    : model_(std::move(model)), text_(std::move(text)) {
  load(open_runtime(model_, options), options);
}

void Engine::load(backends::Runtime runtime, const EngineOptions& options) {
  executor::ExecutorOptions executor_options = options.executor;
  if (!executor_options.progress) executor_options.progress = options.device.progress;
  // Speculation checks a sequence's newest token and its drafts in one verify call.
  if (options.scheduler.speculation != Speculation::kOff) {
    executor_options.verify_tokens =
        std::max(executor_options.verify_tokens,
                 std::min(options.scheduler.draft_max + 1, executor_options.capacity));
  }
  executor_ = std::make_unique<executor::Executor>(
      std::move(runtime.device), std::move(runtime.lowering), model_, executor_options);
  // The prompt cache's copies compile now, one pair per length of rows they move
  // (executor::slot_rows_windows): a first use mid-serving would stall every stream.
  if (options.scheduler.prompt_cache_bytes > 0) {
    std::vector<models::GraphOptions> slot_graphs;
    for (int64_t rows : executor::slot_rows_windows(executor_options.capacity)) {
      slot_graphs.push_back(executor_->slot_graph(models::GraphKind::kSaveSlot, rows));
      slot_graphs.push_back(executor_->slot_graph(models::GraphKind::kRestoreSlot, rows));
    }
    executor_->prepare(slot_graphs);
  }
  scheduler_ = std::make_unique<Scheduler>(*executor_, text_ ? &text_->tokenizer() : nullptr,
                                           options.scheduler);
}

const ModelText& Engine::text() const {
  if (!text_) fail(model_.path(), "the model has no tokenizer");
  return *text_;
}

RequestOptions Engine::default_request() const {
  RequestOptions request;
  const auto& eos = model_.config().eos_token_ids;
  request.eos_ids.assign(eos.begin(), eos.end());
  return request;
}

grammar::GrammarCompiler& Engine::grammars() {
  std::call_once(grammars_made_, [this] {
    const auto& eos = model_.config().eos_token_ids;
    grammars_ = std::make_unique<grammar::GrammarCompiler>(
        text().tokenizer(), executor_->capabilities().vocab_size,
        std::vector<int32_t>(eos.begin(), eos.end()));
  });
  return *grammars_;
}

}  // namespace xlacel::engine
