#pragma once
// The one executor, written once over the device layer (device/device.h) for every runtime:
// it uploads the weights once and keeps them resident (in the forms the runtime's lowering
// chooses, lowering/lowering.h), keeps the slot KV cache on the device,
// picks (and compiles on first use, through the runtime's compile cache) the graph for a batch
// shape, and calls it by its GraphSignature: inputs bound by name, weights and caches by name,
// donated caches replaced by the results that carry their new values.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "device/device.h"
#include "executor/model_runner.h"
#include "executor/vision_encoder.h"
#include "lowering/lowering.h"
#include "model_files/model_files.h"
#include "models/architecture.h"

namespace xlacel::executor {

struct ExecutorOptions {
  models::WeightType weights = models::WeightType::kF32;
  int64_t capacity = 512;       // KV-cache positions per slot
  int64_t slots = 1;            // sequences held at once
  int64_t prefill_bucket = 64;  // tokens per prefill call
  // A second prefill graph for chunks of at most this many tokens (the new text of a chat's next
  // turn after prefix reuse, a short prompt): a call's time follows its bucket, not its valid
  // tokens (docs/PERFORMANCE.md, "Prefill buckets"). 0 or at least prefill_bucket: none.
  int64_t small_prefill_bucket = 16;
  // Chunks of the small bucket one prefill call may take, each of its own sequence
  // (Capabilities::prefill_sequences): graphs over 2, 4, ... up to this many (at most the
  // slots) load up front. A burst of short prompts then prefills together; 1: one per call.
  int64_t prefill_sequences = 4;
  // Decode graphs loaded with the prefill graph, up front (others load on first use): the batch
  // sizes, and whether the logits variant (host sampling) or the argmax one; each with the
  // shortest attention window (longer windows load when a sequence reaches them).
  std::vector<int64_t> preload_decode_rows = {1};
  bool preload_logits = false;
  // kFast: products with planar weights take x quantized to i8 where the lowering has such a
  // product (lowering::Lowering::planar_kernel), as llama.cpp does, for speed; not exact.
  // Decode's quantize each sequence's row alone, so its tokens still do not depend on what it is
  // batched with.
  lowering::Math math = lowering::Math::kExact;
  // Tokens per sequence of the verify graph (speculative decoding: a sequence's newest token
  // and up to verify_tokens - 1 drafted after it; ModelRunner::verify), loaded up front for 1,
  // 2, 4, ... sequences up to prefill_sequences and the slots; 0: none.
  int64_t verify_tokens = 0;
  // One line of progress, for stderr; may be empty.
  std::function<void(std::string_view)> progress;

  // FieldError naming the field (slots, capacity, prefill_bucket, ...) when a value is out of its
  // domain or the values disagree (math fast with weights other than auto); with the runtime's
  // lowering, also when it cannot honour them (math fast without an int8 product), so that a
  // caller can check before the runtime's device opens.
  void validate() const;
  void validate(const lowering::Lowering& lowering, std::string_view runtime) const;
};

// How loading went, for stats and `xlacel bench`.
struct LoadReport {
  std::vector<device::GraphLoad> graphs;  // every graph loaded so far, in order
  double weights_seconds = 0;             // prepare + upload
  uint64_t weight_bytes = 0;              // bytes of all weights as uploaded
  uint64_t file_bytes_in_place = 0;       // of which the model file's own, used where mapped
  uint64_t cache_bytes = 0;               // bytes of the KV cache (all slots)
  // What each device holds of them (tensor parallelism: its slices, and the replicated tensors
  // whole); the totals on one device.
  uint64_t weight_bytes_per_device = 0;
  uint64_t cache_bytes_per_device = 0;
  double total_seconds = 0;  // construction: weights, caches, first graphs
};

// The decode batch sizes compiled for `slots`: 1, 2, 4, ... below it, and `slots` itself.
std::vector<int64_t> decode_buckets(int64_t slots);

// The attention window (GraphOptions::window) of a decode step or prefill chunk whose positions
// are at most `last_position` in a cache of `capacity` rows: the smallest power of two from
// kMinWindow that holds them, or 0 (the whole cache) once that reaches the capacity. Attention
// reads and scores every row of its window, masking the unused ones, so short sequences run a
// short window (prefill of 128 tokens in a 512-row cache: a fifth of its time went to attending
// rows not yet written); each window is one more graph to compile, hence powers of two and a
// floor (below 128 keys, attention costs little next to reading the weights).
inline constexpr int64_t kMinWindow = 128;
int64_t attention_window(int32_t last_position, int64_t capacity);

// The rows a slot's save or restore moves of each full-length KV cache for its positions
// [0, positions) (GraphOptions::window of save-slot and restore-slot): a multiple of an eighth of
// the capacity (at least kMinWindow), or 0 (all rows) once that reaches the capacity. A copy
// costs its rows, so finer steps than the attention windows' powers of two (a 2130-token prompt
// in a 4096-row cache: 2560 rows, not all 4096); at most eight pairs of graphs to compile.
int64_t slot_rows_window(int64_t positions, int64_t capacity);
// Every such window of a `capacity` (ascending, 0 last).
std::vector<int64_t> slot_rows_windows(int64_t capacity);

class Executor final : public ModelRunner {
 public:
  // Uploads the weights, makes the zeroed KV cache and loads the prefill graph, on `device` in
  // the forms `lowering` (the same runtime's) chooses. `model` must outlive the executor. Error
  // naming the problem (unsupported architecture, bad sizes, a graph that does not compile).
  Executor(std::unique_ptr<device::Device> device,
           std::unique_ptr<const lowering::Lowering> lowering, const ModelFiles& model,
           const ExecutorOptions& options);
  ~Executor() override;

  const Capabilities& capabilities() const override { return capabilities_; }
  const LoadReport& load_report() const { return report_; }
  const ExecutorOptions& options() const { return options_; }

  // Compiles/loads these graphs now rather than on first use (several at a time).
  void prepare(std::span<const models::GraphOptions> graphs);
  // The graph options of a decode step over `rows` rows (its bucket) whose positions are at most
  // `last_position` (its attention window: attention_window), for prepare().
  models::GraphOptions decode_graph(int64_t rows, bool want_logits, int32_t last_position) const;
  // The prefill graph of `bucket` tokens of each of `sequences` sequences whose last row is at
  // `last_position` (its attention window).
  models::GraphOptions prefill_graph(int64_t bucket, int32_t last_position,
                                     int64_t sequences = 1) const;
  // The verify graph of `bucket` tokens of each of `sequences` sequences whose last row is at
  // `last_position`.
  models::GraphOptions verify_graph(int64_t bucket, int32_t last_position,
                                    int64_t sequences = 1) const;
  // The embed graph of `bucket` tokens whose last row is at `last_position`.
  models::GraphOptions embed_graph(int64_t bucket, int32_t last_position,
                                   int64_t sequences = 1) const;
  // The weight type of a graph over `rows` activation rows: the executor's, except that kAuto
  // reads weights as stored only where the lowering says so (lowering::Lowering::
  // reads_as_stored) and the f32 copy elsewhere.
  models::WeightType graph_weights(int64_t rows) const;
  // The graph over this executor's caches that moves whole slots: copy-slot, save-slot or
  // restore-slot (models::moves_slots); the last two move the rows of positions [0, window) of
  // the full-length KV caches (window 0: all rows; GraphOptions::window).
  models::GraphOptions slot_graph(models::GraphKind kind, int64_t window = 0) const;
  // The runtime's lowering, which chose the forms of the weights and the graphs' kernels.
  const lowering::Lowering& lowering() const { return *lowering_; }

  int64_t decode_rows(int64_t rows) const override;
  void prefill_chunk(int32_t slot, std::span<const int32_t> bucket_tokens, int32_t start,
                     int32_t valid, bool want_logits, PrefillOutput& out) override;
  void prefill_chunks(std::span<const PrefillInput> chunks, bool want_logits,
                      std::span<PrefillOutput> outs) override;
  void embed_chunks(std::span<const PrefillInput> chunks,
                    std::span<std::vector<float>> hidden) override;
  void verify(std::span<const PrefillInput> chunks, std::span<std::vector<int32_t>> next) override;
  std::vector<float> encode_images(std::span<const float> pixel_values) override;
  void decode(std::span<const int32_t> tokens, std::span<const int32_t> positions, bool want_logits,
              DecodeOutput& out) override;
  // Run the copy-slot, save-slot and restore-slot graphs (each loaded on first use; prepare()
  // them where a first use must not wait for a compile).
  void copy_slot(int32_t from, int32_t to) override;
  SlotRows save_slot(int32_t slot, int64_t positions) override;
  void restore_slot(int32_t slot, const SlotRows& rows) override;

 private:
  struct Graph {
    models::GraphOptions options;
    models::GraphSignature signature;
    std::unique_ptr<device::Executable> executable;
    // The signature's weights and caches, found by name on the first run: a decode step passes
    // hundreds of weights, and looking each up by name on every step was a measurable share of
    // the host thread's time (docs/PERFORMANCE.md, "Executor"). The caches' entries of caches_ (map
    // nodes stay put) take each call's results.
    std::vector<device::Buffer*> weights;
    std::vector<device::BufferPtr*> caches;
  };
  // A per-call input, bound to the signature input of the same name.
  struct Input {
    std::string_view name;
    std::span<const std::byte> bytes;
  };

  void progress(const std::string& line) const;
  // The sequence counts of the prefill graphs of the small bucket: 1, 2, 4, ... up to
  // Capabilities::prefill_sequences.
  std::vector<int64_t> prefill_call_sizes() const;
  // Error unless a chunk of `valid` tokens of a `bucket` at `start` fits slot `slot`.
  void check_prefill_chunk(int32_t slot, int64_t bucket, int32_t start, int32_t valid) const;
  // Error unless `bucket` is one of the compiled prefill buckets.
  void check_prefill_bucket(int64_t bucket) const;
  // Runs one sequence's chunk through the prefill or embed graph of `options` (checked as
  // prefill_chunk documents); returns its outputs.
  std::vector<device::BufferPtr> run_chunk(const models::GraphOptions& options,
                                           const PrefillInput& chunk);
  // The image_embeddings input of a call over chunks of `bucket` tokens (a graph that takes them,
  // models::takes_image_embeddings): each chunk's, or zeros for a chunk without any.
  std::vector<float> image_embeddings(std::span<const PrefillInput> chunks, int64_t bucket,
                                      int64_t sequences) const;
  // Several sequences' chunks of one `bucket` in one call (checked as prefill_chunks documents;
  // errors name `what`), padded to the smallest of the graphs over `sizes` sequences that holds
  // them: its sequence count, the last position any chunk reaches, and its inputs.
  struct ChunksCall {
    int64_t bucket = 0;
    int64_t sequences = 0;
    int32_t last_position = 0;
    std::vector<int32_t> tokens, slots, starts, valids;
    std::vector<float> images;  // image_embeddings, where the graph takes them
  };
  // One chunk through the prefill graph of its bucket.
  void prefill_one(const PrefillInput& chunk, bool want_logits, PrefillOutput& out);
  ChunksCall chunks_call(std::span<const PrefillInput> chunks, int64_t bucket,
                         std::span<const int64_t> sizes, const char* what) const;
  std::vector<device::BufferPtr> run_chunks(const models::GraphOptions& options,
                                            const ChunksCall& call);
  Graph& graph(const models::GraphOptions& options);  // loads it on first use
  // Runs `graph`; returns its outputs (not the caches), in signature order.
  std::vector<device::BufferPtr> run(Graph& graph, std::span<const Input> inputs);
  std::vector<device::BufferPtr> run(Graph& graph, std::initializer_list<Input> inputs) {
    return run(graph, std::span<const Input>(inputs.begin(), inputs.size()));
  }

  std::unique_ptr<device::Device> device_;
  std::unique_ptr<VisionEncoder> vision_;  // a vision-language model's (on device_)
  std::unique_ptr<const lowering::Lowering> lowering_;
  const ModelFiles& model_;
  const models::Architecture& architecture_;
  ExecutorOptions options_;
  Capabilities capabilities_;
  LoadReport report_;
  models::WeightType prefill_weights() const;
  // The weight types some graph uses: each one's arguments are resident (shared names once).
  std::vector<models::WeightType> resident_weight_types() const;

  std::map<std::string, device::BufferPtr> weights_;  // by weight name
  // Weights that compiled code reads in some graph prepared so far, and those uploaded in place
  // for kernels only (lowering::Readers).
  std::set<std::string> read_by_compiled_code_, kept_for_kernels_;
  std::map<std::string, device::BufferPtr> caches_;  // by cache name
  std::map<std::string, Graph> graphs_;              // by graph_name()
  std::vector<device::Buffer*> arguments_;           // reused by every call
};

}  // namespace xlacel::executor
