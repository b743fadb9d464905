#include "backends/iree_module.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "backends/iree/iree_module_entry.h"
#include "common/error.h"

namespace xlacel::backends {

namespace fs = std::filesystem;

namespace {

// Where to look, in order (see iree_module.h).
std::vector<fs::path> candidate_paths() {
  if (const char* chosen = std::getenv("XLACEL_IREE_MODULE"); chosen != nullptr && *chosen) {
    return {chosen};
  }
  std::vector<fs::path> paths;
  std::error_code error;
  if (fs::path self = fs::read_symlink("/proc/self/exe", error); !error) {
    paths.push_back(self.parent_path() / kIreeModuleName);
  }
#ifdef XLACEL_IREE_MODULE_BUILT
  // The build tree's module, for programs that do not sit beside it (the tests).
  paths.emplace_back(XLACEL_IREE_MODULE_BUILT);
#endif
  return paths;
}

// The first candidate that exists (the last one when none does, so the error names a path).
fs::path module_path() {
  std::vector<fs::path> paths = candidate_paths();
  for (const fs::path& path : paths) {
    std::error_code error;
    if (fs::is_regular_file(path, error)) return path;
  }
  return paths.empty() ? fs::path(kIreeModuleName) : paths.front();
}

// The module's entry points, looked up once per process (the module is never unloaded).
struct Entries {
  IreeLoweringEntry lowering = nullptr;
  IreeDeviceEntry device = nullptr;
  IreeCpuKernelsEntry cpu_kernels = nullptr;
};

Entries load_entries() {
  const fs::path path = module_path();
  // RTLD_GLOBAL: the module brings libpython, whose symbols the Python extensions it imports
  // later (numpy, iree.runtime) expect to find globally.
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    fail("iree backend", "cannot load {}: {}", path.string(), why != nullptr ? why : "unknown");
  }
  auto symbol = [&](const char* name) {
    void* entry = ::dlsym(handle, name);
    if (entry == nullptr) fail("iree backend", "cannot load {}: no {} in it", path.string(), name);
    return entry;
  };
  return {reinterpret_cast<IreeLoweringEntry>(symbol(kIreeLoweringEntry)),
          reinterpret_cast<IreeDeviceEntry>(symbol(kIreeDeviceEntry)),
          reinterpret_cast<IreeCpuKernelsEntry>(symbol(kIreeCpuKernelsEntry))};
}

const Entries& entries() {
  // A failed load is not remembered: the next call tries again (and fails the same way).
  static std::mutex mutex;
  static Entries loaded;
  std::lock_guard lock(mutex);
  if (loaded.device == nullptr) loaded = load_entries();
  return loaded;
}

}  // namespace

std::unique_ptr<lowering::Lowering> make_iree_lowering_from_module(
    const device::DeviceOptions& options) {
  std::unique_ptr<lowering::Lowering> lowering;
  entries().lowering(options, lowering);
  return lowering;
}

std::unique_ptr<device::Device> open_iree_device_from_module(const device::DeviceOptions& options,
                                                             const IreeOptions& iree) {
  std::unique_ptr<device::Device> device;
  entries().device(options, iree, device);
  return device;
}

std::string iree_cpu_kernels_from_module() {
  std::string kernels;
  entries().cpu_kernels(kernels);
  return kernels;
}

}  // namespace xlacel::backends
