#pragma once
// The thin layer each runtime provides (src/backends/iree, src/backends/pjrt) and the executor
// (src/executor) is written against: compile or load an executable, upload a buffer, execute
// with donation, read a buffer back. It knows no model: graphs arrive as StableHLO text, buffers
// as element type + shape + bytes. How the runtime wants weights kept and multiplied is its
// lowering's to say (lowering/lowering.h), not the device's.
//
// Threads: a Device may be called from any thread, one call at a time (the executor serializes).
// Lifetimes: Buffers and Executables keep what they need of their Device alive, so they may be
// destroyed before or after it, in any order.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stablehlo/sharding.h"
#include "stablehlo/types.h"

namespace xlacel::device {

enum class DeviceKind { kCpu, kCuda };
const char* device_kind_name(DeviceKind kind);  // "cpu", "cuda"
std::optional<DeviceKind> parse_device_kind(std::string_view name);

// Bytes of a dense, row-major `shape` of `element` (i1 takes a byte per element, as every
// runtime stores it). Throws Error on a negative dimension.
std::size_t dense_byte_size(stablehlo::ElementType element, std::span<const int64_t> shape);

// What every runtime understands; options of one runtime only live in that runtime's own
// options struct (backends/iree/iree_device.h, backends/pjrt/pjrt_device.h).
struct DeviceOptions {
  DeviceKind kind = DeviceKind::kCpu;
  // CPU runtimes' worker threads (0: IREE one per hardware thread, XLA its default).
  int threads = 0;
  std::filesystem::path compile_cache_dir;  // empty: CompileCache::default_directory()
  // Devices one graph is partitioned over (tensor parallelism): the runtime's own partitioner
  // splits each graph by the shardings its arguments carry (XLA: the SPMD partitioner). 1: one
  // device; runtimes without a partitioner refuse more.
  int tensor_parallel = 1;
  // One line of progress ("iree: compiling decode-b8-s8-c512-f32 ..."), for stderr; may be empty.
  std::function<void(std::string_view)> progress;

  // FieldError naming the field (threads, tensor_parallel) when a value is out of its domain;
  // every runtime's device calls it when it opens.
  void validate() const;
};

// A buffer on the device. Destroying it releases the device memory.
class Buffer {
 public:
  virtual ~Buffer() = default;
};
using BufferPtr = std::unique_ptr<Buffer>;

// A loaded executable of one graph.
class Executable {
 public:
  virtual ~Executable() = default;
  virtual std::size_t num_results() const = 0;
};

// One graph to compile: StableHLO text with an entry `main`, the IREE module name it declares,
// and a source name for diagnostics and cache sidecars ("<model>.<graph>.mlir").
struct GraphSource {
  std::string name;  // "decode-b8-s8-c512-f32", for progress and reports
  std::string mlir;
  std::string module_name;  // "xlacel_decode"
  std::string source;
};

// How getting one executable went.
struct GraphLoad {
  std::string graph;           // GraphSource::name
  bool cached = false;         // the compiled artifact came from the on-disk cache
  double seconds = 0;          // wall time to get the executable (lookup or compile) and load it
  double compile_seconds = 0;  // the compiler's own time (on a cache hit: as recorded then)
};

class Device {
 public:
  virtual ~Device() = default;

  virtual const std::string& runtime() const = 0;      // "iree", "xla"
  virtual const std::string& description() const = 0;  // "cpu (llvm-cpu, local-task, 2 threads)"

  // The devices this one spans (DeviceOptions::tensor_parallel): each graph runs partitioned over
  // all of them, and each buffer is one slice (or copy) per device (sharding.h).
  virtual int64_t partitions() const { return 1; }

  // Compiles (or takes from the compile cache) and loads each graph, several at a time where
  // the runtime allows; `loads` receives one entry per graph, in order. Error naming the graph's
  // source on failure.
  virtual std::vector<std::unique_ptr<Executable>> load(std::span<const GraphSource> graphs,
                                                        std::vector<GraphLoad>& loads) = 0;

  // A device buffer holding a copy of `bytes` (dense, row-major `shape` of `element`); `bytes`
  // may be freed when this returns. Error when bytes.size() != dense_byte_size(element, shape)
  // or the runtime has no such element type.
  virtual BufferPtr upload(std::span<const std::byte> bytes, stablehlo::ElementType element,
                           std::span<const int64_t> shape) = 0;
  // As upload(), for bytes that stay valid and unchanged while `keeper` lives, which the
  // runtime's lowering uses in place (lowering::Lowering::in_place): a runtime that computes in
  // host memory keeps `keeper` and uses the bytes where they are; others copy them.
  virtual BufferPtr upload_in_place(std::span<const std::byte> bytes,
                                    stablehlo::ElementType element, std::span<const int64_t> shape,
                                    std::shared_ptr<const void> keeper) {
    (void)keeper;
    return upload(bytes, element, shape);
  }
  // A zero-filled device buffer.
  virtual BufferPtr zeros(stablehlo::ElementType element, std::span<const int64_t> shape) = 0;
  // As upload() and zeros(), laid over partitions() devices as `sharding` says: slice i of the
  // cut axis on device i, or a copy on each (what upload() and zeros() do). Error when the axis
  // does not divide. On one device a sharding is the whole tensor.
  virtual BufferPtr upload_sharded(std::span<const std::byte> bytes, stablehlo::ElementType element,
                                   std::span<const int64_t> shape,
                                   const stablehlo::Sharding& sharding) {
    (void)sharding;
    return upload(bytes, element, shape);
  }
  virtual BufferPtr zeros_sharded(stablehlo::ElementType element, std::span<const int64_t> shape,
                                  const stablehlo::Sharding& sharding) {
    (void)sharding;
    return zeros(element, shape);
  }

  // Runs `executable` on `arguments` (in order) and returns every result (in order). Arguments
  // the graph aliases to results (tf.aliasing_output) are donated: the runtime may reuse their
  // memory for the results, so the caller must not pass those Buffers again (only destroy them).
  // Across partitions() devices, each device runs on its slices and donates its own.
  virtual std::vector<BufferPtr> execute(Executable& executable,
                                         std::span<Buffer* const> arguments) = 0;

  // Copies the whole buffer (exactly destination.size() bytes, else Error) to the host, waiting
  // for the computation that produces it. Across devices: a replicated buffer's first copy (a
  // sliced one is larger than its slice, so reading it is an Error, never a part).
  virtual void read(const Buffer& buffer, std::span<std::byte> destination) = 0;
};

}  // namespace xlacel::device
