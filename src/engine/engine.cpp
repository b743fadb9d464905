#include "engine/engine.h"

#include "common/error.h"

namespace xlacel::engine {

Engine::Engine(ModelFiles model, const EngineOptions& options) : model_(std::move(model)) {
  if (has_tokenizer(model_)) text_.emplace(model_);
  load(options);
}

Engine::Engine(ModelFiles model, ModelText text, const EngineOptions& options)
    : model_(std::move(model)), text_(std::move(text)) {
  load(options);
}

void Engine::load(const EngineOptions& options) {
  executor::ExecutorOptions executor_options = options.executor;
  if (!executor_options.progress) executor_options.progress = options.device.progress;
  executor_ = std::make_unique<executor::Executor>(
      backends::open_device(options.runtime, options.device, options.runtime_options), model_,
      executor_options);
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
