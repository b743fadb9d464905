#pragma once
// What the compile cache needs from a compiler: an identity that changes whenever its output
// may change (part of every cache key), and a way to turn MLIR text into an artifact file.
// IREE's iree-compile is one (iree_compiler.h); XLA through PJRT will be another.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace xlacel::compile_cache {

// Where the artifact will run, as the compiler understands it.
struct CompileTarget {
  std::string name;                // short, for messages: "llvm-cpu", "cuda sm_80"
  std::string identity;            // everything about the target that changes the artifact
                                   // beyond the flags (e.g. the host CPU behind cpu=host)
  std::vector<std::string> flags;  // the complete compiler flag list for this target
};

struct CompileJob {
  std::string_view mlir;    // the module's text
  std::string_view source;  // names the input in errors (a file path or graph name)
  const CompileTarget* target = nullptr;
  std::filesystem::path output;  // where to write the artifact (an existing temporary)
};

class Compiler {
 public:
  virtual ~Compiler() = default;

  virtual std::string name() const = 0;                // "iree-compile"
  virtual std::string artifact_extension() const = 0;  // ".vmfb"
  // Identifies the compiler build (e.g. its version output); cached, so cheap to call.
  virtual const std::string& identity() = 0;
  // Writes the artifact to job.output; throws Error naming job.source with the compiler's
  // message and the target when compilation fails.
  virtual void compile(const CompileJob& job) = 0;
};

}  // namespace xlacel::compile_cache
