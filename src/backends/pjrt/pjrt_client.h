#pragma once
// Owning C++ handles over a plugin's PJRT objects: the client and the devices it uses (its first
// one, or its first N for a program partitioned over N), device buffers, and loaded executables.
// Each destroys its object once; every failing call throws Error("xla: <function>: <message>"). A
// client must outlive its buffers and executables.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/pjrt/pjrt_plugin.h"
#include "stablehlo/types.h"

namespace xlacel::pjrt {

// PJRT's type for a StableHLO element type (every one has one).
PJRT_Buffer_Type buffer_type(stablehlo::ElementType element);

class Buffer {
 public:
  Buffer() = default;
  Buffer(const Plugin* plugin, PJRT_Buffer* buffer) : plugin_(plugin), buffer_(buffer) {}
  Buffer(Buffer&& other) noexcept { *this = std::move(other); }
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { reset(); }

  PJRT_Buffer* get() const { return buffer_; }
  explicit operator bool() const { return buffer_ != nullptr; }
  void reset();

  // Copies the whole buffer into `destination` (exactly its size in bytes) and waits.
  void to_host(void* destination, std::size_t size) const;
  // The bytes to_host() writes.
  std::size_t host_size() const;

 private:
  const Plugin* plugin_ = nullptr;
  PJRT_Buffer* buffer_ = nullptr;
};

class LoadedExecutable {
 public:
  LoadedExecutable() = default;
  LoadedExecutable(const Plugin* plugin, PJRT_LoadedExecutable* executable);
  LoadedExecutable(LoadedExecutable&& other) noexcept { *this = std::move(other); }
  LoadedExecutable& operator=(LoadedExecutable&& other) noexcept;
  LoadedExecutable(const LoadedExecutable&) = delete;
  LoadedExecutable& operator=(const LoadedExecutable&) = delete;
  ~LoadedExecutable() { reset(); }

  explicit operator bool() const { return executable_ != nullptr; }
  void reset();
  std::size_t num_outputs() const { return num_outputs_; }

  // The plugin's serialization, or nullopt when it does not implement one.
  std::optional<std::string> serialize() const;

  // Runs on the executable's device: `arguments` in order, results in order. Arguments the
  // program aliases to results (tf.aliasing_output) are donated: their buffers are consumed and
  // must not be used again (destroying them is fine).
  std::vector<Buffer> execute(std::span<PJRT_Buffer* const> arguments) const;
  // Runs a program partitioned over several devices: argument_lists[d] holds device d's
  // arguments (its slices or copies, on that device, in the order of addressable_devices());
  // returns results[d][output]. Donation as above, on each device.
  std::vector<std::vector<Buffer>> execute(
      std::span<const std::span<PJRT_Buffer* const>> argument_lists) const;

  // The devices the executable runs on, in partition order.
  std::vector<PJRT_Device*> addressable_devices() const;
  // The optimized program XLA compiled (after SPMD partitioning), serialized: `format` "hlo" (an
  // HloModuleProto) or "hlo_with_config" (an HloModuleProtoWithConfig, as XLA's plugins give).
  struct Program {
    std::string format;
    std::string code;
  };
  Program optimized_program() const;

 private:
  std::size_t count_outputs() const;
  // Calls `use` with the PJRT_Executable behind this loaded one (destroyed afterwards).
  template <typename Use>
  auto with_executable(Use use) const;

  const Plugin* plugin_ = nullptr;
  PJRT_LoadedExecutable* executable_ = nullptr;
  std::size_t num_outputs_ = 0;
};

// A PJRT_Client_Create option with an integer value (the plugin rejects names it does not know).
struct IntegerOption {
  std::string name;
  int64_t value = 0;
};

class Client {
 public:
  // Uses the first `devices` addressable devices (Error when the client has fewer).
  explicit Client(std::shared_ptr<const Plugin> plugin, std::span<const IntegerOption> options = {},
                  std::size_t devices = 1);
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  ~Client();

  const Plugin& plugin() const { return *plugin_; }
  const std::string& platform_name() const { return platform_name_; }
  const std::string& platform_version() const { return platform_version_; }
  const std::string& device_kind() const { return device_kind_; }  // of the devices we use
  // The devices we use, in order (buffers and partitions are numbered by them).
  const std::vector<PJRT_Device*>& devices() const { return devices_; }

  // A buffer on devices()[device] holding a copy of `data` (dense, row-major `dims` of `type`).
  // The call returns once the plugin no longer reads `data`, so the caller may free it right
  // after.
  Buffer upload(const void* data, PJRT_Buffer_Type type, std::span<const int64_t> dims,
                std::size_t device = 0) const;

  // Compiles StableHLO (MLIR text or bytecode) with a serialized CompileOptionsProto.
  LoadedExecutable compile(std::string_view mlir, const std::string& compile_options) const;
  // Loads what LoadedExecutable::serialize() produced (same plugin build and device).
  LoadedExecutable deserialize(std::string_view serialized) const;

 private:
  std::shared_ptr<const Plugin> plugin_;
  PJRT_Client* client_ = nullptr;
  std::vector<PJRT_Device*> devices_;
  std::string platform_name_;
  std::string platform_version_;
  std::string device_kind_;
};

}  // namespace xlacel::pjrt
