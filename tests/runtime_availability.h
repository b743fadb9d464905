#pragma once
// Why a runtime cannot run in this test process, for GTEST_SKIP: its compiler or plugin is
// missing, or its device does not open with `threads` CPU threads.
#include <optional>
#include <string>

#include "backends/backends.h"
#include "common/error.h"
#include "compile_cache/iree_compiler.h"
#include "device/device.h"

namespace xlacel::testing {

inline std::optional<std::string> missing_runtime(const std::string& runtime, int threads) {
  try {
    if (runtime == "iree") compile_cache::find_iree_compile();
    device::DeviceOptions options;
    options.threads = threads;
    backends::open_device(runtime, options, {});
    return std::nullopt;
  } catch (const Error& e) {
    return std::string(e.what());
  }
}

}  // namespace xlacel::testing
