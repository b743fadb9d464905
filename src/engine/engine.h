#pragma once
// What the CLI and a server share: one model loaded on one runtime, its text side (tokenizer,
// chat template) loaded once, the executor holding weights and the slot KV cache, and the
// scheduler that batches requests over it.
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "backends/backends.h"
#include "device/device.h"
#include "engine/model_text.h"
#include "engine/request.h"
#include "engine/scheduler.h"
#include "executor/executor.h"
#include "grammar/grammar_compiler.h"
#include "model_files/model_files.h"

namespace xlacel::engine {

struct EngineOptions {
  std::string runtime = "iree";  // backends::runtime_names()
  device::DeviceOptions device;
  backends::RuntimeOptions runtime_options;
  executor::ExecutorOptions executor;
  SchedulerOptions scheduler;
};

class Engine {
 public:
  // Loads everything; Error naming the problem (missing runtime, unsupported model, ...).
  // `text` is the model's text side when the caller loaded it already (to size the context).
  Engine(ModelFiles model, ModelText text, const EngineOptions& options);
  Engine(ModelFiles model, const EngineOptions& options);

  const ModelFiles& model() const { return model_; }
  // The model's tokenizer and template; Error naming the model when it has no tokenizer (a
  // model without one still runs on token ids).
  const ModelText& text() const;
  executor::Executor& executor() { return *executor_; }
  Scheduler& scheduler() { return *scheduler_; }

  // Request options with the model's end-of-sequence ids.
  RequestOptions default_request() const;

  // The model's grammar compiler (constrained decoding), made on first use from its tokenizer;
  // Error naming the model when it has none. Callable from any thread.
  grammar::GrammarCompiler& grammars();

 private:
  void load(backends::Runtime runtime, const EngineOptions& options);

  ModelFiles model_;
  std::optional<ModelText> text_;
  std::unique_ptr<executor::Executor> executor_;
  std::unique_ptr<Scheduler> scheduler_;
  std::once_flag grammars_made_;
  std::unique_ptr<grammar::GrammarCompiler> grammars_;
};

}  // namespace xlacel::engine
