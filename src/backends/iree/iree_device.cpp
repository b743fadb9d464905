#include "backends/iree/iree_device.h"

#include <fmt/format.h>
#include <pybind11/numpy.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <future>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>

#include "backends/iree/cpu_isa.h"
#include "backends/iree/embedded_python.h"
#include "backends/iree/iree_planar_kernel.h"
#include "backends/iree/iree_runner_py.h"
#include "common/aligned_vector.h"
#include "common/error.h"
#include "common/parallel_slices.h"
#include "compile_cache/compile_cache.h"
#include "compile_cache/iree_compiler.h"

namespace xlacel::backends {

namespace py = pybind11;
using device::BufferPtr;
using device::DeviceKind;
using device::GraphLoad;
using device::GraphSource;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The runner module (iree_runner.py), loaded once per process: it keeps process-wide state (the
// local-task worker count). Never destroyed, like the interpreter.
const py::object& runner_module() {
  static std::mutex mutex;
  static const py::object* module = nullptr;
  std::lock_guard lock(mutex);  // before the GIL: Python may switch threads while loading
  if (module == nullptr) {
    py::gil_scoped_acquire gil;
    module = new py::object(load_python_module("xlacel_iree_runner", kIreeRunnerPython));
  }
  return *module;
}

py::tuple shape_tuple(std::span<const int64_t> shape) {
  py::tuple tuple(shape.size());
  for (std::size_t i = 0; i < shape.size(); ++i) tuple[i] = py::int_(shape[i]);
  return tuple;
}

// The CUDA architectures in $XLACEL_IREE_ALSO_COMPILE_CUDA (iree_device.h).
std::vector<std::string> also_compile_cuda() {
  std::vector<std::string> sms;
  const char* value = std::getenv("XLACEL_IREE_ALSO_COMPILE_CUDA");
  std::string_view rest = value != nullptr ? value : "";
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    if (std::string_view sm = rest.substr(0, comma); !sm.empty()) sms.emplace_back(sm);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return sms;
}

// Tensors from this size on are copied to the CPU device on every core (IreeDevice::upload).
constexpr std::size_t kParallelCopyBytes = std::size_t{1} << 20;

// The classes below hold pybind11 objects, whose types have hidden visibility: they stay in this
// anonymous namespace. Each drops its objects under the GIL.

// An IREE HalBufferView.
class IreeBuffer final : public device::Buffer {
 public:
  // `memory`: what keeps the view's memory alive where the view alone does not (an imported
  // host allocation's HalBuffer, which alone holds the host array).
  explicit IreeBuffer(py::object view, py::object memory = py::object())
      : view_(std::move(view)), memory_(std::move(memory)) {}
  ~IreeBuffer() override {
    py::gil_scoped_acquire gil;
    view_ = py::object();
    memory_ = py::object();
  }
  const py::object& view() const { return view_; }

 private:
  py::object view_;
  py::object memory_;
};

// A loaded module's `main` (iree_runner.Entry).
class IreeExecutable final : public device::Executable {
 public:
  IreeExecutable(py::object entry, std::size_t num_results)
      : entry_(std::move(entry)), num_results_(num_results) {}
  ~IreeExecutable() override {
    py::gil_scoped_acquire gil;
    entry_ = py::object();
  }
  std::size_t num_results() const override { return num_results_; }
  const py::object& entry() const { return entry_; }

 private:
  py::object entry_;
  std::size_t num_results_;
};

class IreeDevice final : public device::Device {
 public:
  IreeDevice(const device::DeviceOptions& options, const IreeOptions& iree);
  ~IreeDevice() override;

  const std::string& runtime() const override { return runtime_; }
  const std::string& description() const override { return description_; }
  std::vector<std::unique_ptr<device::Executable>> load(std::span<const GraphSource> graphs,
                                                        std::vector<GraphLoad>& loads) override;
  BufferPtr upload(std::span<const std::byte> bytes, stablehlo::ElementType element,
                   std::span<const int64_t> shape) override;
  BufferPtr upload_in_place(std::span<const std::byte> bytes, stablehlo::ElementType element,
                            std::span<const int64_t> shape,
                            std::shared_ptr<const void> keeper) override;
  BufferPtr zeros(stablehlo::ElementType element, std::span<const int64_t> shape) override;
  std::vector<BufferPtr> execute(device::Executable& executable,
                                 std::span<device::Buffer* const> arguments) override;
  void read(const device::Buffer& buffer, std::span<std::byte> destination) override;

 private:
  void progress(const std::string& line) const {
    if (options_.progress) options_.progress(line);
  }
  // Error unless `bytes` are a dense `shape` of `element`.
  void check_upload_size(std::span<const std::byte> bytes, stablehlo::ElementType element,
                         std::span<const int64_t> shape) const;
  // The checked, 64-byte aligned `bytes` as a CPU buffer without a copy, `keeper` held by it.
  BufferPtr adopt(std::span<const std::byte> bytes, stablehlo::ElementType element,
                  std::span<const int64_t> shape, std::shared_ptr<const void> keeper);
  // Compiles (or finds in the cache) every graph, two compiles at a time (iree-compile mostly
  // uses one core).
  std::vector<compile_cache::CompileResult> compile(std::span<const GraphSource> graphs);
  const IreeBuffer& buffer_of(const device::Buffer* buffer) const;

  device::DeviceOptions options_;
  std::string runtime_ = "iree";
  std::string label_;  // "iree backend (cpu)", for Errors
  std::string description_;
  compile_cache::CompileTarget target_;
  std::vector<compile_cache::CompileTarget> also_targets_;  // $XLACEL_IREE_ALSO_COMPILE_CUDA
  py::object device_;                                       // iree_runner.Device
  // Its methods, looked up once.
  py::object load_, upload_, adopt_, zeros_, call_, read_;
  // The memory of every buffer zeros() adopted, for the device's lifetime: a cache is donated,
  // and the results that alias it reference its memory without holding it.
  std::vector<py::object> zeroed_memory_;
};

IreeDevice::IreeDevice(const device::DeviceOptions& options, const IreeOptions& iree)
    : options_(options),
      label_(fmt::format("iree backend ({})", device::device_kind_name(options.kind))) {
  options_.validate();
  compile_cache::IreeTargetOptions target_options;
  target_options.backend = options_.kind == DeviceKind::kCuda ? "cuda" : "llvm-cpu";
  if (!iree.cuda_sm.empty()) target_options.cuda_sm = iree.cuda_sm;
  if (options_.kind == DeviceKind::kCpu) target_options.cpu = iree_cpu_isa().llvm_cpu;
  target_ = compile_cache::iree_target(target_options);
  for (const std::string& flag : iree.compiler_flags) target_.flags.push_back(flag);
  for (const std::string& sm : also_compile_cuda()) {
    compile_cache::CompileTarget also = compile_cache::iree_target({"cuda", sm, "O3"});
    for (const std::string& flag : iree.compiler_flags) also.flags.push_back(flag);
    also_targets_.push_back(std::move(also));
  }
  // The CPU's worker threads: --threads, or one per hardware thread. IREE's local-task driver is
  // always given the count, never left to its default: that pins a worker to each core, and the
  // thread that submits the calls then takes turns with one of them on its core while the other
  // worker waits at every dispatch's end. Unpinned, the system moves them, and a decode step is
  // no slower and steadier (docs/PERFORMANCE.md, "IREE workers unpinned").
  const int workers = iree_cpu_workers(options_);

  ensure_python_with_iree_runtime();
  const char* driver = options_.kind == DeviceKind::kCuda ? "cuda" : "local-task";
  const py::object& module = runner_module();
  py::gil_scoped_acquire gil;
  try {
    device_ = module.attr("Device")(driver, options_.threads, workers);
  } catch (const py::error_already_set& e) {
    fail(label_, "cannot open IREE device '{}': {}", driver, one_line(e));
  }
  load_ = device_.attr("load");
  upload_ = device_.attr("upload");
  adopt_ = device_.attr("adopt");
  zeros_ = device_.attr("zeros");
  call_ = device_.attr("call");
  read_ = device_.attr("read");

  description_ =
      options_.kind == DeviceKind::kCuda
          ? fmt::format("cuda ({}, IREE cuda driver)", target_options.cuda_sm)
          : fmt::format("cpu (llvm-cpu for {}, kernels {}, IREE local-task, {} thread{}{})",
                        iree_cpu_isa().name == "native"
                            ? std::string("this CPU")
                            : "its " + iree_cpu_isa().name + " instructions only",
                        iree_cpu_kernels(), workers, workers == 1 ? "" : "s",
                        options_.threads > 0 ? "" : ", one per hardware thread");
}

IreeDevice::~IreeDevice() {
  py::gil_scoped_acquire gil;
  load_ = upload_ = adopt_ = zeros_ = call_ = read_ = device_ = py::object();
  zeroed_memory_.clear();
}

std::vector<compile_cache::CompileResult> IreeDevice::compile(std::span<const GraphSource> graphs) {
  compile_cache::CompileCache cache(options_.compile_cache_dir);
  // Without iree-compile (the GPU bundle), the cache's own modules still load.
  std::unique_ptr<compile_cache::Compiler> owned =
      compile_cache::iree_compiler_for_cache(cache.directory());
  compile_cache::Compiler& compiler = *owned;
  // Progress goes out from this thread only (the callback need not be thread-safe).
  for (const GraphSource& graph : graphs) {
    if (!cache.lookup(compiler, {graph.mlir, graph.source, target_})) {
      progress(fmt::format("iree: compiling {} for {} ...", graph.name, target_.name));
    }
  }
  auto compile_one = [&](std::size_t i) {
    return cache.get_or_compile(compiler, {graphs[i].mlir, graphs[i].source, target_});
  };
  std::vector<compile_cache::CompileResult> results;
  for (std::size_t i = 0; i < graphs.size(); i += 2) {
    std::future<compile_cache::CompileResult> second;
    if (i + 1 < graphs.size()) second = std::async(std::launch::async, compile_one, i + 1);
    std::optional<Error> first_error;
    try {
      results.push_back(compile_one(i));
    } catch (const Error& e) {
      first_error = e;  // the second compile still has to finish before we leave
    }
    if (second.valid()) {
      compile_cache::CompileResult result = second.get();
      if (!first_error) results.push_back(std::move(result));
    }
    if (first_error) throw *first_error;
  }
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    progress(fmt::format("iree: {} {} ({:.2f} s)", graphs[i].name,
                         results[i].hit ? "from cache" : "compiled",
                         results[i].hit ? results[i].seconds : results[i].compile_seconds));
  }
  for (const compile_cache::CompileTarget& also : also_targets_) {
    for (const GraphSource& graph : graphs) {
      compile_cache::CompileResult result =
          cache.get_or_compile(compiler, {graph.mlir, graph.source, also});
      progress(fmt::format("iree: {} also for {}: {} ({:.2f} s)", graph.name, also.name,
                           result.hit ? "from cache" : "compiled", result.compile_seconds));
    }
  }
  return results;
}

std::vector<std::unique_ptr<device::Executable>> IreeDevice::load(
    std::span<const GraphSource> graphs, std::vector<GraphLoad>& loads) {
  std::vector<compile_cache::CompileResult> compiled = compile(graphs);
  std::vector<std::unique_ptr<device::Executable>> executables;
  py::gil_scoped_acquire gil;
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    const auto start = Clock::now();
    try {
      py::object entry = load_(compiled[i].artifact.string(), graphs[i].module_name);
      const auto results = entry.attr("num_results").cast<std::size_t>();
      executables.push_back(std::make_unique<IreeExecutable>(std::move(entry), results));
    } catch (const py::error_already_set& e) {
      fail(graphs[i].source, "cannot load {}: {}", compiled[i].artifact.string(), one_line(e));
    }
    loads.push_back({graphs[i].name, compiled[i].hit, compiled[i].seconds + seconds_since(start),
                     compiled[i].compile_seconds});
  }
  return executables;
}

void IreeDevice::check_upload_size(std::span<const std::byte> bytes, stablehlo::ElementType element,
                                   std::span<const int64_t> shape) const {
  const std::size_t expected = device::dense_byte_size(element, shape);
  if (bytes.size() != expected) {
    fail(label_, "upload of {} bytes for a {}-byte {} buffer", bytes.size(), expected,
         stablehlo::to_string(element));
  }
}

BufferPtr IreeDevice::upload(std::span<const std::byte> bytes, stablehlo::ElementType element,
                             std::span<const int64_t> shape) {
  check_upload_size(bytes, element, shape);
  if (options_.kind == DeviceKind::kCpu && bytes.size() >= kParallelCopyBytes) {
    // IREE would copy on one thread, first touching every page there: a large tensor (a BF16
    // model's weights, read from its file) is copied on every core into host memory the CPU
    // device then uses in place, so first touches are spread too (docs/PERFORMANCE.md, "Loading").
    auto copy = std::make_shared<AlignedVector<std::byte>>(bytes.size());
    for_each_slice(
        hardware_threads(), bytes.size(),
        [&](int, std::size_t begin, std::size_t end) {
          std::memcpy(copy->data() + begin, bytes.data() + begin, end - begin);
        },
        4096);
    const std::span<const std::byte> copied(*copy);
    return adopt(copied, element, shape, std::move(copy));
  }
  py::gil_scoped_acquire gil;
  try {
    // Read-only view of the caller's bytes: the runner copies them to the device.
    py::memoryview view =
        py::memoryview::from_memory(bytes.data(), static_cast<py::ssize_t>(bytes.size()));
    return std::make_unique<IreeBuffer>(
        upload_(view, std::string(stablehlo::to_string(element)), shape_tuple(shape)));
  } catch (const py::error_already_set& e) {
    fail(label_, "upload: {}", one_line(e));
  }
}

BufferPtr IreeDevice::upload_in_place(std::span<const std::byte> bytes,
                                      stablehlo::ElementType element,
                                      std::span<const int64_t> shape,
                                      std::shared_ptr<const void> keeper) {
  // Only the CPU computes in host memory.
  if (keeper == nullptr || options_.kind != DeviceKind::kCpu || bytes.empty()) {
    return upload(bytes, element, shape);
  }
  check_upload_size(bytes, element, shape);
  return adopt(bytes, element, shape, std::move(keeper));
}

BufferPtr IreeDevice::adopt(std::span<const std::byte> bytes, stablehlo::ElementType element,
                            std::span<const int64_t> shape, std::shared_ptr<const void> keeper) {
  py::gil_scoped_acquire gil;
  try {
    // A numpy array over the bytes whose base, a capsule, holds the keeper: the imported buffer
    // keeps the array, and so the bytes, alive. Writable only to IREE's import, which asks for
    // it; no graph writes its weights.
    py::capsule owner(new std::shared_ptr<const void>(std::move(keeper)),
                      [](void* kept) { delete static_cast<std::shared_ptr<const void>*>(kept); });
    py::array array(py::dtype("uint8"), {static_cast<py::ssize_t>(bytes.size())},
                    {static_cast<py::ssize_t>(1)},
                    const_cast<std::byte*>(bytes.data()),  // NOLINT: never written, see above
                    owner);
    py::tuple adopted =
        adopt_(array, std::string(stablehlo::to_string(element)), shape_tuple(shape));
    return std::make_unique<IreeBuffer>(adopted[0], adopted[1]);
  } catch (const py::error_already_set& e) {
    fail(label_, "upload: {}", one_line(e));
  }
}

BufferPtr IreeDevice::zeros(stablehlo::ElementType element, std::span<const int64_t> shape) {
  device::dense_byte_size(element, shape);  // rejects negative dimensions
  py::gil_scoped_acquire gil;
  try {
    py::tuple zeroed = zeros_(std::string(stablehlo::to_string(element)), shape_tuple(shape));
    if (!zeroed[1].is_none()) zeroed_memory_.push_back(zeroed[1]);
    return std::make_unique<IreeBuffer>(zeroed[0], zeroed[1]);
  } catch (const py::error_already_set& e) {
    fail(label_, "zeros: {}", one_line(e));
  }
}

const IreeBuffer& IreeDevice::buffer_of(const device::Buffer* buffer) const {
  const auto* iree = dynamic_cast<const IreeBuffer*>(buffer);
  if (iree == nullptr) {
    fail(label_, "{}", buffer == nullptr ? "null buffer" : "buffer of another runtime");
  }
  return *iree;
}

std::vector<BufferPtr> IreeDevice::execute(device::Executable& executable,
                                           std::span<device::Buffer* const> arguments) {
  const auto* iree = dynamic_cast<const IreeExecutable*>(&executable);
  if (iree == nullptr) fail(label_, "execute: executable of another runtime");
  std::vector<const IreeBuffer*> buffers;
  buffers.reserve(arguments.size());
  for (const device::Buffer* argument : arguments) buffers.push_back(&buffer_of(argument));
  py::gil_scoped_acquire gil;
  try {
    py::list args(buffers.size());
    for (std::size_t i = 0; i < buffers.size(); ++i) args[i] = buffers[i]->view();
    py::list results = call_(iree->entry(), args);
    std::vector<BufferPtr> out;
    out.reserve(results.size());
    for (py::handle result : results) {
      out.push_back(std::make_unique<IreeBuffer>(py::reinterpret_borrow<py::object>(result)));
    }
    return out;
  } catch (const py::error_already_set& e) {
    fail(label_, "execute: {}", one_line(e));
  }
}

void IreeDevice::read(const device::Buffer& buffer, std::span<std::byte> destination) {
  const IreeBuffer& iree = buffer_of(&buffer);
  py::gil_scoped_acquire gil;
  try {
    py::memoryview out = py::memoryview::from_memory(
        destination.data(), static_cast<py::ssize_t>(destination.size()), /*readonly=*/false);
    read_(iree.view(), out);
  } catch (const py::error_already_set& e) {
    fail(label_, "read: {}", one_line(e));
  }
}

}  // namespace

int iree_cpu_workers(const device::DeviceOptions& options) {
  return options.threads > 0 ? options.threads : hardware_threads();
}

std::unique_ptr<device::Device> open_iree_device(const device::DeviceOptions& options,
                                                 const IreeOptions& iree) {
  return std::make_unique<IreeDevice>(options, iree);
}

}  // namespace xlacel::backends
