#include "backends/backends.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backends/iree_module.h"
#include "backends/pjrt/pjrt_plugin.h"
#include "common/error.h"
#include "common/venv.h"

namespace xlacel::backends {

std::vector<std::string> runtime_names() {
  return {"iree", "xla"};
}

namespace {

std::string package_version(std::string_view distribution) {
  std::optional<std::string> version = venv_package_version(distribution);
  return fmt::format("{} {}", distribution, version ? *version : "(not installed)");
}

}  // namespace

std::vector<std::string> runtime_versions() {
  std::vector<std::string> lines;
  lines.push_back(fmt::format("iree: {}, {}", package_version("iree-base-compiler"),
                              package_version("iree-base-runtime")));
  std::string cpu;
  try {
    const pjrt::PluginLocation location = pjrt::find_plugin(device::DeviceKind::kCpu, "");
    std::shared_ptr<const pjrt::Plugin> plugin = pjrt::Plugin::load(location.path);
    cpu = fmt::format("{}, PJRT C API {}.{}{} ({})", package_version("xla-cpu-pjrt"),
                      plugin->major(), plugin->minor(),
                      plugin->attributes().empty() ? "" : ", " + plugin->attributes(),
                      location.path.string());
  } catch (const Error& e) {
    cpu = e.what();
  }
  lines.push_back("xla cpu: " + cpu);
  lines.push_back("xla cuda: " + package_version("jax-cuda13-pjrt"));
  return lines;
}

std::unique_ptr<device::Device> open_device(std::string_view runtime,
                                            const device::DeviceOptions& options,
                                            const RuntimeOptions& runtime_options) {
  if (runtime == "iree") {
    if (options.tensor_parallel > 1) {
      fail("iree",
           "tensor parallel {} needs an SPMD partitioner, which IREE 3.13 lacks (it cannot parse "
           "sdy shardings and compiles mhlo.sharding as one unpartitioned program); use "
           "--backend xla",
           options.tensor_parallel);
    }
    return open_iree_device_from_module(options, runtime_options.iree);
  }
  if (runtime == "xla") return open_pjrt_device(options, runtime_options.xla);
  fail("runtime", "unknown runtime '{}' (known: {})", runtime, fmt::join(runtime_names(), ", "));
}

}  // namespace xlacel::backends
