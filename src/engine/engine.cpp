#include "engine/engine.h"

#include <future>

#include "common/error.h"

namespace xlacel::engine {

namespace {

std::unique_ptr<device::Device> open_device(const EngineOptions& options) {
  return backends::open_device(options.runtime, options.device, options.runtime_options);
}

}  // namespace

Engine::Engine(ModelFiles model, const EngineOptions& options) : model_(std::move(model)) {
  // The text side is read on another thread while the runtime starts: each takes ~0.1 s of one
  // core with a 128k-token vocabulary (a 1B model's server start to ready ~0.08 s sooner). It
  // is joined before any graph is compiled, so a broken tokenizer still fails in seconds.
  std::future<std::optional<ModelText>> text = std::async(std::launch::async, [this] {
    return has_tokenizer(model_) ? std::optional<ModelText>(std::in_place, model_) : std::nullopt;
  });
  std::unique_ptr<device::Device> device = open_device(options);
  text_ = text.get();
  load(std::move(device), options);
}

Engine::Engine(ModelFiles model, ModelText text, const EngineOptions& options)
    : model_(std::move(model)), text_(std::move(text)) {
  load(open_device(options), options);
}

void Engine::load(std::unique_ptr<device::Device> device, const EngineOptions& options) {
  executor::ExecutorOptions executor_options = options.executor;
  if (!executor_options.progress) executor_options.progress = options.device.progress;
  executor_ = std::make_unique<executor::Executor>(std::move(device), model_, executor_options);
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
