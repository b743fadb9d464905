#pragma once
// What the vision tower tests share: a runtime's CPU device, and compiling one graph into a
// fresh compile cache, timed, keeping the graph's text where a compile fails.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backends/backends.h"
#include "common/error.h"
#include "device/device.h"
#include "models/test_support.h"
#include "test_paths.h"

namespace xlacel::testing {

// The runtime's CPU device with one worker, compiling into `cache` (empty: the program's cache).
inline std::unique_ptr<device::Device> cpu_device(const std::string& runtime,
                                                  const std::filesystem::path& cache = {}) {
  device::DeviceOptions options;
  options.threads = 1;
  options.compile_cache_dir = cache;
  return backends::open_device(runtime, options, {});
}

// Compiles `source` on `runtime` into a compile cache of its own (so nothing comes from an
// earlier run) and returns the seconds it took; nullopt after a failure is added: an Error (the
// graph's text then kept in the scratch folder `scratch`, named in the failure) or a load that
// is not one fresh executable.
inline std::optional<double> compile_fresh(const std::string& runtime,
                                           const device::GraphSource& source,
                                           const std::string& scratch) {
  const std::filesystem::path cache = scratch_dir(scratch) / std::to_string(::getpid());
  std::filesystem::remove_all(cache);
  std::unique_ptr<device::Device> device = cpu_device(runtime, cache);
  std::vector<device::GraphLoad> loads;
  const auto start = std::chrono::steady_clock::now();
  try {
    device->load(std::span(&source, 1), loads);
  } catch (const Error& e) {
    const std::filesystem::path kept = scratch_dir(scratch) / source.source;
    write_text(kept, source.mlir);
    ADD_FAILURE() << e.what() << " (the graph: " << kept.string() << ")";
    return std::nullopt;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  device.reset();
  std::filesystem::remove_all(cache);
  if (loads.size() != 1u) {
    ADD_FAILURE() << "loading one graph gave " << loads.size() << " loads";
    return std::nullopt;
  }
  EXPECT_FALSE(loads[0].cached);
  return seconds;
}

}  // namespace xlacel::testing
