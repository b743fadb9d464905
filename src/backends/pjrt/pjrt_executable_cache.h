#pragma once
// Compiled executables kept on disk by the compile cache (compile_cache/): a Compiler adapter
// whose artifact is the plugin's PJRT_Executable_Serialize output (".xlaexe"), so a second load
// deserializes instead of compiling. The cache key covers the plugin file (path, size, mtime),
// its PJRT API version, platform name/version and attributes (XLA version), the device (the
// host CPU's identity on cpu, the device kind on cuda), the compile options, $XLA_FLAGS and the
// MLIR text.
// Plugins that cannot serialize compile every time (reported as not cached).
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/pjrt/pjrt_client.h"
#include "compile_cache/compile_cache.h"
#include "compile_cache/compiler.h"
#include "device/device.h"

namespace xlacel::pjrt {

class PjrtCompiler final : public compile_cache::Compiler {
 public:
  PjrtCompiler(const Client& client, std::string compile_options);

  std::string name() const override { return "xla-pjrt"; }
  std::string artifact_extension() const override { return ".xlaexe"; }
  const std::string& identity() override { return identity_; }
  // Compiles, keeps the executable for take_compiled(), writes its serialization to job.output.
  // Throws SerializationUnsupported (after compiling) when the plugin cannot serialize.
  void compile(const compile_cache::CompileJob& job) override;

  // The executable the last compile() produced (so a cache miss need not deserialize).
  LoadedExecutable take_compiled() { return std::move(compiled_); }

 private:
  const Client& client_;
  std::string compile_options_;
  std::string identity_;
  LoadedExecutable compiled_;
};

// The target part of the cache key: where the executable runs and how it was compiled (the
// compile options, and $XLA_FLAGS, which XLA reads into its defaults in this process).
compile_cache::CompileTarget pjrt_target(const Client& client, device::DeviceKind device,
                                         const std::string& compile_options);

struct ExecutableLoad {
  LoadedExecutable executable;
  bool cached = false;         // deserialized from the on-disk cache
  double seconds = 0;          // lookup + load, or compile (+ serialize and store)
  double compile_seconds = 0;  // XLA's compile time (on a hit: as recorded then)
  // Lines worth telling (a cached entry the plugin rejected, no serialization support).
  std::vector<std::string> notes;
};

// The executable for `mlir`: from `cache` when the plugin can serialize and an intact entry
// exists, else compiled (and stored when possible). Safe to call from several threads.
ExecutableLoad load_executable(const Client& client, compile_cache::CompileCache& cache,
                               const compile_cache::CompileRequest& request,
                               const std::string& compile_options);

// load_executable for every request with its compile options (compile_options[i] for
// requests[i]), all at once (PJRT_Client_Compile is thread-safe and XLA's passes are mostly
// serial); results in request order. When any fails, the first Error (in request order) is
// thrown once all have finished.
std::vector<ExecutableLoad> load_executables(
    const Client& client, compile_cache::CompileCache& cache,
    std::span<const compile_cache::CompileRequest> requests,
    std::span<const std::string> compile_options);

// Whether load_executable will compile `request` (rather than load it from `cache`).
bool will_compile(const Client& client, compile_cache::CompileCache& cache,
                  const compile_cache::CompileRequest& request, const std::string& compile_options);

}  // namespace xlacel::pjrt
