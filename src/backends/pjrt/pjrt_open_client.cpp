#include "backends/pjrt/pjrt_open_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/scoped_env.h"

namespace xlacel::pjrt {

std::shared_ptr<const Client> open_client(device::DeviceKind kind, const std::string& plugin_path,
                                          int threads, int devices,
                                          const std::function<void(std::string_view)>& progress) {
  const std::string label = device_label(kind);
  const PluginLocation location = find_plugin(kind, plugin_path);
  const int cuda_libraries =
      kind == device::DeviceKind::kCuda ? preload_cuda_libraries(location.path) : 0;
  std::shared_ptr<const Plugin> plugin = Plugin::load(location.path);
  std::shared_ptr<const Client> client;
  try {
    // XLA's CPU client sizes its thread pools (the client's task pool and the Eigen intra-op
    // pool) when it is created: max($PJRT_NPROC, or else the CPUs the process may run on, and
    // the cpu_device_count create option, 4 by default). The plugin takes no create option for
    // the thread count itself, so a thread count is $PJRT_NPROC for the duration of
    // PJRT_Client_Create with cpu_device_count the devices we use (one, unless a program is
    // partitioned over several: the CPU plugin then runs them in this process, sharing those
    // pools, and their collectives in memory).
    // A partition waiting in a collective holds a pool thread until every partition arrives:
    // with only as many threads as partitions they can all be held by partitions that wait
    // while the others' work sits in the queue, and XLA aborts after 40 s (seen with 2 devices
    // and 2 threads). So N partitions get N threads beyond the working ones, which then stay the
    // count asked for (or the CPUs).
    // Clients are created one at a time: the environment is the process's.
    static std::mutex mutex;
    std::lock_guard lock(mutex);
    std::optional<ScopedEnv> thread_count;
    if (kind == device::DeviceKind::kCpu && devices > 1) {
      const int working = threads > 0
                              ? threads
                              : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
      thread_count.emplace("PJRT_NPROC", std::to_string(working + devices));
    } else if (threads > 0) {
      thread_count.emplace("PJRT_NPROC", std::to_string(threads));
    }
    std::vector<IntegerOption> options;
    if (kind == device::DeviceKind::kCpu && (threads > 0 || devices > 1)) {
      options.push_back({"cpu_device_count", devices});
    }
    client = std::make_shared<const Client>(plugin, options, static_cast<std::size_t>(devices));
  } catch (const Error& e) {
    fail(label, "{}: {}{}", location.path.string(), e.what(),
         kind == device::DeviceKind::kCuda && cuda_libraries == 0
             ? " (no NVIDIA libraries found in the venv's nvidia-* wheels)"
             : "");
  }
  const std::string& platform = client->platform_name();
  const bool matches = kind == device::DeviceKind::kCuda ? platform == "cuda" || platform == "gpu"
                                                         : platform == "cpu";
  if (!matches) {
    fail(label, "PJRT plugin {} runs on platform '{}', not {}", location.path.string(), platform,
         device::device_kind_name(kind));
  }
  if (progress) {
    // The CPU plugin's platform version is just "cpu" again: show it only when it says more.
    const std::string& version = client->platform_version();
    progress(fmt::format("xla: PJRT plugin {} (API {}.{}, platform {}{})", location.path.string(),
                         plugin->major(), plugin->minor(), platform,
                         version.empty() || version == platform ? "" : " " + version));
  }
  return client;
}

}  // namespace xlacel::pjrt
