// The compile cache with the real iree-compile (llvm-cpu, and CUDA compile-only) on a tiny
// StableHLO module: miss then hit without running the compiler, keys that follow every input,
// corrupt entries rebuilt rather than trusted, concurrent writers, compiler errors naming the
// input, the install hint when iree-compile is missing, and `xlacel compile`. Tests that need
// iree-compile skip (with the reason) without it.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <thread>

#include "common/error.h"
#include "common/json_file.h"
#include "common/scoped_env.h"
#include "compile_cache/atomic_file.h"
#include "compile_cache/compile_cache.h"
#include "compile_cache/compiler_message.h"
#include "compile_cache/hash.h"
#include "compile_cache/iree_compiler.h"
#include "compile_cache/recorded_compiler.h"
#include "compile_cache/subprocess.h"
#include "run_xlacel.h"
#include "test_paths.h"

namespace xlacel::compile_cache {
namespace {

namespace fs = std::filesystem;

constexpr const char* kAddModule = R"(module {
  func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = "stablehlo.add"(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "func.return"(%0) : (tensor<4xf32>) -> ()
  }
}
)";

constexpr const char* kMulModule = R"(module {
  func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = "stablehlo.multiply"(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "func.return"(%0) : (tensor<4xf32>) -> ()
  }
}
)";

std::string slurp(const fs::path& path) {
  return testing::read_file(path);
}

void write_file(const fs::path& path, const std::string& content) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
}

// A Compiler that forwards to another and counts how often it really compiled.
class CountingCompiler : public Compiler {
 public:
  explicit CountingCompiler(Compiler& inner) : inner_(inner) {}
  std::string name() const override { return inner_.name(); }
  std::string artifact_extension() const override { return inner_.artifact_extension(); }
  const std::string& identity() override { return inner_.identity(); }
  void compile(const CompileJob& job) override {
    ++compiles;
    inner_.compile(job);
  }
  std::atomic<int> compiles{0};

 private:
  Compiler& inner_;
};

// A Compiler that only has an identity (for keys; compiling is not expected).
class FakeCompiler : public Compiler {
 public:
  explicit FakeCompiler(std::string identity) : identity_(std::move(identity)) {}
  std::string name() const override { return "fake"; }
  std::string artifact_extension() const override { return ".bin"; }
  const std::string& identity() override { return identity_; }
  void compile(const CompileJob& job) override { write_file(job.output, "artifact"); }

 private:
  std::string identity_;
};

CompileTarget cpu_target(const std::string& opt_level = "O3") {
  return iree_target({"llvm-cpu", "sm_80", opt_level});
}

CompileTarget cuda_target(const std::string& sm) {
  return iree_target({"cuda", sm, "O3"});
}

std::vector<std::string> temporaries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (name.starts_with(kTemporaryPrefix)) names.push_back(name);
  }
  return names;
}

// A fresh cache directory per test, and iree-compile (or a skip).
class CompileCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = testing::scratch_dir(std::string("compile_cache/") + info->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    cache_env_.emplace("XLACEL_CACHE", root_.string());
    try {
      iree_.emplace(find_iree_compile());
    } catch (const Error& e) {
      skip_reason_ = e.what();
    }
  }

  CompileRequest request(const char* mlir, CompileTarget target, std::string source = "add.mlir") {
    return {mlir, std::move(source), std::move(target)};
  }

  fs::path root_;
  std::optional<ScopedEnv> cache_env_;
  std::optional<IreeCompiler> iree_;
  std::string skip_reason_;
};

#define REQUIRE_IREE_COMPILE() \
  if (!iree_) GTEST_SKIP() << skip_reason_

TEST_F(CompileCacheTest, DefaultDirectoryFollowsXlacelCache) {
  EXPECT_EQ(CompileCache::default_directory(), root_ / "compiled");
  ScopedEnv no_cache("XLACEL_CACHE", std::nullopt);
  ScopedEnv home("HOME", "/home/someone");
  EXPECT_EQ(CompileCache::default_directory(), fs::path("/home/someone/.cache/xlacel/compiled"));
}

TEST_F(CompileCacheTest, MissThenHitWithoutRunningTheCompiler) {
  REQUIRE_IREE_COMPILE();
  CountingCompiler compiler(*iree_);
  CompileCache cache;  // the default: $XLACEL_CACHE/compiled
  ASSERT_EQ(cache.directory(), root_ / "compiled");
  fs::create_directories(cache.directory());
  // A temporary a crashed writer left long ago is cleaned up by the next miss; a fresh one
  // (someone else's compile in progress) is not.
  fs::path stale = cache.directory() / ".tmp-crashed-123456.vmfb";
  fs::path fresh = cache.directory() / ".tmp-running-654321.vmfb";
  write_file(stale, "half");
  write_file(fresh, "half");
  fs::last_write_time(stale, fs::file_time_type::clock::now() - std::chrono::hours(48));

  CompileRequest add = request(kAddModule, cpu_target());
  EXPECT_FALSE(cache.lookup(compiler, add));
  CompileResult first = cache.get_or_compile(compiler, add);
  EXPECT_FALSE(first.hit);
  EXPECT_TRUE(first.discarded.empty()) << first.discarded;
  EXPECT_EQ(compiler.compiles, 1);
  EXPECT_EQ(first.key.size(), 32u);
  EXPECT_EQ(first.artifact, cache.directory() / (first.key + ".vmfb"));
  EXPECT_GT(first.compile_seconds, 0.0);
  std::string bytes = slurp(first.artifact);
  ASSERT_GT(bytes.size(), 1000u);
  EXPECT_EQ(bytes.substr(0, 2), "PK");  // a .vmfb is a zip-framed FlatBuffer
  EXPECT_EQ(bytes.find(kTemporaryPrefix), std::string::npos)
      << "the artifact names a temporary file, so it differs between compiles";

  // The sidecar vouches for the artifact.
  Json sidecar = read_json_file((cache.directory() / (first.key + ".json")).string());
  EXPECT_EQ(sidecar.at("key"), first.key);
  EXPECT_EQ(sidecar.at("size"), bytes.size());
  EXPECT_EQ(sidecar.at("xxh3_128"), hash_bytes(bytes).hex());
  EXPECT_EQ(sidecar.at("target"), "llvm-cpu");
  EXPECT_EQ(sidecar.at("source"), "add.mlir");

  CompileResult second = cache.get_or_compile(compiler, add);
  EXPECT_TRUE(second.hit);
  EXPECT_EQ(compiler.compiles, 1) << "a hit must not run the compiler";
  EXPECT_EQ(second.key, first.key);
  EXPECT_EQ(second.artifact, first.artifact);
  EXPECT_DOUBLE_EQ(second.compile_seconds, first.compile_seconds);  // as recorded at the miss
  EXPECT_EQ(cache.lookup(compiler, add), first.artifact);

  // Another module is another entry.
  CompileResult mul = cache.get_or_compile(compiler, request(kMulModule, cpu_target()));
  EXPECT_FALSE(mul.hit);
  EXPECT_NE(mul.key, first.key);
  EXPECT_EQ(compiler.compiles, 2);

  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(fresh));
  fs::remove(fresh);
  EXPECT_TRUE(temporaries(cache.directory()).empty());
}

TEST_F(CompileCacheTest, KeyFollowsTextFlagsTargetAndCompiler) {
  // Needs no real compiler: keys only ask for the identity.
  FakeCompiler compiler("fake 1.0");
  CompileCache cache(root_ / "compiled");
  auto key = [&](const char* mlir, CompileTarget target) {
    return cache.key(compiler, request(mlir, std::move(target)));
  };
  const std::string base = key(kAddModule, cpu_target());
  EXPECT_EQ(base, key(kAddModule, cpu_target())) << "keys must be stable";
  EXPECT_EQ(base, cache.key(compiler, request(kAddModule, cpu_target(), "other-name.mlir")))
      << "the source name is not part of the key";

  std::set<std::string> keys = {base};
  auto expect_new = [&](const std::string& k, const char* what) {
    EXPECT_TRUE(keys.insert(k).second) << what << " did not change the key";
  };
  expect_new(key(kMulModule, cpu_target()), "the text");
  expect_new(key((std::string(kAddModule) + " ").c_str(), cpu_target()), "trailing whitespace");
  expect_new(key(kAddModule, cpu_target("O2")), "the optimization level");
  CompileTarget extra = cpu_target();
  extra.flags.push_back("--iree-llvmcpu-enable-ukernels=none");
  expect_new(key(kAddModule, extra), "an extra flag");
  CompileTarget reordered = cpu_target();
  std::swap(reordered.flags[0], reordered.flags[1]);
  expect_new(key(kAddModule, reordered), "the flag order");
  // Flags joined differently must not collide ("a b" + "c" vs "a" + "b c").
  CompileTarget split = cpu_target();
  split.flags = {"--x=a b", "c"};
  CompileTarget split2 = cpu_target();
  split2.flags = {"--x=a", "b c"};
  expect_new(key(kAddModule, split), "flags (split)");
  expect_new(key(kAddModule, split2), "flags (split differently)");
  CompileTarget other_cpu = cpu_target();
  other_cpu.identity += "\nflags=avx512f";
  expect_new(key(kAddModule, other_cpu), "the host CPU");
  expect_new(key(kAddModule, cuda_target("sm_80")), "the target");
  expect_new(key(kAddModule, cuda_target("sm_86")), "the CUDA architecture");
  FakeCompiler newer("fake 1.1");
  expect_new(cache.key(newer, request(kAddModule, cpu_target())), "the compiler identity");
}

TEST(IreeTarget, FlagsAndValidation) {
  CompileTarget cpu = iree_target({"llvm-cpu", "sm_80", "O3"});
  EXPECT_EQ(cpu.name, "llvm-cpu");
  std::vector<std::string> expected_cpu = {
      "--iree-input-type=stablehlo",    "--iree-opt-level=O3",
      "--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
      "--iree-llvmcpu-target-cpu=host", "--iree-llvmcpu-enable-ukernels=all"};
  EXPECT_EQ(cpu.flags, expected_cpu);
  EXPECT_NE(cpu.identity.find("cpu=host"), std::string::npos);
  EXPECT_NE(cpu.identity.find("arch="), std::string::npos) << cpu.identity;
  CompileTarget cuda = iree_target({"cuda", "sm_86", "O1"});
  EXPECT_EQ(cuda.name, "cuda sm_86");
  std::vector<std::string> expected_cuda = {"--iree-input-type=stablehlo", "--iree-opt-level=O1",
                                            "--iree-hal-target-device=cuda",
                                            "--iree-cuda-target=sm_86"};
  EXPECT_EQ(cuda.flags, expected_cuda);

  // Cross-compiling for another machine: its triple and CPU, not this CPU's identity.
  IreeTargetOptions arm{"llvm-cpu", "sm_80", "O3", "neoverse-n1", "aarch64-linux-gnu"};
  CompileTarget aarch64 = iree_target(arm);
  EXPECT_EQ(aarch64.name, "llvm-cpu aarch64-linux-gnu");
  EXPECT_EQ(aarch64.identity, "llvm-cpu triple=aarch64-linux-gnu cpu=neoverse-n1");
  EXPECT_EQ(aarch64.flags.back(), "--iree-llvmcpu-target-triple=aarch64-linux-gnu");
  EXPECT_NE(std::find(aarch64.flags.begin(), aarch64.flags.end(),
                      "--iree-llvmcpu-target-cpu=neoverse-n1"),
            aarch64.flags.end());

  auto error_of = [](const IreeTargetOptions& options) -> std::string {
    try {
      iree_target(options);
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_EQ(error_of({"tpu", "sm_80", "O3"}), "backend: unknown target 'tpu' (llvm-cpu, cuda)");
  EXPECT_EQ(error_of({"llvm-cpu", "sm_80", "O3", "host", "aarch64-linux-gnu"}),
            "cpu: cross-compiling for aarch64-linux-gnu needs that machine's CPU (generic, "
            "neoverse-n1, ...)");
  for (const char* triple : {"aarch64", "aarch64 linux", "-linux-gnu", "aarch64--gnu",
                             "aarch64-linux-gnu --iree-x", "a-b-c-d-e"}) {
    EXPECT_EQ(error_of({"llvm-cpu", "sm_80", "O3", "generic", triple}),
              fmt::format("triple: malformed target triple '{}' (like aarch64-linux-gnu)", triple));
  }
  EXPECT_EQ(error_of({"cuda", "80", "O3"}),
            "cuda_sm: malformed CUDA architecture '80' (like sm_80)");
  EXPECT_EQ(error_of({"cuda", "sm_", "O3"}),
            "cuda_sm: malformed CUDA architecture 'sm_' (like sm_80)");
  EXPECT_EQ(error_of({"cuda", "sm_90a", "O3"}), "(no error)");
  EXPECT_EQ(error_of({"llvm-cpu", "sm_80", "O4"}),
            "opt_level: unknown optimization level 'O4' (O0, O1, O2, O3)");
}

TEST(CompilerMessage, NamesTheSourceAndKeepsTheFirstErrors) {
  std::string output =
      "/tmp/x/.tmp-input-abc.mlir:3:10: warning: generic CPU\n"
      "  some context\n"
      "/tmp/x/.tmp-input-abc.mlir:1:26: error: expected non-function type\n"
      "module { func.func @main( }\n"
      "                         ^\n"
      "/tmp/x/.tmp-input-abc.mlir:2:1: error: second\n"
      "/tmp/x/.tmp-input-abc.mlir:2:2: error: third\n"
      "/tmp/x/.tmp-input-abc.mlir:2:3: error: fourth\n";
  EXPECT_EQ(summarize_compiler_output(output, "/tmp/x/.tmp-input-abc.mlir", "model.mlir"),
            "model.mlir:1:26: error: expected non-function type | model.mlir:2:1: error: second | "
            "model.mlir:2:2: error: third (+1 more errors)");
  EXPECT_EQ(summarize_compiler_output("Segmentation fault\n\nstack:\n", "in", "src"),
            "Segmentation fault | stack:");
  EXPECT_EQ(summarize_compiler_output("", "in", "src"), "(no output)");
}

TEST(Subprocess, FeedsStdinAndCollectsOutput) {
  // More than any pipe buffer both ways: feeding and draining must interleave.
  std::string big(3 << 20, 'x');
  for (std::size_t i = 0; i < big.size(); i += 97) big[i] = '\n';
  ProcessResult cat = run_process({"/bin/cat"}, big);
  EXPECT_TRUE(cat.ok()) << cat.describe();
  EXPECT_EQ(cat.output, big);
  // A program that exits without reading its input is not our SIGPIPE.
  ProcessResult early = run_process({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, big);
  EXPECT_EQ(early.exit_status, 3);
  EXPECT_EQ(early.describe(), "exit status 3");
  EXPECT_EQ(early.output, "out\nerr\n");
  ProcessResult killed = run_process({"/bin/sh", "-c", "kill -SEGV $$"});
  EXPECT_EQ(killed.signal, SIGSEGV);
  EXPECT_NE(killed.describe().find("killed by signal 11"), std::string::npos) << killed.describe();
  EXPECT_THROW(run_process({"/no/such/program"}), Error);
}

TEST_F(CompileCacheTest, CorruptEntriesAreRebuiltNotTrusted) {
  REQUIRE_IREE_COMPILE();
  CountingCompiler compiler(*iree_);
  CompileCache cache;
  CompileRequest add = request(kAddModule, cpu_target());
  CompileResult first = cache.get_or_compile(compiler, add);
  ASSERT_FALSE(first.hit);
  const std::string good = slurp(first.artifact);
  const fs::path sidecar = cache.directory() / (first.key + ".json");
  const std::string good_sidecar = slurp(sidecar);

  struct Damage {
    const char* what;
    std::function<void()> apply;
    const char* reason;
  };
  std::vector<Damage> damages = {
      {"truncated artifact", [&] { fs::resize_file(first.artifact, good.size() / 2); },
       "bytes, sidecar says"},
      {"flipped byte",
       [&] {
         std::string bad = good;
         bad[bad.size() / 2] = static_cast<char>(bad[bad.size() / 2] ^ 0x40);
         write_file(first.artifact, bad);
       },
       "artifact checksum mismatch"},
      {"garbage sidecar", [&] { write_file(sidecar, "{\"format\": 1, \"key\""); },
       "unreadable sidecar"},
      {"missing sidecar", [&] { fs::remove(sidecar); }, "artifact without sidecar"},
      {"missing artifact", [&] { fs::remove(first.artifact); }, "artifact missing"},
  };
  int expected_compiles = 1;
  for (const Damage& damage : damages) {
    SCOPED_TRACE(damage.what);
    damage.apply();
    EXPECT_FALSE(cache.lookup(compiler, add));
    CompileResult rebuilt = cache.get_or_compile(compiler, add);
    EXPECT_FALSE(rebuilt.hit);
    EXPECT_EQ(compiler.compiles, ++expected_compiles);
    EXPECT_NE(rebuilt.discarded.find(damage.reason), std::string::npos) << rebuilt.discarded;
    EXPECT_EQ(rebuilt.artifact, first.artifact);
    EXPECT_EQ(slurp(rebuilt.artifact), good) << "iree-compile output is deterministic";
    CompileResult again = cache.get_or_compile(compiler, add);
    EXPECT_TRUE(again.hit);
    EXPECT_EQ(compiler.compiles, expected_compiles);
  }
  EXPECT_TRUE(temporaries(cache.directory()).empty());
}

TEST_F(CompileCacheTest, ConcurrentWritersOfOneKeyAreSafe) {
  REQUIRE_IREE_COMPILE();
  CountingCompiler compiler(*iree_);
  CompileRequest add = request(kAddModule, cpu_target());
  std::vector<CompileResult> results(3);
  std::vector<std::string> errors(results.size());
  {
    std::vector<std::jthread> threads;
    for (std::size_t i = 0; i < results.size(); ++i) {
      threads.emplace_back([&, i] {
        try {
          CompileCache cache;  // one per writer, as separate processes would have
          results[i] = cache.get_or_compile(compiler, add);
        } catch (const std::exception& e) {
          errors[i] = e.what();
        }
      });
    }
  }
  for (std::size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(errors[i], "") << "writer " << i;
    EXPECT_EQ(results[i].artifact, results[0].artifact);
  }
  EXPECT_GE(compiler.compiles, 1);
  CompileCache cache;
  CompileResult after = cache.get_or_compile(compiler, add);
  EXPECT_TRUE(after.hit);
  EXPECT_TRUE(temporaries(cache.directory()).empty());
}

TEST_F(CompileCacheTest, InvalidMlirNamesTheInputAndCarriesTheCompilerMessage) {
  REQUIRE_IREE_COMPILE();
  CompileCache cache;
  CompileRequest bad = request("module { func.func @main( }\n", cpu_target(), "broken_graph.mlir");
  try {
    cache.get_or_compile(*iree_, bad);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_TRUE(message.starts_with("broken_graph.mlir: iree-compile failed for target llvm-cpu"))
        << message;
    EXPECT_NE(message.find("broken_graph.mlir:1:26: error: expected non-function type"),
              std::string::npos)
        << message;
    EXPECT_EQ(message.find(".tmp-"), std::string::npos) << "temporary names leaked: " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
  }
  EXPECT_FALSE(cache.lookup(*iree_, bad));
  EXPECT_TRUE(temporaries(cache.directory()).empty());
  for (const auto& entry : fs::directory_iterator(cache.directory())) {
    ADD_FAILURE() << "a failed compile left " << entry.path();
  }
}

TEST_F(CompileCacheTest, MissingCompilerGivesTheInstallHint) {
  // Needs no real compiler.
  const std::string missing = (root_ / "no-such-dir" / "iree-compile").string();
  try {
    IreeCompiler compiler{fs::path(missing)};
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), missing +
                                         ": iree-compile not found; run scripts/setup (pip package "
                                         "iree-base-compiler)");
  }
  ScopedEnv explicit_path("XLACEL_IREE_COMPILE", missing);
  try {
    find_iree_compile();
    FAIL() << "a set $XLACEL_IREE_COMPILE must not fall back to other places";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find(missing), std::string::npos) << message;
    EXPECT_NE(message.find("iree-compile not found; " + std::string(kIreeInstallHint)),
              std::string::npos)
        << message;
  }
}

TEST_F(CompileCacheTest, RunsTheBinaryBehindPipsWrapperScript) {
  // Needs no real compiler: a fake venv with pip's console script and the binary it spawns.
  fs::path venv = root_ / "venv";
  fs::path wrapper = venv / "bin" / "iree-compile";
  fs::path binary = venv / "lib" / "python3.11" / "site-packages" / "iree" / "compiler" /
                    "_mlir_libs" / "iree-compile";
  fs::create_directories(wrapper.parent_path());
  fs::create_directories(binary.parent_path());
  write_file(wrapper,
             "#!/usr/bin/python3\nfrom iree.compiler.tools.scripts.iree_compile.__main__ import "
             "main\n");
  write_file(binary, "#!/bin/sh\necho IREE fake\n");
  for (const fs::path& file : {wrapper, binary}) {
    fs::permissions(file, fs::perms::owner_all, fs::perm_options::add);
  }
  {
    ScopedEnv no_tool_path("IREE_TOOL_PATH", std::nullopt);
    IreeCompiler compiler{wrapper};
    EXPECT_EQ(compiler.executable(), wrapper);
    EXPECT_EQ(compiler.program(), binary);
    EXPECT_EQ(compiler.identity(), "IREE fake\n");
  }
  {
    ScopedEnv tool_path("IREE_TOOL_PATH", "/elsewhere");  // the script would honour it
    EXPECT_EQ(IreeCompiler{wrapper}.program(), wrapper);
  }
  write_file(wrapper, "#!/bin/sh\nexec something-else \"$@\"\n");  // not pip's script
  EXPECT_EQ(IreeCompiler{wrapper}.program(), wrapper);
}

TEST_F(CompileCacheTest, CudaCompileOnly) {
  REQUIRE_IREE_COMPILE();
  CountingCompiler compiler(*iree_);
  CompileCache cache;
  CompileResult sm80 = cache.get_or_compile(compiler, request(kAddModule, cuda_target("sm_80")));
  EXPECT_FALSE(sm80.hit);
  EXPECT_GT(fs::file_size(sm80.artifact), 1000u);
  EXPECT_TRUE(cache.get_or_compile(compiler, request(kAddModule, cuda_target("sm_80"))).hit);
  EXPECT_EQ(compiler.compiles, 1);

  // This iree-compile cannot target sm_90 (iree-org/iree#22147): when it fails, the Error must
  // carry the target and iree-compile's own message.
  try {
    cache.get_or_compile(compiler, request(kAddModule, cuda_target("sm_90")));
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("for target cuda sm_90"), std::string::npos) << message;
    EXPECT_NE(message.find("error:"), std::string::npos) << message;
  }
}

// A machine without the compiler (the GPU bundle) finds the entries another machine compiled,
// by the identity the cache recorded; what is not cached is the compiler's not-found Error.
TEST_F(CompileCacheTest, RecordedIdentityFindsEntriesWithoutTheCompiler) {
  FakeCompiler fake("fake 1.0\nbuilt somewhere\n");
  CompileCache cache;
  const CompileRequest add = request(kAddModule, cuda_target("sm_89"));
  CompileResult stored = cache.get_or_compile(fake, add);
  EXPECT_EQ(slurp(identity_record_path(cache.directory(), "fake")), fake.identity());

  auto recorded = RecordedCompiler::from_cache(cache.directory(), "fake", ".bin", "fake missing");
  ASSERT_TRUE(recorded);
  EXPECT_EQ(recorded->identity(), fake.identity());
  EXPECT_EQ(cache.lookup(*recorded, add), stored.artifact);
  EXPECT_TRUE(cache.get_or_compile(*recorded, add).hit);
  try {
    cache.get_or_compile(*recorded, request(kMulModule, cuda_target("sm_89"), "mul.mlir"));
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "mul.mlir: not in the compile cache " +
                                         cache.directory().string() +
                                         " (made by fake elsewhere), and fake missing");
  }
  EXPECT_FALSE(RecordedCompiler::from_cache(root_ / "elsewhere", "fake", ".bin", ""));
}

TEST_F(CompileCacheTest, IreeCompilerForCacheFallsBackToTheRecordedIdentity) {
  const fs::path dir = root_ / "compiled";
  fs::create_directories(dir);
  ScopedEnv missing("XLACEL_IREE_COMPILE", (root_ / "no-iree-compile").string());
  EXPECT_THROW(iree_compiler_for_cache(dir), Error);  // nothing recorded: the not-found Error
  write_file(identity_record_path(dir, "iree-compile"), "IREE compiler version 3.13.0\n");
  std::unique_ptr<Compiler> compiler = iree_compiler_for_cache(dir);
  EXPECT_EQ(compiler->name(), "iree-compile");
  EXPECT_EQ(compiler->artifact_extension(), ".vmfb");
  EXPECT_EQ(compiler->identity(), "IREE compiler version 3.13.0\n");
}

// --- the xlacel program ------------------------------------------------------------------

using CliRun = testing::ProgramRun;

CliRun run_xlacel(const fs::path& scratch, const std::string& env_prefix,
                  const std::vector<std::string>& args) {
  return testing::run_xlacel(scratch, args, env_prefix);
}

TEST_F(CompileCacheTest, CliCompilesMlirThroughTheCache) {
  REQUIRE_IREE_COMPILE();
  fs::path input = root_ / "add.mlir";
  write_file(input, kAddModule);
  const std::string env = "XLACEL_CACHE='" + root_.string() + "'";

  CliRun miss = run_xlacel(root_, env, {"compile", "--mlir", input.string()});
  ASSERT_EQ(miss.exit_code, 0) << miss.err;
  EXPECT_NE(miss.out.find("artifact: " + (root_ / "compiled").string() + "/"), std::string::npos)
      << miss.out;
  EXPECT_NE(miss.out.find("\ncache: miss\ncompile time: "), std::string::npos) << miss.out;

  CliRun hit =
      run_xlacel(root_, env, {"compile", "--mlir", input.string(), "--output-format", "json"});
  ASSERT_EQ(hit.exit_code, 0) << hit.err;
  Json json = parse_json_text(hit.out, "xlacel compile --output-format json");
  EXPECT_EQ(json.at("cache"), "hit");
  EXPECT_EQ(json.at("target"), "llvm-cpu");
  EXPECT_EQ(json.at("source"), input.string());
  EXPECT_TRUE(fs::exists(json.at("artifact").get<std::string>()));
  EXPECT_NE(miss.out.find(json.at("artifact").get<std::string>()), std::string::npos);
  EXPECT_GT(json.at("compile_seconds").get<double>(), 0.0);

  CliRun bad_target =
      run_xlacel(root_, env, {"compile", "--mlir", input.string(), "--target", "tpu"});
  EXPECT_EQ(bad_target.exit_code, 1);
  EXPECT_EQ(bad_target.err, "xlacel: --target: unknown target 'tpu' (llvm-cpu, cuda)\n");
}

TEST_F(CompileCacheTest, CliReportsAMissingCompiler) {
  // Needs no real compiler: $XLACEL_IREE_COMPILE names a file that does not exist.
  fs::path input = root_ / "add.mlir";
  write_file(input, kAddModule);
  const std::string missing = (root_ / "nowhere" / "iree-compile").string();
  CliRun run = run_xlacel(root_,
                          "env -u XLACEL_VENV -u VIRTUAL_ENV XLACEL_IREE_COMPILE='" + missing +
                              "' XLACEL_CACHE='" + root_.string() + "'",
                          {"compile", "--mlir", input.string()});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(run.err, "xlacel: " + missing +
                         " ($XLACEL_IREE_COMPILE): iree-compile not found; run scripts/setup "
                         "(pip package iree-base-compiler)\n");
}

}  // namespace
}  // namespace xlacel::compile_cache
