// The device layer (device/device.h) on every runtime (backends/backends.h): one parameterized
// suite over "iree" and "xla" with a hand-written StableHLO module, so it needs no model. Each
// runtime skips (with the reason) when its venv packages or plugin are missing. Compiled modules
// go to a scratch compile cache, never the user's.
//
// Every device here is opened with kThreads CPU threads: IREE fixes its worker count when the
// process's first CPU device opens, so all devices of this process must agree.
#include <dirent.h>
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backends/backends.h"
#include "common/aligned_vector.h"
#include "common/error.h"
#include "common/float16.h"
#include "compile_cache/iree_compiler.h"
#include "device/device.h"
#include "runtime_availability.h"
#include "test_paths.h"

namespace xlacel {
namespace {

namespace fs = std::filesystem;
using device::BufferPtr;
using device::Device;
using device::DeviceKind;
using device::DeviceOptions;
using device::GraphLoad;
using device::GraphSource;
using lowering::Readers;
using stablehlo::ElementType;

constexpr int kThreads = 1;

// acc' = acc + x + h * n, returned as bf16 (result 0) and f32 (result 1, acc's alias).
constexpr const char* kAccumulate = R"(module @device_test {
  func.func public @main(%x: tensor<4xf32>, %acc: tensor<4xf32> {tf.aliasing_output = 1 : i32},
                         %n: tensor<i32>, %h: tensor<4xbf16>) -> (tensor<4xbf16>, tensor<4xf32>) {
    %nf = stablehlo.convert %n : (tensor<i32>) -> tensor<f32>
    %nb = stablehlo.broadcast_in_dim %nf, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %hf = stablehlo.convert %h : (tensor<4xbf16>) -> tensor<4xf32>
    %t = stablehlo.multiply %hf, %nb : tensor<4xf32>
    %s = stablehlo.add %acc, %x : tensor<4xf32>
    %new = stablehlo.add %s, %t : tensor<4xf32>
    %b = stablehlo.convert %new : (tensor<4xf32>) -> tensor<4xbf16>
    return %b, %new : tensor<4xbf16>, tensor<4xf32>
  }
}
)";

GraphSource accumulate_graph() {
  return {"accumulate", kAccumulate, "device_test", "device_test.accumulate.mlir"};
}

template <typename T>
std::span<const std::byte> bytes_of(const std::vector<T>& values) {
  return std::as_bytes(std::span(values));
}

// Threads of this process whose name contains `part` (Linux names threads in /proc).
int threads_named(const std::string& part) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator("/proc/self/task")) {
    std::ifstream comm(entry.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name.find(part) != std::string::npos) ++count;
  }
  return count;
}

std::map<std::string, int> thread_names() {
  std::map<std::string, int> names;
  for (const auto& entry : fs::directory_iterator("/proc/self/task")) {
    std::ifstream comm(entry.path() / "comm");
    std::string name;
    std::getline(comm, name);
    ++names[name];
  }
  return names;
}

class DeviceTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (auto missing = testing::missing_runtime(GetParam(), kThreads)) GTEST_SKIP() << *missing;
  }

  // A scratch compile cache of this runtime, emptied when `fresh`.
  fs::path cache_dir(const std::string& name, bool fresh) {
    fs::path dir = testing::scratch_dir("device/" + GetParam() + "/" + name);
    if (fresh) {
      fs::remove_all(dir);
      fs::create_directories(dir);
    }
    return dir;
  }

  backends::Runtime open_runtime(const fs::path& cache,
                                 std::vector<std::string>* progress = nullptr) {
    DeviceOptions options;
    options.threads = kThreads;
    options.compile_cache_dir = cache;
    if (progress != nullptr) {
      options.progress = [progress](std::string_view line) { progress->emplace_back(line); };
    }
    return backends::open_runtime(GetParam(), options, {});
  }
  std::unique_ptr<Device> open(const fs::path& cache,
                               std::vector<std::string>* progress = nullptr) {
    return open_runtime(cache, progress).device;
  }

  std::unique_ptr<device::Executable> load_accumulate(Device& device,
                                                      std::vector<GraphLoad>* loads = nullptr) {
    const GraphSource graphs[] = {accumulate_graph()};
    std::vector<GraphLoad> own;
    auto executables = device.load(graphs, loads != nullptr ? *loads : own);
    EXPECT_EQ(executables.size(), 1u);
    return std::move(executables.at(0));
  }
};

// Runs the accumulate graph `steps` times from acc = 0, feeding the donated acc back, and
// checks both results after each step.
void run_accumulate(Device& device, device::Executable& executable, int steps) {
  ASSERT_EQ(executable.num_results(), 2u);
  const int64_t four[] = {4};
  const std::vector<float> x = {1, 2, 3, 4};
  const std::vector<int32_t> n = {3};
  std::vector<uint16_t> h;
  for (float value : {0.5f, 1.0f, 1.5f, 2.0f}) h.push_back(float_to_bfloat16(value));

  BufferPtr x_buffer = device.upload(bytes_of(x), ElementType::kF32, four);
  BufferPtr n_buffer = device.upload(bytes_of(n), ElementType::kI32, {});
  BufferPtr h_buffer = device.upload(bytes_of(h), ElementType::kBF16, four);
  BufferPtr acc = device.zeros(ElementType::kF32, four);
  for (int step = 1; step <= steps; ++step) {
    device::Buffer* arguments[] = {x_buffer.get(), acc.get(), n_buffer.get(), h_buffer.get()};
    std::vector<BufferPtr> results = device.execute(executable, arguments);
    ASSERT_EQ(results.size(), 2u);
    acc = std::move(results[1]);  // the old acc was donated: only destroyed
    std::array<float, 4> sum{};
    device.read(*acc, std::as_writable_bytes(std::span(sum)));
    std::array<uint16_t, 4> sum_bf16{};
    device.read(*results[0], std::as_writable_bytes(std::span(sum_bf16)));
    for (int i = 0; i < 4; ++i) {
      const float want = static_cast<float>(step) * 2.5f * static_cast<float>(i + 1);
      EXPECT_EQ(sum[static_cast<std::size_t>(i)], want) << "step " << step << " element " << i;
      EXPECT_EQ(bfloat16_to_float(sum_bf16[static_cast<std::size_t>(i)]), want)
          << "bf16 result, step " << step << " element " << i;
    }
  }
}

TEST_P(DeviceTest, ExecutesRepeatedlyWithTheDonatedResultFedBack) {
  std::unique_ptr<Device> device = open(cache_dir("run", false));
  EXPECT_EQ(device->runtime(), GetParam());
  std::cout << GetParam() << ": " << device->description() << "\n";
  auto executable = load_accumulate(*device);
  run_accumulate(*device, *executable, 3);
}

// Kept bytes: IREE's lowering uses aligned ones in place, and misaligned ones only where its
// hand-written kernels alone read them (compiled code assumes 64-byte aligned buffers); its CPU
// device then computes on them where they are, holding their keeper while its buffer lives.
// Other runtimes copy.
TEST_P(DeviceTest, KeptBytesAreUsedWhereTheyAreOrCopied) {
  backends::Runtime runtime = open_runtime(cache_dir("run", false));
  const std::unique_ptr<Device>& device = runtime.device;
  const lowering::Lowering& lowering = *runtime.lowering;
  auto executable = load_accumulate(*device);
  const int64_t four[] = {4};
  const std::vector<int32_t> n = {3};
  std::vector<uint16_t> h;
  for (float value : {0.5f, 1.0f, 1.5f, 2.0f}) h.push_back(float_to_bfloat16(value));
  BufferPtr n_buffer = device->upload(bytes_of(n), ElementType::kI32, {});
  BufferPtr h_buffer = device->upload(bytes_of(h), ElementType::kBF16, four);
  // acc = 0 + x + h * n, for x as the graph sees it.
  auto sum_with = [&](const BufferPtr& x) {
    BufferPtr acc = device->zeros(ElementType::kF32, four);
    device::Buffer* arguments[] = {x.get(), acc.get(), n_buffer.get(), h_buffer.get()};
    std::vector<BufferPtr> results = device->execute(*executable, arguments);
    std::array<float, 4> sum{};
    device->read(*results.at(1), std::as_writable_bytes(std::span(sum)));
    return sum;
  };
  const bool in_place = GetParam() == "iree";

  auto x = std::make_shared<AlignedVector<float>>(AlignedVector<float>{1, 2, 3, 4});
  const auto x_bytes = std::as_bytes(std::span(*x));
  EXPECT_EQ(lowering.in_place(x_bytes, Readers::kCompiledCode), in_place);
  BufferPtr x_buffer = device->upload_in_place(x_bytes, ElementType::kF32, four, x);
  EXPECT_EQ(x.use_count(), in_place ? 2 : 1) << "the device holds the keeper only in place";
  EXPECT_EQ(sum_with(x_buffer), (std::array<float, 4>{2.5f, 5, 7.5f, 10}));
  // The contract forbids changing kept bytes; here it shows that no copy was made.
  (*x)[0] = 11;
  EXPECT_EQ(sum_with(x_buffer)[0], in_place ? 12.5f : 2.5f);
  x_buffer.reset();
  EXPECT_EQ(x.use_count(), 1) << "the keeper is released with the buffer";

  // Bytes off the 64-byte boundary compiled code assumes are copied for it; kernels take them
  // where they are (this graph has no kernel: not run).
  auto shifted = std::make_shared<AlignedVector<float>>(AlignedVector<float>{0, 1, 2, 3, 4});
  const auto shifted_bytes = std::as_bytes(std::span(*shifted).subspan(1));
  EXPECT_FALSE(lowering.in_place(shifted_bytes, Readers::kCompiledCode));
  EXPECT_EQ(lowering.in_place(shifted_bytes, Readers::kKernelsOnly), in_place);
  x_buffer = device->upload_in_place(shifted_bytes, ElementType::kF32, four, shifted);
  EXPECT_EQ(shifted.use_count(), in_place ? 2 : 1);
  x_buffer.reset();

  // A large upload (IREE's CPU device copies it on every core) reads back whole.
  std::vector<int32_t> large(std::size_t{3} << 18);
  for (std::size_t i = 0; i < large.size(); ++i) large[i] = static_cast<int32_t>(i * 2654435761u);
  const int64_t count[] = {static_cast<int64_t>(large.size())};
  BufferPtr large_buffer = device->upload(bytes_of(large), ElementType::kI32, count);
  std::vector<int32_t> back(large.size());
  device->read(*large_buffer, std::as_writable_bytes(std::span(back)));
  EXPECT_EQ(back, large);
}

TEST_P(DeviceTest, SecondLoadComesFromTheCache) {
  const fs::path cache = cache_dir("reload", true);
  std::vector<std::string> progress;
  std::vector<GraphLoad> first_loads;
  {
    std::unique_ptr<Device> device = open(cache, &progress);
    load_accumulate(*device, &first_loads);
  }
  ASSERT_EQ(first_loads.size(), 1u);
  EXPECT_EQ(first_loads[0].graph, "accumulate");
  EXPECT_FALSE(first_loads[0].cached);
  EXPECT_GT(first_loads[0].compile_seconds, 0);
  EXPECT_GE(first_loads[0].seconds, first_loads[0].compile_seconds);

  std::unique_ptr<Device> device = open(cache, &progress);
  std::vector<GraphLoad> second_loads;
  auto executable = load_accumulate(*device, &second_loads);
  ASSERT_EQ(second_loads.size(), 1u);
  EXPECT_TRUE(second_loads[0].cached);
  EXPECT_EQ(second_loads[0].compile_seconds, first_loads[0].compile_seconds);
  run_accumulate(*device, *executable, 2);

  bool compiling = false, compiled = false, from_cache = false;
  for (const std::string& line : progress) {
    EXPECT_TRUE(line.starts_with(GetParam() + ": ")) << line;
    compiling |= line.find("compiling accumulate") != std::string::npos;
    compiled |= line.find("accumulate compiled") != std::string::npos;
    from_cache |= line.find("accumulate from cache") != std::string::npos;
  }
  EXPECT_TRUE(compiling && compiled && from_cache) << ::testing::PrintToString(progress);
}

TEST_P(DeviceTest, CallsFromAnotherThread) {
  std::unique_ptr<Device> device = open(cache_dir("run", false));
  std::unique_ptr<device::Executable> executable;
  // Load on one thread, run on another, destroy on a third (this one).
  std::thread loader([&] { executable = load_accumulate(*device); });
  loader.join();
  std::thread runner([&] { run_accumulate(*device, *executable, 2); });
  runner.join();
}

TEST_P(DeviceTest, BadMlirNamesTheSource) {
  std::unique_ptr<Device> device = open(cache_dir("run", false));
  const GraphSource graphs[] = {{"broken", "module @device_test { func.func public @main( }",
                                 "device_test", "device_test.broken.mlir"}};
  std::vector<GraphLoad> loads;
  try {
    device->load(graphs, loads);
    FAIL() << "a broken module loaded";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("device_test.broken.mlir"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST_P(DeviceTest, WrongSizesAreErrors) {
  std::unique_ptr<Device> device = open(cache_dir("run", false));
  const int64_t four[] = {4};
  const std::vector<float> three = {1, 2, 3};
  EXPECT_THROW(device->upload(bytes_of(three), ElementType::kF32, four), Error);
  BufferPtr buffer = device->zeros(ElementType::kF32, four);
  std::array<float, 3> small{};
  EXPECT_THROW(device->read(*buffer, std::as_writable_bytes(std::span(small))), Error);
  std::array<float, 4> zeros{1, 1, 1, 1};
  device->read(*buffer, std::as_writable_bytes(std::span(zeros)));
  EXPECT_EQ(zeros, (std::array<float, 4>{0, 0, 0, 0}));
}

// The worker threads each runtime names: IREE's local-task workers ("iree-worker-<i>"), XLA
// CPU's intra-op pool ("tf_XLAEigen"; TSL prefixes "tf_").
TEST_P(DeviceTest, ThreadsLimitTheWorkers) {
  std::unique_ptr<Device> device = open(cache_dir("run", false));
  auto executable = load_accumulate(*device);
  run_accumulate(*device, *executable, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // workers name themselves
  std::cout << GetParam() << " threads:";
  for (const auto& [name, count] : thread_names()) std::cout << " " << name << "=" << count;
  std::cout << "\n";
  EXPECT_EQ(threads_named(GetParam() == "iree" ? "iree-worker" : "XLAEigen"), kThreads);
}

// One execute call's cost on a 4-element graph: the runtime's per-call overhead.
TEST_P(DeviceTest, ExecuteOverhead) {
  std::unique_ptr<Device> device = open(cache_dir("run", false));
  auto executable = load_accumulate(*device);
  const int64_t four[] = {4};
  const std::vector<float> x = {1, 2, 3, 4};
  const std::vector<int32_t> n = {3};
  const std::vector<uint16_t> h(4, 0);
  BufferPtr x_buffer = device->upload(bytes_of(x), ElementType::kF32, four);
  BufferPtr n_buffer = device->upload(bytes_of(n), ElementType::kI32, {});
  BufferPtr h_buffer = device->upload(bytes_of(h), ElementType::kBF16, four);
  BufferPtr acc = device->zeros(ElementType::kF32, four);
  constexpr int kCalls = 2000;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kCalls; ++i) {
    device::Buffer* arguments[] = {x_buffer.get(), acc.get(), n_buffer.get(), h_buffer.get()};
    acc = std::move(device->execute(*executable, arguments)[1]);
  }
  std::array<float, 4> sum{};
  device->read(*acc, std::as_writable_bytes(std::span(sum)));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(sum[0], kCalls);
  std::cout << GetParam() << ": execute " << 1e6 * seconds / kCalls << " us/call\n";
}

INSTANTIATE_TEST_SUITE_P(Runtimes, DeviceTest, ::testing::ValuesIn(backends::runtime_names()),
                         [](const auto& runtime) { return runtime.param; });

TEST(DeviceErrors, UnknownRuntimeNamesTheKnownOnes) {
  try {
    backends::open_device("tpu", {}, {});
    FAIL() << "opened an unknown runtime";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "runtime: unknown runtime 'tpu' (known: iree, xla)");
  }
}

// A CUDA device opens before anything is compiled: without a GPU that fails at once, in one line.
TEST(DeviceErrors, IreeCudaWithoutAGpuFailsFast) {
  if (auto missing = testing::missing_runtime("iree", kThreads)) GTEST_SKIP() << *missing;
  DeviceOptions options;
  options.kind = DeviceKind::kCuda;
  try {
    backends::open_device("iree", options, {});
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_TRUE(message.starts_with("iree backend (cuda): cannot open IREE device 'cuda'"))
        << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    return;
  }
  if (!fs::exists("/dev/nvidiactl")) FAIL() << "opened IREE cuda without a GPU";
}

TEST(DeviceErrors, DenseByteSize) {
  const int64_t shape[] = {2, 3};
  EXPECT_EQ(device::dense_byte_size(ElementType::kF32, shape), 24u);
  EXPECT_EQ(device::dense_byte_size(ElementType::kBF16, shape), 12u);
  EXPECT_EQ(device::dense_byte_size(ElementType::kI1, shape), 6u);
  EXPECT_EQ(device::dense_byte_size(ElementType::kI32, {}), 4u);
  const int64_t negative[] = {2, -1};
  EXPECT_THROW(device::dense_byte_size(ElementType::kF32, negative), Error);
}

}  // namespace
}  // namespace xlacel
