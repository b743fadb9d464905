#pragma once
// A PJRT C-API plugin: found (explicit path, $XLACEL_PJRT_PLUGIN, or the project venv's pip
// wheel), loaded with dlopen, its API version checked and PJRT_Plugin_Initialize called once per
// process. Also turns the PJRT_Error* every entry point returns into a one-line xlacel::Error.
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "backends/pjrt/pjrt_c_api_subset.h"
#include "device/device.h"

namespace xlacel::pjrt {

// The minor version from which the function table has the order pjrt_c_api_subset.h declares
// (0.57 rearranged it; later versions only append).
inline constexpr int kMinimumMinor = 57;

// What to install, for "not found" messages.
inline constexpr const char* kCpuPluginPackage = "xla-cpu-pjrt==0.0.1";
inline constexpr const char* kCudaPluginPackage = "jax-cuda13-pjrt";

// "xla backend (cpu)": what Errors about a device's plugin start with.
std::string device_label(device::DeviceKind kind);

// Where a plugin was found, and how (for messages).
struct PluginLocation {
  std::filesystem::path path;
  std::string how;  // "--plugin", "$XLACEL_PJRT_PLUGIN", "venv"
};

// The plugin for `device`: `explicit_path` when non-empty, else $XLACEL_PJRT_PLUGIN, else the
// venv's wheel (cpu: xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so from xla-cpu-pjrt; cuda:
// jax_plugins/xla_cuda13/xla_cuda_plugin.so from jax-cuda13-pjrt). Throws Error naming the path
// (or the package to install) when there is none.
PluginLocation find_plugin(device::DeviceKind device, const std::string& explicit_path);

// dlopens the NVIDIA libraries the CUDA plugin needs from the nvidia-* wheels next to it (as
// jax_plugins/xla_cuda13 does before loading it), so that the plugin's own dlopen calls find
// them. Missing ones are skipped, as JAX does: the plugin then reports what it lacks. Returns
// how many were loaded.
int preload_cuda_libraries(const std::filesystem::path& plugin_path);

class Plugin {
 public:
  // The loaded, initialized plugin at `path` (one per canonical path and process: plugins are
  // never unloaded, and PJRT_Plugin_Initialize may run only once). Throws Error naming the
  // path when it is not a PJRT plugin or its API version is not one we can drive.
  static std::shared_ptr<const Plugin> load(const std::filesystem::path& path);

  const PJRT_Api& api() const { return *api_; }
  const std::filesystem::path& path() const { return path_; }
  int major() const { return api_->pjrt_api_version.major_version; }
  int minor() const { return api_->pjrt_api_version.minor_version; }
  // "xla_version=... stablehlo_current_version=..." (empty when the plugin reports none).
  const std::string& attributes() const { return attributes_; }
  // Whether PJRT_Executable_Serialize and PJRT_Executable_DeserializeAndLoad are present.
  bool can_serialize() const;

  // Throws Error("xla: <function>: <message>") when `error` is non-null (and destroys it).
  void check(PJRT_Error* error, std::string_view function) const;
  // The error's code (the error stays alive); for callers that handle some codes themselves.
  PJRT_Error_Code code_of(const PJRT_Error* error) const;
  std::string message_of(PJRT_Error* error) const;  // destroys `error`
  // Waits for `event` and destroys it; throws as check() when it completed with an error.
  void await(PJRT_Event* event, std::string_view function) const;
  void destroy(PJRT_Event* event) const;

 private:
  Plugin(std::filesystem::path path, const PJRT_Api* api) : path_(std::move(path)), api_(api) {}
  void initialize();

  std::filesystem::path path_;
  const PJRT_Api* api_;
  std::string attributes_;
};

// An argument struct with struct_size set: the size of our declaration (>= what the plugin
// needs, which is all it checks).
template <typename Args>
Args make_args() {
  Args args{};
  args.struct_size = sizeof(Args);
  return args;
}

}  // namespace xlacel::pjrt
