#include "backends/iree/iree_backend.h"

#include <fmt/format.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cstring>
#include <future>
#include <utility>

#include "backends/iree/embedded_python.h"
#include "backends/iree/iree_runner_py.h"
#include "common/error.h"
#include "compile_cache/compile_cache.h"
#include "compile_cache/iree_compiler.h"
#include "models/weight_layout.h"
#include "models/weight_loader.h"
#include "session/backend_graphs.h"
#include "session/sampler.h"

namespace xlacel::backends {

namespace py = pybind11;
using session::BackendOptions;
using session::DeviceKind;
using session::StepOutput;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void copy_logits(const py::handle& array, std::vector<float>& logits) {
  auto values = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(array);
  if (!values) fail("iree backend", "logits are not a float32 array");
  logits.resize(static_cast<std::size_t>(values.size()));
  std::memcpy(logits.data(), values.data(), logits.size() * sizeof(float));
}

// In an anonymous namespace: it holds pybind11 objects, whose types have hidden visibility.
class IreeBackend final : public session::Backend {
 public:
  explicit IreeBackend(const BackendOptions& options);
  ~IreeBackend() override;

  const session::Capabilities& capabilities() const override { return capabilities_; }
  const session::LoadReport& load_report() const override { return report_; }

  void prefill_chunk(std::span<const int32_t> bucket_tokens, int32_t start, int32_t valid,
                     bool want_logits, StepOutput& out) override;
  void decode(int32_t token, int32_t position, bool want_logits, StepOutput& out) override;

 private:
  void progress(const std::string& line) const {
    if (options_.progress) options_.progress(line);
  }
  // Compiles (or finds in the cache) every graph, two compiles at a time.
  std::vector<std::pair<models::GraphOptions, compile_cache::CompileResult>> compile_graphs();
  void upload_weights();

  BackendOptions options_;
  session::Capabilities capabilities_;
  session::LoadReport report_;
  py::object runner_;
  py::object prefill_;
  py::object decode_;
  py::object decode_logits_;
};

IreeBackend::IreeBackend(const BackendOptions& options) : options_(options) {
  if (options_.model == nullptr) fail("iree backend", "no model given");
  const auto start = Clock::now();
  ensure_python_with_iree_runtime();  // before compiling: a missing runtime fails fast
  const char* driver = options_.device == DeviceKind::kCuda ? "cuda" : "local-task";
  try {
    py::module_ module = load_python_module("xlacel_iree_runner", kIreeRunnerPython);
    try {
      runner_ = module.attr("Runner")(driver);  // opens the device, so a missing GPU fails fast
    } catch (const py::error_already_set& e) {
      fail("iree backend", "cannot open IREE device '{}': {}", driver, one_line(e));
    }
    auto compiled = compile_graphs();
    for (auto& [graph, result] : compiled) {
      const auto load_start = Clock::now();
      runner_.attr("load_module")(models::graph_kind_name(graph.kind), result.artifact.string(),
                                  models::module_name(graph.kind));
      report_.graphs.push_back({models::graph_name(graph), result.hit,
                                result.seconds + seconds_since(load_start),
                                result.compile_seconds});
    }
    upload_weights();
    prefill_ = runner_.attr("prefill");
    decode_ = runner_.attr("decode");
    decode_logits_ = runner_.attr("decode_logits");
  } catch (const py::error_already_set& e) {
    fail("iree backend", "{}", one_line(e));
  }
  report_.total_seconds = seconds_since(start);

  capabilities_.backend = "iree";
  capabilities_.device = options_.device == DeviceKind::kCuda
                             ? fmt::format("cuda ({}, IREE cuda driver)",
                                           options_.cuda_sm.empty() ? "sm_80" : options_.cuda_sm)
                             : "cpu (llvm-cpu for this CPU, IREE local-task driver)";
  capabilities_.max_sequences = 1;
  capabilities_.capacity = options_.capacity;
  capabilities_.prefill_bucket = options_.prefill_bucket;
  capabilities_.argmax_on_device = options_.argmax_graph;
  capabilities_.logits = options_.logits_graph;
}

IreeBackend::~IreeBackend() {
  // Drop the Python objects while the interpreter is certainly up (it is never finalized).
  py::gil_scoped_acquire gil;
  prefill_ = decode_ = decode_logits_ = runner_ = py::object();
}

std::vector<std::pair<models::GraphOptions, compile_cache::CompileResult>>
IreeBackend::compile_graphs() {
  const std::vector<session::BackendGraph> graphs = session::emit_backend_graphs(options_);

  compile_cache::IreeTargetOptions target_options;
  target_options.backend = options_.device == DeviceKind::kCuda ? "cuda" : "llvm-cpu";
  if (!options_.cuda_sm.empty()) target_options.cuda_sm = options_.cuda_sm;
  compile_cache::CompileTarget target = compile_cache::iree_target(target_options);
  for (const std::string& flag : options_.extra_compiler_flags) target.flags.push_back(flag);

  compile_cache::IreeCompiler compiler = compile_cache::IreeCompiler::from_environment();
  compile_cache::CompileCache cache(options_.compile_cache_dir);
  auto compile_one = [&](std::size_t i) {
    compile_cache::CompileRequest request{graphs[i].mlir, graphs[i].source, target};
    if (!cache.lookup(compiler, request)) {
      progress(fmt::format("iree: compiling {} for {} ...", models::graph_name(graphs[i].options),
                           target.name));
    }
    return cache.get_or_compile(compiler, request);
  };
  // Two at a time: iree-compile mostly uses one core.
  std::vector<std::pair<models::GraphOptions, compile_cache::CompileResult>> results;
  for (std::size_t i = 0; i < graphs.size(); i += 2) {
    std::future<compile_cache::CompileResult> second;
    if (i + 1 < graphs.size()) second = std::async(std::launch::async, compile_one, i + 1);
    compile_cache::CompileResult first = compile_one(i);
    results.emplace_back(graphs[i].options, std::move(first));
    if (second.valid()) results.emplace_back(graphs[i + 1].options, second.get());
  }
  for (const auto& [graph, result] : results) {
    progress(fmt::format("iree: {} {} ({:.2f} s)", models::graph_name(graph),
                         result.hit ? "from cache" : "compiled",
                         result.hit ? result.seconds : result.compile_seconds));
  }
  return results;
}

void IreeBackend::upload_weights() {
  const auto start = Clock::now();
  models::for_each_weight(*options_.model, options_.weights, [&](const models::HostTensor& t) {
    py::memoryview bytes =
        py::memoryview::from_memory(t.bytes.data(), static_cast<py::ssize_t>(t.bytes.size()));
    runner_.attr("add_weight")(bytes, std::string(stablehlo::to_string(t.spec.element)),
                               py::cast(t.spec.shape));
    report_.weight_bytes += t.bytes.size();
  });
  const ModelConfig& config = options_.model->config();
  std::vector<int64_t> cache_shape = {config.num_kv_heads, options_.capacity, config.head_dim};
  runner_.attr("make_caches")(
      2 * config.num_layers, py::cast(cache_shape),
      std::string(stablehlo::to_string(models::cache_element(options_.weights))));
  report_.weights_seconds = seconds_since(start);
  progress(fmt::format("iree: weights uploaded ({:.1f} MiB, {:.2f} s)",
                       static_cast<double>(report_.weight_bytes) / (1 << 20),
                       report_.weights_seconds));
}

void IreeBackend::prefill_chunk(std::span<const int32_t> bucket_tokens, int32_t start,
                                int32_t valid, bool want_logits, StepOutput& out) {
  if (static_cast<int64_t>(bucket_tokens.size()) != options_.prefill_bucket) {
    fail("iree backend", "prefill needs {} tokens, got {}", options_.prefill_bucket,
         bucket_tokens.size());
  }
  try {
    py::memoryview tokens = py::memoryview::from_memory(
        bucket_tokens.data(), static_cast<py::ssize_t>(bucket_tokens.size_bytes()));
    py::tuple result = prefill_(tokens, start, valid, want_logits);
    out.token = result[0].cast<int32_t>();
    if (want_logits) {
      copy_logits(result[1], out.logits);
    } else {
      out.logits.clear();
    }
  } catch (const py::error_already_set& e) {
    fail("iree backend", "prefill: {}", one_line(e));
  }
}

void IreeBackend::decode(int32_t token, int32_t position, bool want_logits, StepOutput& out) {
  try {
    if (want_logits) {
      if (!options_.logits_graph) fail("iree backend", "decode-logits graph not loaded");
      copy_logits(decode_logits_(token, position), out.logits);
      out.token = session::argmax(out.logits);
    } else {
      if (!options_.argmax_graph) fail("iree backend", "decode graph not loaded");
      out.token = decode_(token, position).cast<int32_t>();
      out.logits.clear();
    }
  } catch (const py::error_already_set& e) {
    fail("iree backend", "decode: {}", one_line(e));
  }
}

}  // namespace

std::unique_ptr<session::Backend> open_iree_backend(const BackendOptions& options) {
  return std::make_unique<IreeBackend>(options);
}

}  // namespace xlacel::backends
