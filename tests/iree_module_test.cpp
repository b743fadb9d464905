// The IREE backend as a module loaded on first use (backends/iree_module.h): the program itself
// needs no libpython, a module that cannot be loaded is a one-line Error naming it, and
// --device cuda on a machine without a GPU is a one-line error on both runtimes. When
// scripts/gpu-bundle has made build/gpu-bundle, its program is checked the same way, run with
// an environment that hides the build tree.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "run_xlacel.h"
#include "test_paths.h"

namespace xlacel {
namespace {

namespace fs = std::filesystem;

std::string command_output(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  std::string out;
  char buffer[4096];
  while (pipe && fgets(buffer, sizeof buffer, pipe.get()) != nullptr) out += buffer;
  return out;
}

fs::path scratch() {
  return testing::scratch_dir(std::string("iree_module/") +
                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
}

bool has_gpu() {
  return command_output("nvidia-smi -L 2>/dev/null").find("GPU") != std::string::npos;
}

void expect_one_line_failure(const testing::ProgramRun& run, const std::string& text) {
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  EXPECT_NE(run.err.find(text), std::string::npos) << run.err;
}

TEST(IreeModule, ProgramNeedsNoLibpythonButTheModuleDoes) {
  const std::string dir = XLACEL_BINARY_DIR;
  const std::string program = command_output("readelf -d " + dir + "/xlacel");
  ASSERT_NE(program.find("NEEDED"), std::string::npos) << "readelf failed";
  EXPECT_EQ(program.find("libpython"), std::string::npos) << program;
  const std::string module = command_output("readelf -d " + dir + "/xlacel-iree.so");
  EXPECT_NE(module.find("libpython"), std::string::npos) << module;
}

TEST(IreeModule, AModuleThatCannotLoadIsOneLineNamingIt) {
  const std::string tiny = testing::test_data("models/tiny_llama3").string();
  const std::string missing = "/nonexistent/xlacel-iree.so";
  testing::ProgramRun run = testing::run_xlacel(
      scratch(), {"generate", "-m", tiny, "--prompt-ids", "1,2", "-n", "1", "--backend", "iree"},
      "XLACEL_IREE_MODULE=" + missing);
  expect_one_line_failure(run, "iree backend: cannot load " + missing + ": ");
  // XLA does not need it.
  run = testing::run_xlacel(scratch(), {"inspect", tiny}, "XLACEL_IREE_MODULE=" + missing);
  EXPECT_EQ(run.exit_code, 0) << run.err;
}

TEST(IreeModule, CudaWithoutAGpuIsOneLineOnBothRuntimes) {
  if (has_gpu()) GTEST_SKIP() << "this machine has a GPU";
  const std::string tiny = testing::test_data("models/tiny_llama3").string();
  for (const std::string runtime : {"iree", "xla"}) {
    testing::ProgramRun run =
        testing::run_xlacel(scratch(), {"generate", "-m", tiny, "--prompt-ids", "1,2", "-n", "1",
                                        "--backend", runtime, "--device", "cuda"});
    expect_one_line_failure(run, runtime == "iree" ? "iree backend (cuda)" : "xla backend (cuda)");
  }
}

// build/gpu-bundle/xlacel-bundle, when scripts/gpu-bundle made it: started through its
// launcher with nothing of this machine's environment (env -i, PATH /usr/bin:/bin).
TEST(IreeModule, GpuBundleStartsWithoutTheBuildTree) {
  const fs::path bundle = fs::path(XLACEL_BINARY_DIR) / "gpu-bundle" / "xlacel-bundle";
  if (!fs::exists(bundle / "xlacel")) GTEST_SKIP() << "no " << bundle << " (scripts/gpu-bundle)";
  EXPECT_EQ(command_output("readelf -d " + (bundle / "bin" / "xlacel").string()).find("libpython"),
            std::string::npos);
  const std::string tiny = testing::test_data("models/tiny_llama3").string();
  const fs::path dir = scratch();
  for (const std::string runtime : {"iree", "xla"}) {
    const std::string command =
        "cd " + dir.string() + " && env -i PATH=/usr/bin:/bin HOME=" + dir.string() + " " +
        (bundle / "xlacel").string() + " generate -m " + tiny +
        " --prompt-ids 1,2 -n 1 --device cuda --backend " + runtime + " 2>&1; echo \"exit $?\"";
    const std::string out = command_output(command);
    if (has_gpu()) continue;
    EXPECT_NE(out.find(runtime + " backend (cuda)"), std::string::npos) << out;
    EXPECT_NE(out.find("\nexit 1\n"), std::string::npos) << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 2) << out;
  }
}

}  // namespace
}  // namespace xlacel
