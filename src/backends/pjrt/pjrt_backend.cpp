#include "backends/pjrt/pjrt_backend.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <utility>
#include <vector>

#include "backends/pjrt/compile_options_proto.h"
#include "backends/pjrt/pjrt_client.h"
#include "backends/pjrt/pjrt_executable_cache.h"
#include "backends/pjrt/pjrt_open_client.h"
#include "backends/pjrt/pjrt_plugin.h"
#include "common/error.h"
#include "compile_cache/compile_cache.h"
#include "models/weight_layout.h"
#include "models/weight_loader.h"
#include "session/backend_graphs.h"
#include "session/sampler.h"

namespace xlacel::backends {

using pjrt::Buffer;
using session::BackendOptions;
using session::DeviceKind;
using session::StepOutput;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

class PjrtBackend final : public session::Backend {
 public:
  explicit PjrtBackend(const BackendOptions& options);

  const session::Capabilities& capabilities() const override { return capabilities_; }
  const session::LoadReport& load_report() const override { return report_; }

  void prefill_chunk(std::span<const int32_t> bucket_tokens, int32_t start, int32_t valid,
                     bool want_logits, StepOutput& out) override;
  void decode(int32_t token, int32_t position, bool want_logits, StepOutput& out) override;

 private:
  struct Graph {
    models::GraphOptions options;
    pjrt::LoadedExecutable executable;
    std::size_t heads = 0;  // results before the caches: token and/or logits
  };

  std::string label() const {
    return fmt::format("xla backend ({})", session::device_kind_name(options_.device));
  }
  void progress(const std::string& line) const {
    if (options_.progress) options_.progress(line);
  }
  device::DeviceKind device_kind() const {
    return options_.device == DeviceKind::kCuda ? device::DeviceKind::kCuda
                                                : device::DeviceKind::kCpu;
  }
  void open_client();
  void load_graphs();
  void upload_weights();
  void make_caches();
  Buffer scalar(int32_t value) const {
    return client_->upload(&value, pjrt::PJRT_Buffer_Type_S32, {});
  }
  // Runs `graph` on `inputs`, then the weights and caches; the caches are replaced by their
  // updated values. Returns the results before the caches.
  std::vector<Buffer> run(const Graph& graph, std::vector<Buffer> inputs);
  void read_logits(const Buffer& buffer, std::vector<float>& logits) const;
  int32_t read_token(const Buffer& buffer) const;

  BackendOptions options_;
  session::Capabilities capabilities_;
  session::LoadReport report_;
  std::filesystem::path plugin_path_;
  // Declared before what it owns: destroyed after every buffer and executable.
  std::shared_ptr<const pjrt::Client> client_;
  std::optional<Graph> prefill_;
  std::optional<Graph> decode_;
  std::optional<Graph> decode_logits_;
  std::vector<Buffer> weights_;
  std::vector<Buffer> caches_;
  std::vector<pjrt::PJRT_Buffer*> arguments_;  // reused by every call
};

PjrtBackend::PjrtBackend(const BackendOptions& options) : options_(options) {
  if (options_.model == nullptr) fail(label(), "no model given");
  const auto start = Clock::now();
  open_client();
  load_graphs();
  upload_weights();
  make_caches();
  report_.total_seconds = seconds_since(start);

  capabilities_.backend = "xla";
  std::string device =
      fmt::format("{} (PJRT plugin {}, platform {}", session::device_kind_name(options_.device),
                  plugin_path_.filename().string(), client_->platform_name());
  if (options_.device == DeviceKind::kCuda && !client_->device_kind().empty()) {
    device += ", " + client_->device_kind();
  }
  capabilities_.device = device + ")";
  capabilities_.max_sequences = 1;
  capabilities_.capacity = options_.capacity;
  capabilities_.prefill_bucket = options_.prefill_bucket;
  capabilities_.argmax_on_device = decode_.has_value();
  capabilities_.logits = decode_logits_.has_value();
}

void PjrtBackend::open_client() {
  client_ = pjrt::open_client(device_kind(), options_.plugin_path, 0, options_.progress);
  plugin_path_ = client_->plugin().path();
}

void PjrtBackend::load_graphs() {
  const ModelConfig& config = options_.model->config();
  if (!options_.extra_compiler_flags.empty()) {
    fail(label(), "extra compiler flags are not supported by XLA (got '{}')",
         options_.extra_compiler_flags.front());
  }

  const std::string compile_options = pjrt::single_device_compile_options();
  const compile_cache::CompileTarget target =
      pjrt::pjrt_target(*client_, device_kind(), compile_options);
  const std::vector<session::BackendGraph> graphs = session::emit_backend_graphs(options_);
  compile_cache::CompileCache cache(options_.compile_cache_dir);
  std::vector<compile_cache::CompileRequest> requests;
  for (const session::BackendGraph& graph : graphs) {
    requests.push_back({graph.mlir, graph.source, target});
    // Progress goes out from this thread only (the callback need not be thread-safe).
    if (pjrt::will_compile(*client_, cache, requests.back(), compile_options)) {
      progress(fmt::format("xla: compiling {} ...", models::graph_name(graph.options)));
    }
  }
  std::vector<pjrt::ExecutableLoad> loads =
      pjrt::load_executables(*client_, cache, requests, compile_options);

  const std::size_t caches = 2 * static_cast<std::size_t>(config.num_layers);
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    const models::GraphOptions& graph = graphs[i].options;
    pjrt::ExecutableLoad& load = loads[i];
    const std::size_t heads = graph.kind == models::GraphKind::kPrefill ? 2 : 1;
    if (load.executable.num_outputs() != heads + caches) {
      fail(label(), "{}: the executable has {} results, expected {}", graphs[i].source,
           load.executable.num_outputs(), heads + caches);
    }
    for (const std::string& line : load.notes) progress(line);
    report_.graphs.push_back(
        {models::graph_name(graph), load.cached, load.seconds, load.compile_seconds});
    progress(fmt::format("xla: {} {} ({:.2f} s)", models::graph_name(graph),
                         load.cached ? "from cache" : "compiled", load.seconds));
    Graph loaded{graph, std::move(load.executable), heads};
    switch (graph.kind) {
      case models::GraphKind::kPrefill:
        prefill_.emplace(std::move(loaded));
        break;
      case models::GraphKind::kDecode:
        decode_.emplace(std::move(loaded));
        break;
      case models::GraphKind::kDecodeLogits:
        decode_logits_.emplace(std::move(loaded));
        break;
    }
  }
}

void PjrtBackend::upload_weights() {
  const auto start = Clock::now();
  // One tensor at a time: upload() returns once the plugin is done with the host copy, so peak
  // host memory stays at one tensor.
  models::for_each_weight(*options_.model, options_.weights, [&](const models::HostTensor& t) {
    weights_.push_back(
        client_->upload(t.bytes.data(), pjrt::buffer_type(t.spec.element), t.spec.shape));
    report_.weight_bytes += t.bytes.size();
  });
  report_.weights_seconds = seconds_since(start);
  progress(fmt::format("xla: weights uploaded ({:.1f} MiB, {:.2f} s)",
                       static_cast<double>(report_.weight_bytes) / (1 << 20),
                       report_.weights_seconds));
}

void PjrtBackend::make_caches() {
  const ModelConfig& config = options_.model->config();
  const stablehlo::ElementType element = models::cache_element(options_.weights);
  const std::vector<int64_t> shape = {config.num_kv_heads, options_.capacity, config.head_dim};
  const std::size_t bytes = static_cast<std::size_t>(shape[0] * shape[1] * shape[2]) *
                            static_cast<std::size_t>(stablehlo::bit_width(element) / 8);
  const std::vector<std::byte> zeros(bytes);
  for (int64_t i = 0; i < 2 * config.num_layers; ++i) {
    caches_.push_back(client_->upload(zeros.data(), pjrt::buffer_type(element), shape));
  }
}

std::vector<Buffer> PjrtBackend::run(const Graph& graph, std::vector<Buffer> inputs) {
  arguments_.clear();
  for (const Buffer& input : inputs) arguments_.push_back(input.get());
  for (const Buffer& weight : weights_) arguments_.push_back(weight.get());
  for (const Buffer& cache : caches_) arguments_.push_back(cache.get());
  std::vector<Buffer> results = graph.executable.execute(arguments_);
  // The caches were donated to the call (aliased to results): their old handles only need
  // destroying, which the move-assignment does.
  for (std::size_t i = 0; i < caches_.size(); ++i) {
    caches_[i] = std::move(results[graph.heads + i]);
  }
  results.resize(graph.heads);
  return results;
}

int32_t PjrtBackend::read_token(const Buffer& buffer) const {
  int32_t token = -1;
  buffer.to_host(&token, sizeof(token));
  return token;
}

void PjrtBackend::read_logits(const Buffer& buffer, std::vector<float>& logits) const {
  logits.resize(static_cast<std::size_t>(options_.model->config().vocab_size));
  buffer.to_host(logits.data(), logits.size() * sizeof(float));
}

void PjrtBackend::prefill_chunk(std::span<const int32_t> bucket_tokens, int32_t start,
                                int32_t valid, bool want_logits, StepOutput& out) {
  const int64_t bucket = options_.prefill_bucket;
  if (static_cast<int64_t>(bucket_tokens.size()) != bucket) {
    fail(label(), "prefill needs {} tokens, got {}", bucket, bucket_tokens.size());
  }
  if (start < 0 || start + bucket > options_.capacity || valid < 1 || valid > bucket) {
    fail(label(), "prefill chunk at {} with {} valid tokens does not fit (bucket {}, capacity {})",
         start, valid, bucket, options_.capacity);
  }
  std::vector<Buffer> inputs;
  const int64_t dims[] = {bucket};
  inputs.push_back(client_->upload(bucket_tokens.data(), pjrt::PJRT_Buffer_Type_S32, dims));
  inputs.push_back(scalar(start));
  inputs.push_back(scalar(valid));
  std::vector<Buffer> results = run(*prefill_, std::move(inputs));
  out.token = read_token(results[0]);
  if (want_logits) {
    read_logits(results[1], out.logits);
  } else {
    out.logits.clear();
  }
}

void PjrtBackend::decode(int32_t token, int32_t position, bool want_logits, StepOutput& out) {
  if (position < 0 || position >= options_.capacity) {
    fail(label(), "decode position {} is outside the KV cache (capacity {})", position,
         options_.capacity);
  }
  const Graph* graph =
      want_logits ? (decode_logits_ ? &*decode_logits_ : nullptr) : (decode_ ? &*decode_ : nullptr);
  if (graph == nullptr) {
    fail(label(), "{} graph not loaded", want_logits ? "decode-logits" : "decode");
  }
  std::vector<Buffer> inputs;
  const int64_t dims[] = {1};
  inputs.push_back(client_->upload(&token, pjrt::PJRT_Buffer_Type_S32, dims));
  inputs.push_back(scalar(position));
  std::vector<Buffer> results = run(*graph, std::move(inputs));
  if (want_logits) {
    read_logits(results[0], out.logits);
    out.token = session::argmax(out.logits);
  } else {
    out.token = read_token(results[0]);
    out.logits.clear();
  }
}

}  // namespace

std::unique_ptr<session::Backend> open_pjrt_backend(const BackendOptions& options) {
  return std::make_unique<PjrtBackend>(options);
}

}  // namespace xlacel::backends
