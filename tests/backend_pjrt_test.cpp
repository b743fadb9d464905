// The XLA backend (src/backends/pjrt) driven directly through session::Backend: a PJRT CPU
// plugin from the project venv (xla-cpu-pjrt, scripts/requirements.txt) compiles the emitted
// graphs, and the greedy tokens must equal HF transformers' (tests/data/models/*_reference.json)
// for every step; teacher-forced decode-logits must lie within kLogitTolerance of HF's logits
// (see models_llama_test.cpp for why 2e-3). Prompts longer than the prefill bucket are prefilled
// in chunks, by the re-feed rule of models/graph_options.h. Tests skip (with the reason) when
// the plugin or the default model is missing; the CUDA test skips only on a machine without a
// GPU. Executables are cached under the scratch dir, never in the user's cache.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/pjrt/compile_options_proto.h"
#include "backends/pjrt/pjrt_backend.h"
#include "backends/pjrt/pjrt_client.h"
#include "backends/pjrt/pjrt_plugin.h"
#include "common/error.h"
#include "model_files/model_files.h"
#include "models/test_support.h"
#include "scoped_env.h"
#include "session/backend.h"
#include "test_paths.h"

namespace xlacel::backends {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using session::Backend;
using session::BackendOptions;
using session::DeviceKind;
using session::StepOutput;

constexpr double kLogitTolerance = 2e-3;

using testing::ScopedEnv;

// The CPU plugin the backend would use, or the reason there is none.
std::optional<std::string> missing_cpu_plugin() {
  try {
    pjrt::find_plugin(DeviceKind::kCpu, "");
    return std::nullopt;
  } catch (const Error& e) {
    return std::string(e.what());
  }
}

#define XLACEL_REQUIRE_PJRT_CPU_PLUGIN()                             \
  if (auto missing = missing_cpu_plugin()) GTEST_SKIP() << *missing; \
  ScopedEnv scoped_cache("XLACEL_CACHE", testing::scratch_dir("backend_pjrt/cache").c_str())

json read_json(const fs::path& path) {
  return json::parse(testing::read_text(path));
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Prefills `prompt` in chunks of the backend's bucket (a last chunk that would overrun the
// capacity re-feeds earlier tokens), as Session does. Returns the last chunk's output.
StepOutput prefill(Backend& backend, const std::vector<int32_t>& prompt, bool want_logits) {
  const auto& caps = backend.capabilities();
  const int64_t bucket = caps.prefill_bucket;
  const int64_t total = static_cast<int64_t>(prompt.size());
  StepOutput out;
  int64_t start = 0;
  while (start < total) {
    int64_t chunk_start = start;
    if (chunk_start + bucket > caps.capacity) chunk_start = std::max<int64_t>(0, total - bucket);
    const int64_t valid = std::min(bucket, total - chunk_start);
    std::vector<int32_t> tokens(static_cast<std::size_t>(bucket), 0);
    std::copy_n(prompt.begin() + chunk_start, valid, tokens.begin());
    backend.prefill_chunk(tokens, static_cast<int32_t>(chunk_start), static_cast<int32_t>(valid),
                          want_logits, out);
    start = chunk_start + valid;
  }
  return out;
}

struct GreedyRun {
  std::vector<int32_t> tokens;
  double prefill_seconds = 0;
  double decode_ms_per_step = 0;
};

GreedyRun greedy(Backend& backend, const std::vector<int32_t>& prompt, int steps) {
  GreedyRun run;
  auto start = std::chrono::steady_clock::now();
  StepOutput out = prefill(backend, prompt, false);
  run.prefill_seconds = seconds_since(start);
  run.tokens.push_back(out.token);
  start = std::chrono::steady_clock::now();
  for (int step = 1; step < steps; ++step) {
    backend.decode(out.token, static_cast<int32_t>(prompt.size()) + step - 1, false, out);
    run.tokens.push_back(out.token);
  }
  run.decode_ms_per_step = 1000 * seconds_since(start) / std::max(1, steps - 1);
  return run;
}

std::size_t matching_prefix(const std::vector<int32_t>& got, const std::vector<int32_t>& want) {
  std::size_t n = 0;
  while (n < got.size() && n < want.size() && got[n] == want[n]) ++n;
  return n;
}

// Greedy tokens of every reference prompt (the first `steps` of each; all when 0).
void check_greedy(Backend& backend, const json& reference, const std::string& label,
                  std::size_t steps = 0) {
  for (const json& p : reference["prompts"]) {
    auto prompt = p["prompt_ids"].get<std::vector<int32_t>>();
    auto want = p["output_ids"].get<std::vector<int32_t>>();
    if (steps != 0) want.resize(std::min(steps, want.size()));
    GreedyRun run = greedy(backend, prompt, static_cast<int>(want.size()));
    const std::size_t matched = matching_prefix(run.tokens, want);
    EXPECT_EQ(run.tokens, want) << label << " " << p["name"].get<std::string>()
                                << ": greedy tokens differ from HF's at step " << matched;
    std::cout << fmt::format(
        "{} {}: {} prompt tokens, {}/{} greedy tokens match HF, prefill {:.3f} s, decode "
        "{:.2f} ms/step\n",
        label, p["name"].get<std::string>(), prompt.size(), matched, want.size(),
        run.prefill_seconds, run.decode_ms_per_step);
  }
}

// Teacher-forced logits of one reference prompt at HF's top ids of each step; returns the max
// |diff|.
double check_logits(Backend& backend, const json& p, const std::string& label) {
  auto prompt = p["prompt_ids"].get<std::vector<int32_t>>();
  auto forced = p["output_ids"].get<std::vector<int32_t>>();
  double max_diff = 0;
  std::size_t worst_step = 0;
  StepOutput out = prefill(backend, prompt, true);
  for (std::size_t step = 0; step < p["steps"].size(); ++step) {
    if (step > 0) {
      backend.decode(forced[step - 1], static_cast<int32_t>(prompt.size() + step - 1), true, out);
    }
    EXPECT_EQ(out.token, forced[step]) << label << " step " << step << ": argmax differs";
    const json& top = p["steps"][step]["top"];
    auto ids = top["ids"].get<std::vector<int64_t>>();
    auto values = top["values"].get<std::vector<double>>();
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const double diff = std::abs(out.logits.at(static_cast<std::size_t>(ids[i])) - values[i]);
      if (!(diff <= max_diff)) {
        max_diff = diff;
        worst_step = step;
      }
    }
  }
  EXPECT_LE(max_diff, kLogitTolerance) << label << " (worst at step " << worst_step << ")";
  std::cout << fmt::format("{} {}: max |logit diff| vs HF {:.3g} over {} steps (step {})\n", label,
                           p["name"].get<std::string>(), max_diff, p["steps"].size(), worst_step);
  return max_diff;
}

void print_load(const Backend& backend, const std::string& label) {
  const auto& caps = backend.capabilities();
  const auto& report = backend.load_report();
  std::cout << label << ": " << caps.backend << " on " << caps.device << "\n";
  for (const auto& graph : report.graphs) {
    std::cout << fmt::format("{}: {} {} in {:.2f} s (compile {:.2f} s)\n", label, graph.graph,
                             graph.cached ? "from cache" : "compiled", graph.seconds,
                             graph.compile_seconds);
  }
  std::cout << fmt::format("{}: weights {:.1f} MiB uploaded in {:.2f} s; loaded in {:.2f} s\n",
                           label, static_cast<double>(report.weight_bytes) / (1 << 20),
                           report.weights_seconds, report.total_seconds);
}

BackendOptions tiny_options(const ModelFiles& files) {
  BackendOptions options;
  options.model = &files;
  options.capacity = 256;
  options.prefill_bucket = 16;  // prompts of 17, 70 and 150 tokens take 2, 5 and 10 chunks
  options.argmax_graph = true;
  options.logits_graph = true;
  return options;
}

ModelFiles open_tiny() {
  return ModelFiles::open(testing::test_data("models/tiny_llama3").string());
}

// --- errors

std::string open_error(const BackendOptions& options) {
  try {
    open_pjrt_backend(options);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(PjrtBackendErrors, BadPluginPathNamesThePath) {
  ModelFiles files = open_tiny();
  BackendOptions options = tiny_options(files);
  options.plugin_path = "/nonexistent/dir/pjrt_plugin.so";
  const std::string message = open_error(options);
  EXPECT_NE(message.find("/nonexistent/dir/pjrt_plugin.so"), std::string::npos) << message;
  EXPECT_NE(message.find("no such file"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(PjrtBackendErrors, TextFileIsNotAPlugin) {
  ModelFiles files = open_tiny();
  fs::path text = testing::scratch_dir("backend_pjrt") / "not_a_plugin.so";
  testing::write_text(text, "hello, I am not a shared library\n");
  BackendOptions options = tiny_options(files);
  options.plugin_path = text.string();
  const std::string message = open_error(options);
  EXPECT_NE(message.find(text.string()), std::string::npos) << message;
  EXPECT_NE(message.find("not a loadable PJRT plugin"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(PjrtBackendErrors, SharedLibraryWithoutGetPjrtApiIsNotAPlugin) {
  ModelFiles files = open_tiny();
  std::optional<fs::path> library;
  for (const char* candidate : {"/lib/x86_64-linux-gnu/libm.so.6",
                                "/lib/aarch64-linux-gnu/libm.so.6", "/usr/lib64/libm.so.6"}) {
    if (fs::exists(candidate)) library = candidate;
  }
  if (!library) GTEST_SKIP() << "no libm.so.6 at the usual paths to use as a non-plugin";
  BackendOptions options = tiny_options(files);
  options.plugin_path = library->string();
  const std::string message = open_error(options);
  EXPECT_NE(message.find("no GetPjrtApi symbol"), std::string::npos) << message;
}

TEST(PjrtBackendErrors, MissingVenvPluginNamesThePipPackage) {
  ModelFiles files = open_tiny();
  fs::path empty_venv = testing::scratch_dir("backend_pjrt/empty-venv");
  ScopedEnv venv("XLACEL_VENV", empty_venv.c_str());
  ScopedEnv plugin("XLACEL_PJRT_PLUGIN", std::nullopt);
  const std::string message = open_error(tiny_options(files));
  EXPECT_NE(message.find("xla backend (cpu)"), std::string::npos) << message;
  EXPECT_NE(message.find(pjrt::kCpuPluginPackage), std::string::npos) << message;
  EXPECT_NE(message.find("--plugin PATH"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(PjrtBackendErrors, CpuPluginRejectsCudaDevice) {
  XLACEL_REQUIRE_PJRT_CPU_PLUGIN();
  ModelFiles files = open_tiny();
  BackendOptions options = tiny_options(files);
  options.device = DeviceKind::kCuda;
  options.plugin_path = pjrt::find_plugin(DeviceKind::kCpu, "").path.string();
  const std::string message = open_error(options);
  EXPECT_NE(message.find("platform 'cpu', not cuda"), std::string::npos) << message;
}

// --- compile options

TEST(PjrtCompileOptions, WireFormat) {
  pjrt::ProtoWriter writer;
  writer.varint_field(1, 300);  // key (1 << 3 | 0), then 300 as the varint ac 02
  writer.bytes_field(2, "hi");  // key (2 << 3 | 2), length, bytes
  EXPECT_EQ(writer.bytes(), std::string("\x08\xac\x02\x12\x02hi", 7));
  // executable_build_options (3) {num_replicas (4): 1, num_partitions (5): 1}, then the
  // env_option_overrides (7) entries.
  const std::string options = pjrt::single_device_compile_options();
  EXPECT_EQ(options.substr(0, 6), std::string("\x1a\x04\x20\x01\x28\x01", 6));
  EXPECT_NE(options.find("xla_cpu_enable_fast_min_max"), std::string::npos);
  EXPECT_NE(options.find("xla_gpu_enable_fast_min_max"), std::string::npos);
}

// --- the plugin directly

// With the compile options we pass (no debug options: XLA's defaults), stablehlo.maximum and
// minimum propagate NaN as the StableHLO spec says; the graphs' softmax max relies on it.
TEST(PjrtPlugin, MaxAndMinPropagateNaN) {
  if (auto missing = missing_cpu_plugin()) GTEST_SKIP() << *missing;
  auto plugin = pjrt::Plugin::load(pjrt::find_plugin(DeviceKind::kCpu, "").path);
  pjrt::Client client(plugin);
  const std::string mlir = R"(module @nan_check {
  func.func public @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
    %0 = stablehlo.maximum %a, %b : tensor<2xf32>
    %1 = stablehlo.minimum %a, %b : tensor<2xf32>
    return %0, %1 : tensor<2xf32>, tensor<2xf32>
  }
})";
  pjrt::LoadedExecutable executable = client.compile(mlir, pjrt::single_device_compile_options());
  ASSERT_EQ(executable.num_outputs(), 2u);
  const float a[] = {std::nanf(""), 1.0f};
  const float b[] = {1.0f, std::nanf("")};
  const int64_t dims[] = {2};
  pjrt::Buffer x = client.upload(a, pjrt::PJRT_Buffer_Type_F32, dims);
  pjrt::Buffer y = client.upload(b, pjrt::PJRT_Buffer_Type_F32, dims);
  pjrt::PJRT_Buffer* arguments[] = {x.get(), y.get()};
  std::vector<pjrt::Buffer> results = executable.execute(arguments);
  for (const pjrt::Buffer& result : results) {
    float values[2] = {0, 0};
    result.to_host(values, sizeof(values));
    EXPECT_TRUE(std::isnan(values[0]) && std::isnan(values[1])) << values[0] << ", " << values[1];
  }
}

// --- numerics

TEST(PjrtBackend, TinyLlama3MatchesTransformers) {
  XLACEL_REQUIRE_PJRT_CPU_PLUGIN();
  json reference = read_json(testing::test_data("models/tiny_llama3_reference.json"));
  ModelFiles files = open_tiny();
  std::unique_ptr<Backend> backend = open_pjrt_backend(tiny_options(files));
  print_load(*backend, "tiny-llama3");
  EXPECT_EQ(backend->capabilities().backend, "xla");
  EXPECT_TRUE(backend->capabilities().argmax_on_device);
  EXPECT_TRUE(backend->capabilities().logits);
  check_greedy(*backend, reference, "tiny-llama3");
  for (const json& p : reference["prompts"]) check_logits(*backend, p, "tiny-llama3");
}

TEST(PjrtBackend, TinyLlama3RefeedsTheLastChunkAtTheCapacity) {
  XLACEL_REQUIRE_PJRT_CPU_PLUGIN();
  json reference = read_json(testing::test_data("models/tiny_llama3_reference.json"));
  const json& p = reference["prompts"].back();  // 150 tokens
  ASSERT_EQ(p["prompt_ids"].size(), 150u);
  ModelFiles files = open_tiny();
  BackendOptions options = tiny_options(files);
  options.logits_graph = false;
  // Chunks at 0, 16, ..., 128, then 144 would end at 160 > 158: the last chunk re-feeds from
  // 134. Positions 150..157 are left for 8 decode steps.
  options.capacity = 158;
  std::unique_ptr<Backend> backend = open_pjrt_backend(options);
  auto prompt = p["prompt_ids"].get<std::vector<int32_t>>();
  auto want = p["output_ids"].get<std::vector<int32_t>>();
  want.resize(9);
  GreedyRun run = greedy(*backend, prompt, 9);
  EXPECT_EQ(run.tokens, want) << "differs at step " << matching_prefix(run.tokens, want);
}

TEST(PjrtBackend, SmolLM2MatchesTransformers) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model_path);  // before XLACEL_CACHE moves to the scratch dir
  XLACEL_REQUIRE_PJRT_CPU_PLUGIN();
  json reference = read_json(testing::test_data("models/smollm2_reference.json"));
  ModelFiles files = ModelFiles::open(model_path);
  BackendOptions options;
  options.model = &files;
  options.capacity = 512;
  options.prefill_bucket = 64;  // the 237-token prompt is prefilled in 4 chunks
  options.argmax_graph = true;
  options.logits_graph = true;
  options.progress = [](std::string_view line) { std::cout << "  " << line << "\n"; };
  std::unique_ptr<Backend> backend = open_pjrt_backend(options);
  print_load(*backend, "SmolLM2");
  check_greedy(*backend, reference, "SmolLM2");
  check_logits(*backend, reference["prompts"][0], "SmolLM2");
  check_logits(*backend, reference["prompts"][2], "SmolLM2");  // the long, chunked one
}

// --- executable cache

TEST(PjrtBackend, SecondLoadComesFromTheExecutableCache) {
  if (auto missing = missing_cpu_plugin()) GTEST_SKIP() << *missing;
  fs::path cache = testing::scratch_dir("backend_pjrt/cache-reload");
  fs::remove_all(cache);
  ScopedEnv scoped_cache("XLACEL_CACHE", cache.c_str());
  json reference = read_json(testing::test_data("models/tiny_llama3_reference.json"));
  ModelFiles files = open_tiny();
  BackendOptions options = tiny_options(files);
  options.logits_graph = false;
  std::vector<std::string> notes;
  options.progress = [&](std::string_view line) { notes.emplace_back(line); };

  std::unique_ptr<Backend> first = open_pjrt_backend(options);
  for (const auto& graph : first->load_report().graphs) EXPECT_FALSE(graph.cached) << graph.graph;
  first.reset();
  std::unique_ptr<Backend> second = open_pjrt_backend(options);
  print_load(*second, "tiny-llama3 (second load)");
  for (const auto& graph : second->load_report().graphs) {
    EXPECT_TRUE(graph.cached) << graph.graph << " was compiled again";
  }
  for (const std::string& note : notes) {
    EXPECT_EQ(note.find("not loadable"), std::string::npos) << note;
    EXPECT_EQ(note.find("cannot serialize"), std::string::npos) << note;
  }
  check_greedy(*second, reference, "tiny-llama3 (cached executables)", 8);
}

// --- CUDA

bool machine_has_nvidia_gpu() {
  return fs::exists("/dev/nvidiactl") || fs::exists("/dev/nvidia0");
}

TEST(PjrtBackend, CudaTinyLlama3MatchesTransformers) {
  // No plugin: skip. A plugin but no GPU: skip. A plugin and a GPU: it must work.
  try {
    pjrt::find_plugin(DeviceKind::kCuda, "");
  } catch (const Error& e) {
    GTEST_SKIP() << "no CUDA plugin: " << e.what();
  }
  ModelFiles files = open_tiny();
  BackendOptions options = tiny_options(files);
  options.device = DeviceKind::kCuda;
  ScopedEnv scoped_cache("XLACEL_CACHE", testing::scratch_dir("backend_pjrt/cache").c_str());
  std::unique_ptr<Backend> backend;
  try {
    backend = open_pjrt_backend(options);
  } catch (const Error& e) {
    if (!machine_has_nvidia_gpu()) GTEST_SKIP() << "no GPU: " << e.what();
    FAIL() << e.what();
  }
  print_load(*backend, "tiny-llama3 cuda");
  json reference = read_json(testing::test_data("models/tiny_llama3_reference.json"));
  check_greedy(*backend, reference, "tiny-llama3 cuda");
  check_logits(*backend, reference["prompts"].back(), "tiny-llama3 cuda");
}

}  // namespace
}  // namespace xlacel::backends
