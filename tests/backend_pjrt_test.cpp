// The XLA runtime's plugin layer (src/backends/pjrt): plugin discovery and loading errors, the
// hand-written compile options, NaN propagation through the plugin directly, the executable
// cache and the CUDA device. (The device layer on every runtime: device_test.cpp; numerics
// against HF transformers: the executor's suite.) Tests skip (with the reason) when the plugin is
// missing; the CUDA test skips only on a machine without a GPU. Executables are cached under the
// scratch dir, never in the user's cache.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/pjrt/compile_options_proto.h"
#include "backends/pjrt/cpu_kernel_choice.h"
#include "backends/pjrt/pjrt_client.h"
#include "backends/pjrt/pjrt_device.h"
#include "backends/pjrt/pjrt_executable_cache.h"
#include "backends/pjrt/pjrt_plugin.h"
#include "common/error.h"
#include "common/scoped_env.h"
#include "device/device.h"
#include "models/test_support.h"
#include "test_paths.h"

namespace xlacel::backends {
namespace {

namespace fs = std::filesystem;
using device::DeviceKind;

// The CPU plugin the device would use, or the reason there is none.
std::optional<std::string> missing_cpu_plugin() {
  try {
    pjrt::find_plugin(DeviceKind::kCpu, "");
    return std::nullopt;
  } catch (const Error& e) {
    return std::string(e.what());
  }
}

// A module small enough to compile in a moment.
constexpr const char* kAddOne = R"(module @add_one {
  func.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %one = stablehlo.constant dense<1.0> : tensor<4xf32>
    %y = stablehlo.add %x, %one : tensor<4xf32>
    return %y : tensor<4xf32>
  }
}
)";

// --- errors

std::string open_error(const device::DeviceOptions& options, const PjrtOptions& xla) {
  try {
    open_pjrt_device(options, xla);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(PjrtDeviceErrors, BadPluginPathNamesThePath) {
  const std::string message = open_error({}, {"/nonexistent/dir/pjrt_plugin.so"});
  EXPECT_NE(message.find("/nonexistent/dir/pjrt_plugin.so"), std::string::npos) << message;
  EXPECT_NE(message.find("no such file"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(PjrtDeviceErrors, TextFileIsNotAPlugin) {
  fs::path text = testing::scratch_dir("backend_pjrt") / "not_a_plugin.so";
  testing::write_text(text, "hello, I am not a shared library\n");
  const std::string message = open_error({}, {text.string()});
  EXPECT_NE(message.find(text.string()), std::string::npos) << message;
  EXPECT_NE(message.find("not a loadable PJRT plugin"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(PjrtDeviceErrors, SharedLibraryWithoutGetPjrtApiIsNotAPlugin) {
  std::optional<fs::path> library;
  for (const char* candidate : {"/lib/x86_64-linux-gnu/libm.so.6",
                                "/lib/aarch64-linux-gnu/libm.so.6", "/usr/lib64/libm.so.6"}) {
    if (fs::exists(candidate)) library = candidate;
  }
  if (!library) GTEST_SKIP() << "no libm.so.6 at the usual paths to use as a non-plugin";
  const std::string message = open_error({}, {library->string()});
  EXPECT_NE(message.find("no GetPjrtApi symbol"), std::string::npos) << message;
}

TEST(PjrtDeviceErrors, MissingVenvPluginNamesThePipPackage) {
  fs::path empty_venv = testing::scratch_dir("backend_pjrt/empty-venv");
  ScopedEnv venv("XLACEL_VENV", empty_venv.c_str());
  ScopedEnv plugin("XLACEL_PJRT_PLUGIN", std::nullopt);
  const std::string message = open_error({}, {});
  EXPECT_NE(message.find("xla backend (cpu)"), std::string::npos) << message;
  EXPECT_NE(message.find(pjrt::kCpuPluginPackage), std::string::npos) << message;
  EXPECT_NE(message.find("--plugin PATH"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(PjrtDeviceErrors, CpuPluginRejectsCudaDevice) {
  if (auto missing = missing_cpu_plugin()) GTEST_SKIP() << *missing;
  device::DeviceOptions options;
  options.kind = DeviceKind::kCuda;
  const std::string message =
      open_error(options, {pjrt::find_plugin(DeviceKind::kCpu, "").path.string()});
  EXPECT_NE(message.find("platform 'cpu', not cuda"), std::string::npos) << message;
}

TEST(PjrtDeviceErrors, ThreadsAreForTheCpu) {
  device::DeviceOptions options;
  options.kind = DeviceKind::kCuda;
  options.threads = 2;
  const std::string message = open_error(options, {});
  EXPECT_NE(message.find("threads: applies to the CPU only"), std::string::npos) << message;
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

// A graph with a matrix-matrix dot gets XNNPACK on the CPU (as one string override); a graph
// whose dots are matrix-vector, or batched (attention), keeps XLA's own kernels.
TEST(PjrtCompileOptions, XnnpackForMatrixProductsOnTheCpu) {
  const std::string batch =
      R"(%3 = "stablehlo.dot_general"(%1, %w) {dot_dimension_numbers = #stablehlo.dot<)"
      R"(lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1]>} : )"
      R"((tensor<8x576xf32>, tensor<1536x576xf32>) -> tensor<8x1536xf32>)";
  const std::string vector =
      R"(%3 = "stablehlo.dot_general"(%1, %w) {dot_dimension_numbers = #stablehlo.dot<)"
      R"(lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1]>} : )"
      R"((tensor<1x576xf32>, tensor<1536x576xf32>) -> tensor<1x1536xf32>)";
  const std::string attention =
      R"(%5 = "stablehlo.dot_general"(%q, %k) {dot_dimension_numbers = #stablehlo.dot<)"
      R"(lhs_batching_dimensions = [0, 1], rhs_batching_dimensions = [0, 1], )"
      R"(lhs_contracting_dimensions = [3], rhs_contracting_dimensions = [3]>} : )"
      R"((tensor<8x3x3x64xf32>, tensor<8x3x128x64xf32>) -> tensor<8x3x3x128xf32>)";
  EXPECT_TRUE(pjrt::has_matrix_product(vector + "\n" + batch + "\n"));
  EXPECT_FALSE(pjrt::has_matrix_product(vector + "\n" + attention + "\n"));
  EXPECT_FALSE(pjrt::has_matrix_product(kAddOne));
  // The pretty form of the op, as other producers print it.
  EXPECT_TRUE(pjrt::has_matrix_product(
      "%2 = stablehlo.dot_general %0, %1, contracting_dims = [1] x [0] : (tensor<4x3xf32>, "
      "tensor<3x5xf32>) -> tensor<4x5xf32>\n"));

  EXPECT_TRUE(pjrt::graph_compile_options(DeviceKind::kCpu, batch).xnnpack_dots);
  EXPECT_FALSE(pjrt::graph_compile_options(DeviceKind::kCuda, batch).xnnpack_dots);
  EXPECT_FALSE(pjrt::graph_compile_options(DeviceKind::kCpu, vector).xnnpack_dots);
  const std::string xnn = pjrt::single_device_compile_options({.xnnpack_dots = true});
  const std::string plain = pjrt::single_device_compile_options();
  EXPECT_EQ(xnn.substr(0, plain.size()), plain);
  EXPECT_NE(xnn.find("xla_cpu_experimental_xnn_graph_fusion_mode"), std::string::npos);
  EXPECT_NE(xnn.find("XNN_GRAPH_FUSION_MODE_BYPASS_COST_MODEL"), std::string::npos);
  EXPECT_EQ(plain.find("xnn"), std::string::npos);
}

// --- the plugin directly

// $XLA_FLAGS changes what XLA compiles, so it is part of the executable's cache key.
TEST(PjrtExecutableCache, XlaFlagsArePartOfTheKey) {
  if (auto missing = missing_cpu_plugin()) GTEST_SKIP() << *missing;
  auto plugin = pjrt::Plugin::load(pjrt::find_plugin(DeviceKind::kCpu, "").path);
  pjrt::Client client(plugin);
  const std::string options = pjrt::single_device_compile_options();
  std::vector<std::string> without;
  {
    ScopedEnv flags("XLA_FLAGS", std::nullopt);
    without = pjrt::pjrt_target(client, DeviceKind::kCpu, options).flags;
  }
  ScopedEnv flags("XLA_FLAGS", "--xla_cpu_enable_fast_math=true");
  const std::vector<std::string> with = pjrt::pjrt_target(client, DeviceKind::kCpu, options).flags;
  EXPECT_EQ(with.size(), without.size() + 1);
  EXPECT_EQ(with.back(), "XLA_FLAGS=--xla_cpu_enable_fast_math=true");
}

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

// Runs kAddOne's executable on {1, 2, 3, 4}.
void expect_adds_one(device::Device& device, device::Executable& add_one) {
  const std::vector<float> x = {1, 2, 3, 4};
  const int64_t four[] = {4};
  device::BufferPtr input =
      device.upload(std::as_bytes(std::span(x)), stablehlo::ElementType::kF32, four);
  device::Buffer* arguments[] = {input.get()};
  std::vector<device::BufferPtr> results = device.execute(add_one, arguments);
  std::vector<float> y(4);
  device.read(*results.at(0), std::as_writable_bytes(std::span(y)));
  EXPECT_EQ(y, (std::vector<float>{2, 3, 4, 5}));
}

// --- executable cache

TEST(PjrtExecutableCache, SecondLoadDeserializes) {
  if (auto missing = missing_cpu_plugin()) GTEST_SKIP() << *missing;
  fs::path cache = testing::scratch_dir("backend_pjrt/cache-reload");
  fs::remove_all(cache);
  device::DeviceOptions options;
  options.compile_cache_dir = cache;
  std::vector<std::string> notes;
  options.progress = [&](std::string_view line) { notes.emplace_back(line); };
  const device::GraphSource graphs[] = {{"add-one", kAddOne, "add_one", "add_one.mlir"}};

  std::vector<device::GraphLoad> first;
  open_pjrt_device(options, {})->load(graphs, first);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_FALSE(first[0].cached);
  std::vector<device::GraphLoad> second;
  std::unique_ptr<device::Device> device = open_pjrt_device(options, {});
  auto executables = device->load(graphs, second);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_TRUE(second[0].cached) << "compiled again";
  for (const std::string& note : notes) {
    EXPECT_EQ(note.find("not loadable"), std::string::npos) << note;
    EXPECT_EQ(note.find("cannot serialize"), std::string::npos) << note;
  }
  expect_adds_one(*device, *executables[0]);
}

// --- CUDA

bool machine_has_nvidia_gpu() {
  return fs::exists("/dev/nvidiactl") || fs::exists("/dev/nvidia0");
}

TEST(PjrtCuda, RunsAModule) {
  // No plugin: skip. A plugin but no GPU: skip. A plugin and a GPU: it must work.
  try {
    pjrt::find_plugin(DeviceKind::kCuda, "");
  } catch (const Error& e) {
    GTEST_SKIP() << "no CUDA plugin: " << e.what();
  }
  device::DeviceOptions options;
  options.kind = DeviceKind::kCuda;
  options.compile_cache_dir = testing::scratch_dir("backend_pjrt/cache");
  std::unique_ptr<device::Device> device;
  try {
    device = open_pjrt_device(options, {});
  } catch (const Error& e) {
    if (!machine_has_nvidia_gpu()) GTEST_SKIP() << "no GPU: " << e.what();
    FAIL() << e.what();
  }
  std::cout << "xla cuda: " << device->description() << "\n";
  const device::GraphSource graphs[] = {{"add-one", kAddOne, "add_one", "add_one.mlir"}};
  std::vector<device::GraphLoad> loads;
  auto executables = device->load(graphs, loads);
  expect_adds_one(*device, *executables[0]);
}

}  // namespace
}  // namespace xlacel::backends
