#pragma once
// IREE's iree-compile (pip package iree-base-compiler) as a Compiler: StableHLO text in, a
// .vmfb module out, run as a subprocess.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "compile_cache/compiler.h"

namespace xlacel::compile_cache {

// The install hint every "iree-compile not found" Error carries.
inline constexpr const char* kIreeInstallHint =
    "run scripts/setup (pip package iree-base-compiler)";

// Looks for iree-compile, first match wins: $XLACEL_IREE_COMPILE (when set, it must name an
// executable: an Error otherwise, no fallback), $XLACEL_VENV/bin, $VIRTUAL_ENV/bin, a .venv/bin
// found walking up from the current directory and then from the running program's directory,
// then PATH. Throws Error "iree-compile not found ...; run scripts/setup ..." when none is.
std::filesystem::path find_iree_compile();

class IreeCompiler : public Compiler {
 public:
  // An explicit iree-compile; throws the not-found Error unless it is an executable file.
  explicit IreeCompiler(std::filesystem::path executable);
  static IreeCompiler from_environment() { return IreeCompiler(find_iree_compile()); }

  const std::filesystem::path& executable() const { return executable_; }
  // What actually runs: the executable, or for pip's Python wrapper script the binary it
  // would spawn (see iree_compiler.cpp).
  const std::filesystem::path& program() const { return program_; }

  std::string name() const override { return "iree-compile"; }
  std::string artifact_extension() const override { return ".vmfb"; }
  // `iree-compile --version` (compiler version, commit and LLVM version), run once per
  // executable per process. Thread-safe, as is compile().
  const std::string& identity() override;
  void compile(const CompileJob& job) override;

 private:
  std::filesystem::path executable_;
  std::filesystem::path program_;
  std::optional<std::string> identity_;
};

// iree-compile from the environment (find_iree_compile), or where there is none, iree-compile as
// the cache `directory` recorded it (recorded_compiler.h: cached modules load, anything else is
// the not-found Error). Throws the not-found Error when neither is there.
std::unique_ptr<Compiler> iree_compiler_for_cache(const std::filesystem::path& directory);

struct IreeTargetOptions {
  std::string backend = "llvm-cpu";  // "llvm-cpu" (this machine's CPU) or "cuda"
  std::string cuda_sm = "sm_80";     // the CUDA architecture, for backend "cuda"
  std::string opt_level = "O3";      // O0..O3, as --iree-opt-level
  // llvm-cpu's target CPU: "host" (all this CPU has), or an LLVM CPU name such as x86-64-v3
  // (backends/iree/cpu_isa.h), or for another machine's triple its CPU (neoverse-n1; "generic":
  // the architecture's baseline).
  std::string cpu = "host";
  // llvm-cpu: empty for this machine, or another machine's target triple to cross-compile for
  // (aarch64-linux-gnu: ARM servers and laptops), whose modules this machine cannot run.
  std::string triple{};  // {}: brace-initialized options may leave it out
};

// The flags for one target, always with --iree-input-type=stablehlo. llvm-cpu's identity names
// its target CPU and the host CPU (host_cpu.h: cpu=host may use anything it has), or the triple
// and CPU it cross-compiles for. Throws FieldError naming the field for an unknown backend, a
// malformed CUDA architecture, optimization level or triple, or cpu "host" with another triple.
CompileTarget iree_target(const IreeTargetOptions& options);

}  // namespace xlacel::compile_cache
