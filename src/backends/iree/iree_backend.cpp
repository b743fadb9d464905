#include "backends/iree/iree_backend.h"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <utility>

#include "backends/iree/iree_device.h"
#include "common/error.h"
#include "models/weight_layout.h"
#include "models/weight_loader.h"
#include "session/backend_graphs.h"
#include "session/sampler.h"

namespace xlacel::backends {

using session::BackendOptions;
using session::StepOutput;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The Llama graphs over an IREE device::Device, until the executor replaces this adapter: the
// weights and caches stay on the device, the caches are donated and replaced by each call's
// results.
class IreeBackend final : public session::Backend {
 public:
  explicit IreeBackend(const BackendOptions& options);

  const session::Capabilities& capabilities() const override { return capabilities_; }
  const session::LoadReport& load_report() const override { return report_; }

  void prefill_chunk(std::span<const int32_t> bucket_tokens, int32_t start, int32_t valid,
                     bool want_logits, StepOutput& out) override;
  void decode(int32_t token, int32_t position, bool want_logits, StepOutput& out) override;

 private:
  device::BufferPtr i32(std::span<const int32_t> values, std::span<const int64_t> shape) {
    return device_->upload(std::as_bytes(values), stablehlo::ElementType::kI32, shape);
  }
  // Runs `executable` on `inputs`, the weights and the caches; the caches are replaced by their
  // updated values. Returns the results before the caches.
  std::vector<device::BufferPtr> run(device::Executable& executable,
                                     std::vector<device::BufferPtr> inputs);
  int32_t read_token(const device::Buffer& buffer);
  void read_logits(const device::Buffer& buffer, std::vector<float>& logits);

  BackendOptions options_;
  session::Capabilities capabilities_;
  session::LoadReport report_;
  std::unique_ptr<device::Device> device_;
  std::unique_ptr<device::Executable> prefill_, decode_, decode_logits_;
  std::vector<device::BufferPtr> weights_;
  std::vector<device::BufferPtr> caches_;
};

IreeBackend::IreeBackend(const BackendOptions& options) : options_(options) {
  if (options_.model == nullptr) fail("iree backend", "no model given");
  const auto start = Clock::now();
  device::DeviceOptions device_options;
  device_options.kind = options_.device == session::DeviceKind::kCuda ? device::DeviceKind::kCuda
                                                                      : device::DeviceKind::kCpu;
  device_options.compile_cache_dir = options_.compile_cache_dir;
  device_options.progress = options_.progress;
  device_ = open_iree_device(device_options, {options_.cuda_sm, options_.extra_compiler_flags});

  std::vector<device::GraphSource> sources;
  const std::vector<session::BackendGraph> graphs = session::emit_backend_graphs(options_);
  for (const session::BackendGraph& graph : graphs) {
    sources.push_back({models::graph_name(graph.options), graph.mlir,
                       models::module_name(graph.options.kind), graph.source});
  }
  std::vector<device::GraphLoad> loads;
  std::vector<std::unique_ptr<device::Executable>> executables = device_->load(sources, loads);
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    report_.graphs.push_back(
        {loads[i].graph, loads[i].cached, loads[i].seconds, loads[i].compile_seconds});
    switch (graphs[i].options.kind) {
      case models::GraphKind::kPrefill:
        prefill_ = std::move(executables[i]);
        break;
      case models::GraphKind::kDecode:
        decode_ = std::move(executables[i]);
        break;
      case models::GraphKind::kDecodeLogits:
        decode_logits_ = std::move(executables[i]);
        break;
    }
  }

  const auto weights_start = Clock::now();
  models::for_each_weight(*options_.model, options_.weights, [&](const models::HostTensor& t) {
    weights_.push_back(device_->upload(t.bytes, t.spec.element, t.spec.shape));
    report_.weight_bytes += t.bytes.size();
  });
  const ModelConfig& config = options_.model->config();
  const int64_t cache_shape[] = {config.num_kv_heads, options_.capacity, config.head_dim};
  for (int64_t i = 0; i < 2 * config.num_layers; ++i) {
    caches_.push_back(device_->zeros(models::cache_element(options_.weights), cache_shape));
  }
  report_.weights_seconds = seconds_since(weights_start);
  if (options_.progress) {
    options_.progress(fmt::format("iree: weights uploaded ({:.1f} MiB, {:.2f} s)",
                                  static_cast<double>(report_.weight_bytes) / (1 << 20),
                                  report_.weights_seconds));
  }
  report_.total_seconds = seconds_since(start);

  capabilities_.backend = "iree";
  capabilities_.device = device_->description();
  capabilities_.max_sequences = 1;
  capabilities_.capacity = options_.capacity;
  capabilities_.prefill_bucket = options_.prefill_bucket;
  capabilities_.argmax_on_device = options_.argmax_graph;
  capabilities_.logits = options_.logits_graph;
}

std::vector<device::BufferPtr> IreeBackend::run(device::Executable& executable,
                                                std::vector<device::BufferPtr> inputs) {
  std::vector<device::Buffer*> arguments;
  for (const auto& input : inputs) arguments.push_back(input.get());
  for (const auto& weight : weights_) arguments.push_back(weight.get());
  for (const auto& cache : caches_) arguments.push_back(cache.get());
  std::vector<device::BufferPtr> results = device_->execute(executable, arguments);
  const std::size_t heads = results.size() - caches_.size();
  for (std::size_t i = 0; i < caches_.size(); ++i) caches_[i] = std::move(results[heads + i]);
  results.resize(heads);
  return results;
}

int32_t IreeBackend::read_token(const device::Buffer& buffer) {
  int32_t token = -1;
  device_->read(buffer, std::as_writable_bytes(std::span(&token, 1)));
  return token;
}

void IreeBackend::read_logits(const device::Buffer& buffer, std::vector<float>& logits) {
  logits.resize(static_cast<std::size_t>(options_.model->config().vocab_size));
  device_->read(buffer, std::as_writable_bytes(std::span(logits)));
}

void IreeBackend::prefill_chunk(std::span<const int32_t> bucket_tokens, int32_t start,
                                int32_t valid, bool want_logits, StepOutput& out) {
  if (static_cast<int64_t>(bucket_tokens.size()) != options_.prefill_bucket) {
    fail("iree backend", "prefill needs {} tokens, got {}", options_.prefill_bucket,
         bucket_tokens.size());
  }
  std::vector<device::BufferPtr> inputs;
  const int64_t bucket[] = {options_.prefill_bucket};
  inputs.push_back(i32(bucket_tokens, bucket));
  inputs.push_back(i32(std::span(&start, 1), {}));
  inputs.push_back(i32(std::span(&valid, 1), {}));
  std::vector<device::BufferPtr> results = run(*prefill_, std::move(inputs));
  out.token = read_token(*results[0]);
  if (want_logits) {
    read_logits(*results[1], out.logits);
  } else {
    out.logits.clear();
  }
}

void IreeBackend::decode(int32_t token, int32_t position, bool want_logits, StepOutput& out) {
  device::Executable* graph = want_logits ? decode_logits_.get() : decode_.get();
  if (graph == nullptr) {
    fail("iree backend", "{} graph not loaded", want_logits ? "decode-logits" : "decode");
  }
  std::vector<device::BufferPtr> inputs;
  const int64_t one[] = {1};
  inputs.push_back(i32(std::span(&token, 1), one));
  inputs.push_back(i32(std::span(&position, 1), {}));
  std::vector<device::BufferPtr> results = run(*graph, std::move(inputs));
  if (want_logits) {
    read_logits(*results[0], out.logits);
    out.token = session::argmax(out.logits);
  } else {
    out.token = read_token(*results[0]);
    out.logits.clear();
  }
}

}  // namespace

std::unique_ptr<session::Backend> open_iree_backend(const BackendOptions& options) {
  return std::make_unique<IreeBackend>(options);
}

}  // namespace xlacel::backends
