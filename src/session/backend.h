#pragma once
// The contract between the session (src/session) and a runtime backend (src/backends/*): one
// loaded model, one sequence, one graph call per method. A backend compiles (or loads from its
// cache) the graphs of models/graph_options.h, uploads the weights once and keeps them resident,
// keeps the KV cache on its device and updates it in place, and reads back only what the caller
// asks for: the argmax token id (4 bytes) or the logits. Chunking, positions and capacity checks
// live in Session (session.h), the same for every backend.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model_files/model_files.h"
#include "models/graph_options.h"

namespace xlacel::session {

enum class DeviceKind { kCpu, kCuda };
const char* device_kind_name(DeviceKind kind);  // "cpu", "cuda"
std::optional<DeviceKind> parse_device_kind(std::string_view name);

// What a backend loads: the graphs for these shapes, on this device.
struct BackendOptions {
  const ModelFiles* model = nullptr;  // must outlive the backend's construction
  models::WeightType weights = models::WeightType::kF32;
  int64_t capacity = 512;       // KV-cache positions
  int64_t prefill_bucket = 64;  // tokens per prefill call
  bool argmax_graph = true;     // compile `decode` (greedy, argmax on the device)
  bool logits_graph = false;    // compile `decode-logits` (sampling on the host)
  DeviceKind device = DeviceKind::kCpu;
  std::string cuda_sm;      // IREE cuda target ("sm_80"); empty: the backend's default
  std::string plugin_path;  // PJRT plugin; empty: search (backend's rules)
  std::vector<std::string> extra_compiler_flags;
  std::filesystem::path compile_cache_dir;  // empty: CompileCache::default_directory()
  // One line of progress ("compiling decode ... 4.4 s"), for stderr; may be empty.
  std::function<void(std::string_view)> progress;
};

// How loading went, for stats and `xlacel bench`.
struct GraphLoad {
  std::string graph;           // "prefill-b64-c512-f32"
  bool cached = false;         // the compiled artifact came from the on-disk cache
  double seconds = 0;          // wall time to get the executable (lookup or compile) and load it
  double compile_seconds = 0;  // the compiler's own time (on a cache hit: as recorded then)
};
struct LoadReport {
  std::vector<GraphLoad> graphs;
  double weights_seconds = 0;  // prepare + upload
  uint64_t weight_bytes = 0;   // bytes of all weight arguments as uploaded
  double total_seconds = 0;
};

struct Capabilities {
  std::string backend;        // "iree", "xla"
  std::string device;         // for people: "cpu (llvm-cpu, local-task, 2 threads)"
  int64_t max_sequences = 1;  // sequences held at once (1 for now)
  int64_t capacity = 0;       // KV-cache positions
  int64_t prefill_bucket = 0;
  bool argmax_on_device = false;  // decode graph loaded
  bool logits = false;            // decode-logits graph loaded
};

// What one graph call reads back.
struct StepOutput {
  int32_t token = -1;         // argmax of the logits (ties to the lower id)
  std::vector<float> logits;  // [vocab], filled only when asked for
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual const Capabilities& capabilities() const = 0;
  virtual const LoadReport& load_report() const = 0;

  // One prefill call: `bucket_tokens` (exactly prefill_bucket ids, padded by the caller) at
  // positions start.. ; the first `valid` are real. Sets out.token to the argmax after token
  // valid-1, and out.logits when want_logits. Requires start + bucket <= capacity.
  virtual void prefill_chunk(std::span<const int32_t> bucket_tokens, int32_t start, int32_t valid,
                             bool want_logits, StepOutput& out) = 0;

  // One decode call for `token` at `position`: the `decode` graph (out.token, 4-byte readback)
  // unless want_logits, then `decode-logits` (out.logits and out.token = their argmax).
  virtual void decode(int32_t token, int32_t position, bool want_logits, StepOutput& out) = 0;
};

}  // namespace xlacel::session
