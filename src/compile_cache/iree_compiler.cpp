#include "compile_cache/iree_compiler.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <system_error>
#include <vector>

#include "common/error.h"
#include "common/venv.h"
#include "compile_cache/compiler_message.h"
#include "compile_cache/host_cpu.h"
#include "compile_cache/recorded_compiler.h"
#include "compile_cache/subprocess.h"

namespace xlacel::compile_cache {

namespace fs = std::filesystem;

namespace {

constexpr const char* kExecutableName = "iree-compile";

bool is_executable(const fs::path& path) {
  std::error_code error;
  return fs::is_regular_file(path, error) && ::access(path.c_str(), X_OK) == 0;
}

std::optional<fs::path> from_path() {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return std::nullopt;
  std::string_view rest = path;
  while (true) {
    std::size_t end = rest.find(':');
    std::string_view dir = rest.substr(0, end);
    if (!dir.empty() && is_executable(fs::path(dir) / kExecutableName)) {
      return fs::path(dir) / kExecutableName;
    }
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  return std::nullopt;
}

// pip installs bin/iree-compile as a Python console script that imports iree.compiler only to
// spawn the real binary in site-packages (a Python start per call, paid by every hit for the
// identity: docs/PERFORMANCE.md, "iree-compile wrapper"). Runs that binary directly when the
// wrapper is exactly that script and $IREE_TOOL_PATH (which the script would honour) is unset;
// otherwise keeps the wrapper.
fs::path resolve_pip_wrapper(const fs::path& executable) {
  if (const char* tool_path = std::getenv("IREE_TOOL_PATH"); tool_path != nullptr && *tool_path) {
    return executable;
  }
  std::string head(512, '\0');
  {
    std::ifstream in(executable, std::ios::binary);
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(in.gcount()));
  }
  if (!head.starts_with("#!") ||
      head.find("iree.compiler.tools.scripts.iree_compile") == std::string::npos) {
    return executable;
  }
  std::error_code error;
  fs::path lib = executable.parent_path().parent_path() / "lib";
  for (fs::directory_iterator it(lib, error), end; !error && it != end; it.increment(error)) {
    if (!it->path().filename().string().starts_with("python")) continue;
    fs::path real =
        it->path() / "site-packages" / "iree" / "compiler" / "_mlir_libs" / kExecutableName;
    if (is_executable(real)) return real;
  }
  return executable;
}

// "sm_<digits>" with an optional letter suffix: sm_80, sm_90a.
bool is_cuda_architecture(std::string_view name) {
  if (!name.starts_with("sm_")) return false;
  name.remove_prefix(3);
  if (!name.empty() && name.back() >= 'a' && name.back() <= 'z') name.remove_suffix(1);
  return !name.empty() && name.find_first_not_of("0123456789") == std::string_view::npos;
}

// An LLVM target triple: two to four fields of lowercase letters, digits and underscores joined
// by '-' (aarch64-linux-gnu, aarch64-unknown-linux-gnu); nothing a flag could hide in.
bool is_target_triple(std::string_view triple) {
  int fields = 1;
  bool field_empty = true;
  for (char c : triple) {
    if (c == '-') {
      if (field_empty) return false;
      ++fields;
      field_empty = true;
    } else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_') {
      field_empty = false;
    } else {
      return false;
    }
  }
  return !field_empty && fields >= 2 && fields <= 4;
}

[[noreturn]] void not_found(const std::string& where) {
  throw Error(fmt::format("{}: iree-compile not found; {}", where, kIreeInstallHint));
}

}  // namespace

fs::path find_iree_compile() {
  if (const char* explicit_path = std::getenv("XLACEL_IREE_COMPILE");
      explicit_path != nullptr && *explicit_path != '\0') {
    if (!is_executable(explicit_path))
      not_found(fmt::format("{} ($XLACEL_IREE_COMPILE)", explicit_path));
    return explicit_path;
  }
  // A venv's bin/iree-compile must also be executable (not just present).
  if (auto found = find_in_venv(fs::path("bin") / kExecutableName);
      found && is_executable(*found)) {
    return *found;
  }
  if (auto found = from_path()) return *found;
  throw Error(fmt::format(
      "iree-compile not found (looked at $XLACEL_IREE_COMPILE, bin/ of the venv ({}), and "
      "PATH); {}",
      kVenvSearchDescription, kIreeInstallHint));
}

std::unique_ptr<Compiler> iree_compiler_for_cache(const fs::path& directory) {
  try {
    return std::make_unique<IreeCompiler>(find_iree_compile());
  } catch (const Error& not_found) {
    auto recorded =
        RecordedCompiler::from_cache(directory, kExecutableName, ".vmfb", not_found.what());
    if (!recorded) throw;
    return std::make_unique<RecordedCompiler>(std::move(*recorded));
  }
}

IreeCompiler::IreeCompiler(fs::path executable) : executable_(std::move(executable)) {
  if (!is_executable(executable_)) not_found(executable_.string());
  program_ = resolve_pip_wrapper(executable_);
}

const std::string& IreeCompiler::identity() {
  // One lock for the per-process table and this object's copy: threads may share a compiler.
  static std::mutex mutex;
  static std::map<fs::path, std::string> by_executable;
  std::lock_guard lock(mutex);
  if (identity_) return *identity_;
  auto it = by_executable.find(program_);
  if (it == by_executable.end()) {
    ProcessResult result = run_process({program_.string(), "--version"});
    if (!result.ok() || result.output.empty()) {
      fail(executable_.string(), "--version failed ({}): {}", result.describe(),
           summarize_compiler_output(result.output, "", ""));
    }
    it = by_executable.emplace(program_, result.output).first;
  }
  identity_ = it->second;
  return *identity_;
}

void IreeCompiler::compile(const CompileJob& job) {
  const std::string target_name = job.target != nullptr ? job.target->name : "default";
  // The module goes in on stdin, not through a temporary file: iree-compile records the input's
  // name in the artifact (debug info), and "<stdin>" keeps artifacts identical whatever the
  // temporary was called. Diagnostics say "<stdin>:LINE:COL", which names the source below.
  std::vector<std::string> argv = {program_.string()};
  if (job.target != nullptr) {
    argv.insert(argv.end(), job.target->flags.begin(), job.target->flags.end());
  }
  argv.insert(argv.end(), {"-", "-o", job.output.string()});
  ProcessResult result = run_process(argv, job.mlir);
  if (!result.ok()) {
    fail(job.source, "iree-compile failed for target {} ({}): {}", target_name, result.describe(),
         summarize_compiler_output(result.output, "<stdin>", job.source));
  }
  std::error_code error;
  if (fs::file_size(job.output, error) == 0 || error) {
    fail(job.source, "iree-compile for target {} reported success but wrote no module",
         target_name);
  }
}

CompileTarget iree_target(const IreeTargetOptions& options) {
  const std::string& opt = options.opt_level;
  if (!(opt.size() == 2 && opt[0] == 'O' && opt[1] >= '0' && opt[1] <= '3')) {
    fail_field("opt_level", "unknown optimization level '{}' (O0, O1, O2, O3)", options.opt_level);
  }
  CompileTarget target;
  target.flags = {"--iree-input-type=stablehlo", "--iree-opt-level=" + options.opt_level};
  if (options.backend == "llvm-cpu") {
    const bool cross = !options.triple.empty();
    if (cross && !is_target_triple(options.triple)) {
      fail_field("triple", "malformed target triple '{}' (like aarch64-linux-gnu)", options.triple);
    }
    if (cross && options.cpu == "host") {
      fail_field("cpu",
                 "cross-compiling for {} needs that machine's CPU (generic, neoverse-n1, ...)",
                 options.triple);
    }
    // Cross-compiled code depends only on its triple and CPU; host code on this CPU too.
    target.name = cross ? "llvm-cpu " + options.triple : "llvm-cpu";
    target.identity = cross ? "llvm-cpu triple=" + options.triple + " cpu=" + options.cpu
                            : "llvm-cpu cpu=" + options.cpu + "\n" + host_cpu().identity;
    // ukernels: measured faster decode on SmolLM2 (IREE's argmax/reduction microkernels). Data
    // tiling stays off: with weights as arguments it would re-pack them on every call, several
    // times slower (docs/PERFORMANCE.md, "IREE compile flags").
    target.flags.insert(
        target.flags.end(),
        {"--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
         "--iree-llvmcpu-target-cpu=" + options.cpu, "--iree-llvmcpu-enable-ukernels=all"});
    if (cross) target.flags.push_back("--iree-llvmcpu-target-triple=" + options.triple);
  } else if (options.backend == "cuda") {
    if (!is_cuda_architecture(options.cuda_sm)) {
      fail_field("cuda_sm", "malformed CUDA architecture '{}' (like sm_80)", options.cuda_sm);
    }
    target.name = "cuda " + options.cuda_sm;
    target.identity = "cuda " + options.cuda_sm;
    target.flags.insert(target.flags.end(),
                        {"--iree-hal-target-device=cuda", "--iree-cuda-target=" + options.cuda_sm});
  } else {
    fail_field("backend", "unknown target '{}' (llvm-cpu, cuda)", options.backend);
  }
  return target;
}

}  // namespace xlacel::compile_cache
