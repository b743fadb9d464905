#include "backends/pjrt/pjrt_device.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <utility>
#include <vector>

#include "backends/pjrt/compile_options_proto.h"
#include "backends/pjrt/cpu_kernel_choice.h"
#include "backends/pjrt/pjrt_client.h"
#include "backends/pjrt/pjrt_executable_cache.h"
#include "backends/pjrt/pjrt_open_client.h"
#include "common/error.h"
#include "compile_cache/compile_cache.h"

namespace xlacel::backends {

using device::BufferPtr;
using device::DeviceKind;
using device::GraphLoad;
using device::GraphSource;

namespace {

// Buffers and executables hold the client: PJRT objects must be destroyed before their client.
// (Members are destroyed in reverse order: the PJRT objects first.)
// A buffer is one PJRT buffer per device of the mesh, shard i on client device i.
class PjrtBuffer final : public device::Buffer {
 public:
  PjrtBuffer(std::shared_ptr<const pjrt::Client> client, std::vector<pjrt::Buffer> shards)
      : client_(std::move(client)), shards_(std::move(shards)) {}
  const std::vector<pjrt::Buffer>& shards() const { return shards_; }

 private:
  std::shared_ptr<const pjrt::Client> client_;
  std::vector<pjrt::Buffer> shards_;
};

class PjrtExecutable final : public device::Executable {
 public:
  PjrtExecutable(std::shared_ptr<const pjrt::Client> client, pjrt::LoadedExecutable executable)
      : client_(std::move(client)), executable_(std::move(executable)) {}
  std::size_t num_results() const override { return executable_.num_outputs(); }
  const pjrt::LoadedExecutable& executable() const { return executable_; }

 private:
  std::shared_ptr<const pjrt::Client> client_;
  pjrt::LoadedExecutable executable_;
};

class PjrtDevice final : public device::Device {
 public:
  PjrtDevice(const device::DeviceOptions& options, const PjrtOptions& xla);

  const std::string& runtime() const override { return runtime_; }
  const std::string& description() const override { return description_; }

  std::vector<std::unique_ptr<device::Executable>> load(std::span<const GraphSource> graphs,
                                                        std::vector<GraphLoad>& loads) override;
  BufferPtr upload(std::span<const std::byte> bytes, stablehlo::ElementType element,
                   std::span<const int64_t> shape) override;
  BufferPtr zeros(stablehlo::ElementType element, std::span<const int64_t> shape) override;
  int64_t partitions() const override { return options_.tensor_parallel; }
  BufferPtr upload_sharded(std::span<const std::byte> bytes, stablehlo::ElementType element,
                           std::span<const int64_t> shape,
                           const stablehlo::Sharding& sharding) override;
  BufferPtr zeros_sharded(stablehlo::ElementType element, std::span<const int64_t> shape,
                          const stablehlo::Sharding& sharding) override;
  std::vector<BufferPtr> execute(device::Executable& executable,
                                 std::span<device::Buffer* const> arguments) override;
  void read(const device::Buffer& buffer, std::span<std::byte> destination) override;

 private:
  void progress(const std::string& line) const {
    if (options_.progress) options_.progress(line);
  }
  const std::vector<pjrt::Buffer>& shards_of(const device::Buffer* buffer) const;
  // Checks that `sharding` cuts `shape` into partitions() equal slices (Error naming it).
  void check_sharding(std::span<const int64_t> shape, const stablehlo::Sharding& sharding) const;

  device::DeviceOptions options_;
  std::string runtime_ = "xla";
  std::string label_;  // "xla backend (cpu)", for Errors
  std::string description_;
  std::shared_ptr<const pjrt::Client> client_;
  std::vector<std::vector<pjrt::PJRT_Buffer*>> arguments_;  // per device, reused by every call
};

PjrtDevice::PjrtDevice(const device::DeviceOptions& options, const PjrtOptions& xla)
    : options_(options), label_(pjrt::device_label(options.kind)) {
  options_.validate();
  client_ = pjrt::open_client(options_.kind, xla.plugin_path, options_.threads,
                              options_.tensor_parallel, options_.progress);
  description_ =
      fmt::format("{} (PJRT plugin {}, platform {}", device::device_kind_name(options_.kind),
                  client_->plugin().path().filename().string(), client_->platform_name());
  if (options_.kind == DeviceKind::kCuda && !client_->device_kind().empty()) {
    description_ += ", " + client_->device_kind();
  }
  if (options_.threads > 0) {
    description_ +=
        fmt::format(", {} thread{}", options_.threads, options_.threads == 1 ? "" : "s");
  }
  if (options_.tensor_parallel > 1) {
    description_ += fmt::format(", tensor parallel over {} devices", options_.tensor_parallel);
  }
  description_ += ")";
}

std::vector<std::unique_ptr<device::Executable>> PjrtDevice::load(
    std::span<const GraphSource> graphs, std::vector<GraphLoad>& loads) {
  compile_cache::CompileCache cache(options_.compile_cache_dir);
  std::vector<std::string> compile_options;
  std::vector<compile_cache::CompileRequest> requests;
  for (const GraphSource& graph : graphs) {
    // Each graph's own options (its matrix products' kernels: cpu_kernel_choice.h).
    pjrt::GraphCompileOptions graph_options =
        pjrt::graph_compile_options(options_.kind, graph.mlir);
    // Partitioned graphs keep XLA's own dots: with XNNPACK's, SmolLM2's prefill over 3 CPU
    // devices corrupted the heap on its first call (glibc: "malloc(): unaligned tcache chunk
    // detected"; XLA CPU of xla-cpu-pjrt 0.81); without them it is exact.
    if (options_.tensor_parallel > 1) graph_options.xnnpack_dots = false;
    compile_options.push_back(
        pjrt::partitioned_compile_options(graph_options, options_.tensor_parallel));
    requests.push_back({graph.mlir, graph.source,
                        pjrt::pjrt_target(*client_, options_.kind, compile_options.back())});
    // Progress goes out from this thread only (the callback need not be thread-safe).
    if (pjrt::will_compile(*client_, cache, requests.back(), compile_options.back())) {
      progress(fmt::format("xla: compiling {} ...", graph.name));
    }
  }
  std::vector<pjrt::ExecutableLoad> compiled =
      pjrt::load_executables(*client_, cache, requests, compile_options);
  std::vector<std::unique_ptr<device::Executable>> executables;
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    pjrt::ExecutableLoad& load = compiled[i];
    for (const std::string& line : load.notes) progress(line);
    progress(fmt::format("xla: {} {} ({:.2f} s)", graphs[i].name,
                         load.cached ? "from cache" : "compiled", load.seconds));
    loads.push_back({graphs[i].name, load.cached, load.seconds, load.compile_seconds});
    // Partition d runs on the device holding every buffer's shard d.
    if (options_.tensor_parallel > 1 &&
        load.executable.addressable_devices() != client_->devices()) {
      fail(graphs[i].source,
           "xla placed the {} partitions on other devices than the client's first {}",
           options_.tensor_parallel, options_.tensor_parallel);
    }
    executables.push_back(std::make_unique<PjrtExecutable>(client_, std::move(load.executable)));
  }
  return executables;
}

BufferPtr PjrtDevice::upload(std::span<const std::byte> bytes, stablehlo::ElementType element,
                             std::span<const int64_t> shape) {
  return upload_sharded(bytes, element, shape, {});
}

BufferPtr PjrtDevice::zeros(stablehlo::ElementType element, std::span<const int64_t> shape) {
  return zeros_sharded(element, shape, {});
}

void PjrtDevice::check_sharding(std::span<const int64_t> shape,
                                const stablehlo::Sharding& sharding) const {
  if (sharding.replicated()) return;
  const auto axis = static_cast<std::size_t>(sharding.axis);
  if (axis >= shape.size() || shape[axis] % options_.tensor_parallel != 0) {
    fail(label_, "a buffer of rank {} cannot be cut {} ways along axis {}", shape.size(),
         options_.tensor_parallel, sharding.axis);
  }
}

BufferPtr PjrtDevice::upload_sharded(std::span<const std::byte> bytes,
                                     stablehlo::ElementType element, std::span<const int64_t> shape,
                                     const stablehlo::Sharding& sharding) {
  const std::size_t expected = device::dense_byte_size(element, shape);
  if (bytes.size() != expected) {
    fail(label_, "upload of {} bytes for a {}-byte {} buffer", bytes.size(), expected,
         stablehlo::to_string(element));
  }
  check_sharding(shape, sharding);
  const int64_t parts = options_.tensor_parallel;
  const pjrt::PJRT_Buffer_Type type = pjrt::buffer_type(element);
  std::vector<pjrt::Buffer> shards;
  if (sharding.replicated()) {
    for (int64_t d = 0; d < parts; ++d) {
      shards.push_back(client_->upload(bytes.data(), type, shape, static_cast<std::size_t>(d)));
    }
    return std::make_unique<PjrtBuffer>(client_, std::move(shards));
  }
  // Row-major: the cut axis splits each of the `outer` runs of the axes before it into `parts`
  // equal pieces of `piece` bytes; device d's slice is piece d of every run, gathered.
  const auto axis = static_cast<std::size_t>(sharding.axis);
  const std::vector<int64_t> slice_shape = stablehlo::shard_shape(shape, sharding, parts);
  std::size_t outer = 1;
  for (std::size_t i = 0; i < axis; ++i) outer *= static_cast<std::size_t>(shape[i]);
  const std::size_t run = outer == 0 ? 0 : bytes.size() / outer;
  const std::size_t piece = run / static_cast<std::size_t>(parts);
  std::vector<std::byte> slice(outer * piece);
  for (int64_t d = 0; d < parts; ++d) {
    for (std::size_t o = 0; o < outer; ++o) {
      std::copy_n(bytes.data() + o * run + static_cast<std::size_t>(d) * piece, piece,
                  slice.data() + o * piece);
    }
    shards.push_back(client_->upload(slice.data(), type, slice_shape, static_cast<std::size_t>(d)));
  }
  return std::make_unique<PjrtBuffer>(client_, std::move(shards));
}

BufferPtr PjrtDevice::zeros_sharded(stablehlo::ElementType element, std::span<const int64_t> shape,
                                    const stablehlo::Sharding& sharding) {
  check_sharding(shape, sharding);
  const std::vector<int64_t> slice_shape =
      stablehlo::shard_shape(shape, sharding, options_.tensor_parallel);
  // calloc: large blocks come zeroed from the kernel, so the host copy costs no memory.
  const std::size_t size = device::dense_byte_size(element, slice_shape);
  std::unique_ptr<void, decltype(&std::free)> zeros(std::calloc(size == 0 ? 1 : size, 1),
                                                    &std::free);
  if (zeros == nullptr) fail(label_, "cannot allocate {} host bytes of zeros", size);
  std::vector<pjrt::Buffer> shards;
  for (int64_t d = 0; d < options_.tensor_parallel; ++d) {
    shards.push_back(client_->upload(zeros.get(), pjrt::buffer_type(element), slice_shape,
                                     static_cast<std::size_t>(d)));
  }
  return std::make_unique<PjrtBuffer>(client_, std::move(shards));
}

const std::vector<pjrt::Buffer>& PjrtDevice::shards_of(const device::Buffer* buffer) const {
  const auto* pjrt = dynamic_cast<const PjrtBuffer*>(buffer);
  if (pjrt == nullptr) {
    fail(label_, "{}", buffer == nullptr ? "null buffer" : "buffer of another runtime");
  }
  if (pjrt->shards().empty() || !pjrt->shards().front()) {
    fail(label_, "buffer already destroyed");
  }
  return pjrt->shards();
}

std::vector<BufferPtr> PjrtDevice::execute(device::Executable& executable,
                                           std::span<device::Buffer* const> arguments) {
  const auto* pjrt = dynamic_cast<const PjrtExecutable*>(&executable);
  if (pjrt == nullptr) fail(label_, "execute: executable of another runtime");
  const auto devices = static_cast<std::size_t>(options_.tensor_parallel);
  arguments_.resize(devices);
  for (auto& list : arguments_) list.clear();
  for (const device::Buffer* argument : arguments) {
    const std::vector<pjrt::Buffer>& shards = shards_of(argument);
    for (std::size_t d = 0; d < devices; ++d) arguments_[d].push_back(shards[d].get());
  }
  std::vector<std::span<pjrt::PJRT_Buffer* const>> lists(arguments_.begin(), arguments_.end());
  // Aliased arguments are donated on every device: PJRT marks their buffers deleted; the caller
  // only destroys them.
  std::vector<std::vector<pjrt::Buffer>> results = pjrt->executable().execute(lists);
  std::vector<BufferPtr> out;
  for (std::size_t r = 0; r < pjrt->num_results(); ++r) {
    std::vector<pjrt::Buffer> shards;
    for (std::size_t d = 0; d < devices; ++d) shards.push_back(std::move(results[d][r]));
    out.push_back(std::make_unique<PjrtBuffer>(client_, std::move(shards)));
  }
  return out;
}

void PjrtDevice::read(const device::Buffer& buffer, std::span<std::byte> destination) {
  // Every device holds a whole replicated buffer: the first one's is read. A sliced buffer's
  // shard is smaller than the whole, so the size check refuses it.
  const pjrt::Buffer& pjrt = shards_of(&buffer).front();
  const std::size_t size = pjrt.host_size();
  if (size != destination.size()) {
    fail(label_, "read of {} bytes from a {}-byte buffer", destination.size(), size);
  }
  pjrt.to_host(destination.data(), destination.size());
}

}  // namespace

std::unique_ptr<device::Device> open_pjrt_device(const device::DeviceOptions& options,
                                                 const PjrtOptions& xla) {
  return std::make_unique<PjrtDevice>(options, xla);
}

}  // namespace xlacel::backends
