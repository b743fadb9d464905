#include "backends/backends.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "backends/iree_module.h"
#include "backends/pjrt/pjrt_lowering.h"
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
  std::string kernels;
  try {
    kernels = iree_cpu_kernels_from_module();
  } catch (const Error& e) {
    kernels = e.what();
  }
  lines.push_back(fmt::format("iree: {}, {}; CPU kernels: {}",
                              package_version("iree-base-compiler"),
                              package_version("iree-base-runtime"), kernels));
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

namespace {

// FieldError unless `runtime` is known and can run over `options`' devices.
void check_runtime(std::string_view runtime, const device::DeviceOptions& options) {
  const std::vector<std::string> names = runtime_names();
  if (std::find(names.begin(), names.end(), runtime) == names.end()) {
    fail_field("runtime", "unknown runtime '{}' (known: {})", runtime, fmt::join(names, ", "));
  }
  if (runtime == "iree" && options.tensor_parallel > 1) {
    fail_field("tensor_parallel",
               "{} needs the xla runtime: iree has no SPMD partitioner (IREE 3.13 cannot parse "
               "sdy shardings and compiles mhlo.sharding as one unpartitioned program)",
               options.tensor_parallel);
  }
}

}  // namespace

std::unique_ptr<lowering::Lowering> make_lowering(std::string_view runtime,
                                                  const device::DeviceOptions& options) {
  check_runtime(runtime, options);
  options.validate();
  if (runtime == "iree") return make_iree_lowering_from_module(options);
  return make_pjrt_lowering(options);
}

std::unique_ptr<device::Device> open_device(std::string_view runtime,
                                            const device::DeviceOptions& options,
                                            const RuntimeOptions& runtime_options) {
  check_runtime(runtime, options);
  if (runtime == "iree") return open_iree_device_from_module(options, runtime_options.iree);
  return open_pjrt_device(options, runtime_options.xla);
}

Runtime open_runtime(std::string_view runtime, const device::DeviceOptions& options,
                     const RuntimeOptions& runtime_options) {
  Runtime opened;
  opened.lowering = make_lowering(runtime, options);
  opened.device = open_device(runtime, options, runtime_options);
  return opened;
}

}  // namespace xlacel::backends
