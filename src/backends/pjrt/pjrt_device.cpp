#include "backends/pjrt/pjrt_device.h"

#include <fmt/format.h>

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
// (Members are destroyed in reverse order: the PJRT object first.)
class PjrtBuffer final : public device::Buffer {
 public:
  PjrtBuffer(std::shared_ptr<const pjrt::Client> client, pjrt::Buffer buffer)
      : client_(std::move(client)), buffer_(std::move(buffer)) {}
  const pjrt::Buffer& buffer() const { return buffer_; }

 private:
  std::shared_ptr<const pjrt::Client> client_;
  pjrt::Buffer buffer_;
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
  std::vector<BufferPtr> execute(device::Executable& executable,
                                 std::span<device::Buffer* const> arguments) override;
  void read(const device::Buffer& buffer, std::span<std::byte> destination) override;

 private:
  void progress(const std::string& line) const {
    if (options_.progress) options_.progress(line);
  }
  const pjrt::Buffer& buffer_of(const device::Buffer* buffer) const;

  device::DeviceOptions options_;
  std::string runtime_ = "xla";
  std::string label_;  // "xla backend (cpu)", for Errors
  std::string description_;
  std::shared_ptr<const pjrt::Client> client_;
  std::vector<pjrt::PJRT_Buffer*> arguments_;  // reused by every call
};

PjrtDevice::PjrtDevice(const device::DeviceOptions& options, const PjrtOptions& xla)
    : options_(options), label_(pjrt::device_label(options.kind)) {
  client_ = pjrt::open_client(options_.kind, xla.plugin_path, options_.threads, options_.progress);
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
  description_ += ")";
}

std::vector<std::unique_ptr<device::Executable>> PjrtDevice::load(
    std::span<const GraphSource> graphs, std::vector<GraphLoad>& loads) {
  compile_cache::CompileCache cache(options_.compile_cache_dir);
  std::vector<std::string> compile_options;
  std::vector<compile_cache::CompileRequest> requests;
  for (const GraphSource& graph : graphs) {
    // Each graph's own options (its matrix products' kernels: cpu_kernel_choice.h).
    compile_options.push_back(pjrt::single_device_compile_options(
        pjrt::graph_compile_options(options_.kind, graph.mlir)));
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
    executables.push_back(std::make_unique<PjrtExecutable>(client_, std::move(load.executable)));
  }
  return executables;
}

BufferPtr PjrtDevice::upload(std::span<const std::byte> bytes, stablehlo::ElementType element,
                             std::span<const int64_t> shape) {
  const std::size_t expected = device::dense_byte_size(element, shape);
  if (bytes.size() != expected) {
    fail(label_, "upload of {} bytes for a {}-byte {} buffer", bytes.size(), expected,
         stablehlo::to_string(element));
  }
  return std::make_unique<PjrtBuffer>(
      client_, client_->upload(bytes.data(), pjrt::buffer_type(element), shape));
}

BufferPtr PjrtDevice::zeros(stablehlo::ElementType element, std::span<const int64_t> shape) {
  // calloc: large blocks come zeroed from the kernel, so the host copy costs no memory.
  const std::size_t size = device::dense_byte_size(element, shape);
  std::unique_ptr<void, decltype(&std::free)> zeros(std::calloc(size == 0 ? 1 : size, 1),
                                                    &std::free);
  if (zeros == nullptr) fail(label_, "cannot allocate {} host bytes of zeros", size);
  return std::make_unique<PjrtBuffer>(
      client_, client_->upload(zeros.get(), pjrt::buffer_type(element), shape));
}

const pjrt::Buffer& PjrtDevice::buffer_of(const device::Buffer* buffer) const {
  const auto* pjrt = dynamic_cast<const PjrtBuffer*>(buffer);
  if (pjrt == nullptr) {
    fail(label_, "{}", buffer == nullptr ? "null buffer" : "buffer of another runtime");
  }
  if (!pjrt->buffer()) fail(label_, "buffer already destroyed");
  return pjrt->buffer();
}

std::vector<BufferPtr> PjrtDevice::execute(device::Executable& executable,
                                           std::span<device::Buffer* const> arguments) {
  const auto* pjrt = dynamic_cast<const PjrtExecutable*>(&executable);
  if (pjrt == nullptr) fail(label_, "execute: executable of another runtime");
  arguments_.clear();
  for (const device::Buffer* argument : arguments) arguments_.push_back(buffer_of(argument).get());
  // Aliased arguments are donated: PJRT marks their buffers deleted; the caller only destroys them.
  std::vector<pjrt::Buffer> results = pjrt->executable().execute(arguments_);
  std::vector<BufferPtr> out;
  out.reserve(results.size());
  for (pjrt::Buffer& result : results) {
    out.push_back(std::make_unique<PjrtBuffer>(client_, std::move(result)));
  }
  return out;
}

void PjrtDevice::read(const device::Buffer& buffer, std::span<std::byte> destination) {
  const pjrt::Buffer& pjrt = buffer_of(&buffer);
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
