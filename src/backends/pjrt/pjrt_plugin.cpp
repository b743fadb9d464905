#include "backends/pjrt/pjrt_plugin.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <system_error>
#include <vector>

#include "common/error.h"
#include "common/venv.h"

namespace xlacel::pjrt {

namespace fs = std::filesystem;

namespace {

// The relative path of each device's plugin inside a venv's site-packages, and its package.
struct WheelPlugin {
  const char* relative;
  const char* package;
  const char* what;
};

WheelPlugin wheel_plugin(device::DeviceKind device) {
  if (device == device::DeviceKind::kCuda) {
    return {"jax_plugins/xla_cuda13/xla_cuda_plugin.so", kCudaPluginPackage, "CUDA"};
  }
  return {"xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so", kCpuPluginPackage, "CPU"};
}

fs::path checked_file(const fs::path& path, const std::string& how, device::DeviceKind device) {
  std::error_code error;
  if (!fs::exists(path, error)) {
    fail(device_label(device), "PJRT plugin {} ({}): no such file", path.string(), how);
  }
  if (!fs::is_regular_file(path, error)) {
    fail(device_label(device), "PJRT plugin {} ({}): not a regular file", path.string(), how);
  }
  return path;
}

// Lines joined with " | ": PJRT messages (compiler diagnostics) may span lines, Errors may not.
std::string one_line(std::string_view text) {
  std::string out;
  while (!text.empty()) {
    std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r' || line.back() == '\t')) {
      line.remove_suffix(1);
    }
    if (line.empty()) continue;
    if (!out.empty()) out += " | ";
    out += line;
  }
  constexpr std::size_t kMax = 2000;
  if (out.size() > kMax) out = out.substr(0, kMax) + " ...";
  return out;
}

// Function-table entries this backend calls: the table must reach each, and each must be set.
bool table_has(const PJRT_Api& api, std::size_t offset) {
  return api.struct_size >= offset + sizeof(void*) &&
         *reinterpret_cast<void* const*>(reinterpret_cast<const char*>(&api) + offset) != nullptr;
}

#define XLACEL_PJRT_REQUIRED(name) \
  { offsetof(PJRT_Api, name), #name }
struct Entry {
  std::size_t offset;
  const char* name;
};
constexpr Entry kRequired[] = {
    XLACEL_PJRT_REQUIRED(PJRT_Error_Destroy),
    XLACEL_PJRT_REQUIRED(PJRT_Error_Message),
    XLACEL_PJRT_REQUIRED(PJRT_Error_GetCode),
    XLACEL_PJRT_REQUIRED(PJRT_Plugin_Initialize),
    XLACEL_PJRT_REQUIRED(PJRT_Event_Destroy),
    XLACEL_PJRT_REQUIRED(PJRT_Event_Await),
    XLACEL_PJRT_REQUIRED(PJRT_Client_Create),
    XLACEL_PJRT_REQUIRED(PJRT_Client_Destroy),
    XLACEL_PJRT_REQUIRED(PJRT_Client_PlatformName),
    XLACEL_PJRT_REQUIRED(PJRT_Client_PlatformVersion),
    XLACEL_PJRT_REQUIRED(PJRT_Client_AddressableDevices),
    XLACEL_PJRT_REQUIRED(PJRT_Client_Compile),
    XLACEL_PJRT_REQUIRED(PJRT_Client_BufferFromHostBuffer),
    XLACEL_PJRT_REQUIRED(PJRT_Executable_Destroy),
    XLACEL_PJRT_REQUIRED(PJRT_Executable_NumOutputs),
    XLACEL_PJRT_REQUIRED(PJRT_LoadedExecutable_Destroy),
    XLACEL_PJRT_REQUIRED(PJRT_LoadedExecutable_GetExecutable),
    XLACEL_PJRT_REQUIRED(PJRT_LoadedExecutable_Execute),
    XLACEL_PJRT_REQUIRED(PJRT_Buffer_Destroy),
    XLACEL_PJRT_REQUIRED(PJRT_Buffer_ToHostBuffer),
};
#undef XLACEL_PJRT_REQUIRED

}  // namespace

std::string device_label(device::DeviceKind kind) {
  return fmt::format("xla backend ({})", device::device_kind_name(kind));
}

PluginLocation find_plugin(device::DeviceKind device, const std::string& explicit_path) {
  if (!explicit_path.empty()) {
    return {checked_file(explicit_path, "--plugin", device), "--plugin"};
  }
  if (const char* env = std::getenv("XLACEL_PJRT_PLUGIN"); env != nullptr && *env != '\0') {
    return {checked_file(env, "$XLACEL_PJRT_PLUGIN", device), "$XLACEL_PJRT_PLUGIN"};
  }
  const WheelPlugin wheel = wheel_plugin(device);
  for (const fs::path& site : venv_site_packages()) {
    fs::path candidate = site / wheel.relative;
    std::error_code error;
    if (fs::is_regular_file(candidate, error)) return {candidate, "venv"};
  }
  fail(device_label(device),
       "no PJRT {} plugin found (looked for {} in the venv: {}); install pip package {} "
       "(scripts/setup) or pass --plugin PATH",
       wheel.what, wheel.relative, kVenvSearchDescription, wheel.package);
}

int preload_cuda_libraries(const fs::path& plugin_path) {
  // The plugin lives at <site-packages>/jax_plugins/xla_cuda13/; the NVIDIA wheels install
  // under <site-packages>/nvidia/. CUDA 13 wheels share nvidia/cu13/lib; NCCL, NVSHMEM and
  // cuDNN keep their own directories. The same list as jax_plugins/xla_cuda13 loads.
  struct Library {
    const char* dir;
    const char* file;
  };
  constexpr Library kLibraries[] = {
      {"cu13", "libcudart.so.13"},   {"cu13", "libnvrtc.so.13"},
      {"cu13", "libcublas.so.13"},   {"cu13", "libcublasLt.so.13"},
      {"nccl", "libnccl.so.2"},      {"cu13", "libcupti.so.13"},
      {"cu13", "libcusparse.so.12"}, {"cu13", "libcusolver.so.12"},
      {"cu13", "libcufft.so.12"},    {"nvshmem", "libnvshmem_host.so.3"},
      {"cudnn", "libcudnn.so.9"},
  };
  std::vector<fs::path> sites;
  fs::path beside = plugin_path.parent_path().parent_path().parent_path();
  std::error_code error;
  if (fs::is_directory(beside / "nvidia", error)) sites.push_back(beside);
  for (const fs::path& site : venv_site_packages()) sites.push_back(site);
  int loaded = 0;
  for (const Library& library : kLibraries) {
    for (const fs::path& site : sites) {
      fs::path path = site / "nvidia" / library.dir / "lib" / library.file;
      if (!fs::is_regular_file(path, error)) continue;
      // Kept loaded for the life of the process; later lookups by soname find this copy.
      if (::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) != nullptr) {
        ++loaded;
        break;
      }
    }
  }
  return loaded;
}

std::shared_ptr<const Plugin> Plugin::load(const fs::path& path) {
  static std::mutex mutex;
  static std::map<fs::path, std::shared_ptr<const Plugin>> loaded;
  std::error_code error;
  fs::path canonical = fs::canonical(path, error);
  if (error) fail(path.string(), "cannot open PJRT plugin: {}", error.message());
  std::lock_guard lock(mutex);
  if (auto it = loaded.find(canonical); it != loaded.end()) return it->second;

  // RTLD_LOCAL: each plugin bundles its own copy of XLA, LLVM, protobuf...; their symbols must
  // not resolve against each other (or against anything loaded later).
  void* handle = ::dlopen(canonical.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    fail(path.string(), "not a loadable PJRT plugin: {}", why != nullptr ? why : "dlopen failed");
  }
  using GetPjrtApi = const PJRT_Api* (*)();
  auto get_api = reinterpret_cast<GetPjrtApi>(::dlsym(handle, "GetPjrtApi"));
  if (get_api == nullptr) {
    ::dlclose(handle);
    fail(path.string(), "not a PJRT plugin (no GetPjrtApi symbol)");
  }
  const PJRT_Api* api = get_api();
  if (api == nullptr) fail(path.string(), "GetPjrtApi returned no API table");
  const int major = api->pjrt_api_version.major_version;
  const int minor = api->pjrt_api_version.minor_version;
  if (major != kApiMajor || minor < kMinimumMinor) {
    fail(path.string(),
         "PJRT API version {}.{} is not supported (xlacel drives {}.{} or a later {}.x)", major,
         minor, kApiMajor, kMinimumMinor, kApiMajor);
  }
  for (const Entry& entry : kRequired) {
    if (!table_has(*api, entry.offset)) {
      fail(path.string(), "PJRT API {}.{} table lacks {}", major, minor, entry.name);
    }
  }
  // The plugin is never dlclosed: XLA keeps threads and static state alive until exit.
  std::shared_ptr<Plugin> plugin(new Plugin(canonical, api));
  plugin->initialize();
  loaded.emplace(canonical, plugin);
  return plugin;
}

void Plugin::initialize() {
  auto init = make_args<PJRT_Plugin_Initialize_Args>();
  check(api_->PJRT_Plugin_Initialize(&init), "PJRT_Plugin_Initialize");
  if (!table_has(*api_, offsetof(PJRT_Api, PJRT_Plugin_Attributes))) return;
  auto attributes = make_args<PJRT_Plugin_Attributes_Args>();
  PJRT_Error* error = api_->PJRT_Plugin_Attributes(&attributes);
  if (error != nullptr) {
    message_of(error);  // attributes only feed the cache identity; none is fine
    return;
  }
  for (std::size_t i = 0; i < attributes.num_attributes; ++i) {
    const PJRT_NamedValue& value = attributes.attributes[i];
    std::string name(value.name, value.name_size);
    std::string text;
    switch (value.type) {
      case PJRT_NamedValue_kString:
        text.assign(value.string_value, value.value_size);
        break;
      case PJRT_NamedValue_kInt64:
        text = std::to_string(value.int64_value);
        break;
      case PJRT_NamedValue_kInt64List:
        for (std::size_t j = 0; j < value.value_size; ++j) {
          text += (j ? "." : "") + std::to_string(value.int64_array_value[j]);
        }
        break;
      case PJRT_NamedValue_kFloat:
        text = fmt::format("{}", value.float_value);
        break;
      case PJRT_NamedValue_kBool:
        text = value.bool_value ? "true" : "false";
        break;
    }
    if (!attributes_.empty()) attributes_ += ' ';
    attributes_ += name + "=" + text;
  }
}

bool Plugin::can_serialize() const {
  return table_has(*api_, offsetof(PJRT_Api, PJRT_Executable_Serialize)) &&
         table_has(*api_, offsetof(PJRT_Api, PJRT_Executable_DeserializeAndLoad));
}

std::string Plugin::message_of(PJRT_Error* error) const {
  auto message = make_args<PJRT_Error_Message_Args>();
  message.error = error;
  api_->PJRT_Error_Message(&message);
  std::string text = one_line(std::string_view(message.message, message.message_size));
  auto destroy = make_args<PJRT_Error_Destroy_Args>();
  destroy.error = error;
  api_->PJRT_Error_Destroy(&destroy);
  return text;
}

PJRT_Error_Code Plugin::code_of(const PJRT_Error* error) const {
  auto code = make_args<PJRT_Error_GetCode_Args>();
  code.error = error;
  PJRT_Error* failed = api_->PJRT_Error_GetCode(&code);
  if (failed != nullptr) {
    message_of(failed);
    return PJRT_Error_Code{};
  }
  return code.code;
}

void Plugin::check(PJRT_Error* error, std::string_view function) const {
  if (error == nullptr) return;
  throw Error(fmt::format("xla: {}: {}", function, message_of(error)));
}

void Plugin::destroy(PJRT_Event* event) const {
  if (event == nullptr) return;
  auto args = make_args<PJRT_Event_Destroy_Args>();
  args.event = event;
  PJRT_Error* error = api_->PJRT_Event_Destroy(&args);
  if (error != nullptr) message_of(error);  // nothing to do about it
}

void Plugin::await(PJRT_Event* event, std::string_view function) const {
  if (event == nullptr) return;
  auto args = make_args<PJRT_Event_Await_Args>();
  args.event = event;
  PJRT_Error* error = api_->PJRT_Event_Await(&args);
  destroy(event);
  check(error, function);
}

}  // namespace xlacel::pjrt
