#include "executor/executor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "common/error.h"
#include "executor/argmax.h"
#include "models/tensor_parallel.h"
#include "models/weight_loader.h"

namespace xlacel::executor {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

template <typename T>
std::span<const std::byte> bytes_of(std::span<const T> values) {
  return std::as_bytes(values);
}

template <typename T>
std::span<const std::byte> bytes_of(const T& value) {
  return std::as_bytes(std::span<const T>(&value, 1));
}

}  // namespace

std::vector<int64_t> decode_buckets(int64_t slots) {
  std::vector<int64_t> buckets;
  for (int64_t b = 1; b < slots; b *= 2) buckets.push_back(b);
  buckets.push_back(slots);
  return buckets;
}

int64_t attention_window(int32_t last_position, int64_t capacity) {
  int64_t window = kMinWindow;
  while (window <= last_position) window *= 2;
  return window < capacity ? window : 0;
}

namespace {

int64_t slot_rows_step(int64_t capacity) {
  return std::max(kMinWindow, (capacity + 7) / 8);
}

}  // namespace

int64_t slot_rows_window(int64_t positions, int64_t capacity) {
  const int64_t step = slot_rows_step(capacity);
  const int64_t rows = (std::max<int64_t>(positions, 1) + step - 1) / step * step;
  return rows < capacity ? rows : 0;
}

std::vector<int64_t> slot_rows_windows(int64_t capacity) {
  std::vector<int64_t> windows;
  for (int64_t rows = slot_rows_step(capacity); rows < capacity; rows += slot_rows_step(capacity)) {
    windows.push_back(rows);
  }
  windows.push_back(0);
  return windows;
}

void ExecutorOptions::validate() const {
  if (slots < 1) fail_field("slots", "must be at least 1, got {}", slots);
  if (capacity < 1) fail_field("capacity", "must be at least 1, got {}", capacity);
  if (prefill_bucket < 1 || prefill_bucket > capacity) {
    fail_field("prefill_bucket", "must be in [1, capacity {}], got {}", capacity, prefill_bucket);
  }
  if (small_prefill_bucket < 0) {
    fail_field("small_prefill_bucket", "must be 0 or more, got {}", small_prefill_bucket);
  }
  if (prefill_sequences < 1) {
    fail_field("prefill_sequences", "must be at least 1, got {}", prefill_sequences);
  }
  if (verify_tokens < 0 || verify_tokens == 1 || verify_tokens > capacity) {
    fail_field("verify_tokens", "must be 0 (none) or in [2, capacity {}], got {}", capacity,
               verify_tokens);
  }
  if (math == lowering::Math::kFast && weights != models::WeightType::kAuto) {
    fail_field("math", "fast takes the file's quantized weights (weights auto), not weights {}",
               models::weight_type_name(weights));
  }
}

void ExecutorOptions::validate(const lowering::Lowering& lowering, std::string_view runtime) const {
  validate();
  if (math == lowering::Math::kFast && !lowering.has_fast_math()) {
    fail_field("math",
               "fast needs an int8 product, which {} lacks here (IREE has one on a CPU with AVX2 "
               "and FMA)",
               runtime);
  }
}

Executor::Executor(std::unique_ptr<device::Device> device,
                   std::unique_ptr<const lowering::Lowering> lowering, const ModelFiles& model,
                   const ExecutorOptions& options)
    : device_(std::move(device)),
      lowering_(lowering != nullptr ? std::move(lowering)
                                    : std::make_unique<const lowering::Lowering>()),
      model_(model),
      architecture_(models::architecture_for(model.config())),
      options_(options) {
  const auto start = Clock::now();
  const ModelConfig& config = model_.config();
  options_.validate(*lowering_, device_->runtime());
  capabilities_.runtime = device_->runtime();
  capabilities_.device = device_->description();
  capabilities_.slots = options_.slots;
  capabilities_.capacity = options_.capacity;
  capabilities_.prefill_bucket = options_.prefill_bucket;
  if (options_.small_prefill_bucket > 0 &&
      options_.small_prefill_bucket < options_.prefill_bucket) {
    capabilities_.prefill_buckets.push_back(options_.small_prefill_bucket);
  }
  capabilities_.prefill_buckets.push_back(options_.prefill_bucket);
  // Only the small bucket's chunks go several to a call: a full bucket's cost follows its rows.
  if (capabilities_.prefill_buckets.size() > 1) {
    capabilities_.prefill_sequences = std::min(options_.prefill_sequences, options_.slots);
  }
  capabilities_.vocab_size = config.vocab_size;
  capabilities_.hidden_size = config.hidden_size;
  if (config.vision) {
    capabilities_.image_token_id = static_cast<int32_t>(config.vision->image_token_id);
    capabilities_.image_tokens = config.vision->tokens_per_image();
    capabilities_.image_pixels = config.vision->pixels_per_image();
    capabilities_.image_runs_whole =
        models::attends_images_whole(prefill_graph(options_.prefill_bucket, 0), config);
    if (capabilities_.image_runs_whole && options_.prefill_bucket < capabilities_.image_tokens) {
      fail_field("prefill_bucket",
                 "must be at least {}: each image's {} tokens attend to each other, in one chunk",
                 capabilities_.image_tokens, capabilities_.image_tokens);
    }
  }
  if (options_.verify_tokens > 0) {
    capabilities_.verify_tokens = options_.verify_tokens;
    capabilities_.verify_sequences = std::min(options_.prefill_sequences, options_.slots);
  }

  // Graphs first: a model or size the graphs cannot honour fails before minutes of uploads.
  std::vector<models::GraphOptions> first;
  for (int64_t bucket : capabilities_.prefill_buckets) {
    first.push_back(prefill_graph(bucket, static_cast<int32_t>(bucket - 1)));
  }
  const int64_t small = capabilities_.prefill_buckets.front();
  for (int64_t sequences : prefill_call_sizes()) {
    if (sequences > 1) {
      first.push_back(prefill_graph(small, static_cast<int32_t>(small - 1), sequences));
    }
  }
  // Verify calls of every size, as prefill's over several sequences: a first use mid-serving
  // would stall every stream while it compiles.
  if (capabilities_.verify_tokens > 0) {
    for (int64_t sequences : decode_buckets(capabilities_.verify_sequences)) {
      first.push_back(verify_graph(capabilities_.verify_tokens,
                                   static_cast<int32_t>(capabilities_.verify_tokens - 1),
                                   sequences));
    }
  }
  for (int64_t rows : options_.preload_decode_rows) {
    // The shortest window: where every sequence's decoding starts (others load on first use).
    first.push_back(decode_graph(rows, options_.preload_logits, 0));
  }
  prepare(first);

  const auto weights_start = Clock::now();
  // Across several devices each tensor is laid out as the registry's sharding says.
  const int64_t parts = device_->partitions();
  const bool paired = lowering_->pairs_code_rows();
  for (models::WeightType type : resident_weight_types()) {
    models::for_each_weight(model_, type, paired, [&](const models::HostTensor& tensor) {
      if (weights_.count(tensor.spec.name) != 0) return;  // shared by both forms (norms, ...)
      const stablehlo::Sharding sharding = models::weight_sharding(config, tensor.spec, parts);
      // Bytes prepared for the graph, or the file's own, may stay where they are: the device
      // keeps their owner instead of a copy. File bytes it copies leave the resident set.
      const lowering::Readers readers = read_by_compiled_code_.count(tensor.spec.name) != 0
                                            ? lowering::Readers::kCompiledCode
                                            : lowering::Readers::kKernelsOnly;
      const bool in_place =
          parts == 1 && tensor.owner != nullptr && lowering_->in_place(tensor.bytes, readers);
      weights_[tensor.spec.name] = in_place
                                       ? device_->upload_in_place(tensor.bytes, tensor.spec.element,
                                                                  tensor.spec.shape, tensor.owner)
                                       : device_->upload_sharded(tensor.bytes, tensor.spec.element,
                                                                 tensor.spec.shape, sharding);
      if (!in_place && tensor.file) model_.release(*tensor.file);
      if (in_place && tensor.file) report_.file_bytes_in_place += tensor.bytes.size();
      if (in_place && readers == lowering::Readers::kKernelsOnly) {
        kept_for_kernels_.insert(tensor.spec.name);
      }
      report_.weight_bytes += tensor.bytes.size();
      report_.weight_bytes_per_device += models::device_bytes(tensor.bytes.size(), sharding, parts);
    });
  }
  if (config.vision)
    vision_ = std::make_unique<VisionEncoder>(*device_, model_, *config.vision, options_.progress);
  report_.weights_seconds = seconds_since(weights_start);
  for (const models::TensorSpec& spec :
       architecture_.cache_specs(config, options_.weights, options_.slots, options_.capacity)) {
    const stablehlo::Sharding sharding = models::tensor_sharding(config, spec, parts);
    caches_[spec.name] = device_->zeros_sharded(spec.element, spec.shape, sharding);
    const uint64_t bytes = device::dense_byte_size(spec.element, spec.shape);
    report_.cache_bytes += bytes;
    report_.cache_bytes_per_device += models::device_bytes(bytes, sharding, parts);
    const int64_t rows = spec.shape[2];
    if (rows < options_.capacity &&
        (capabilities_.ring_rows == 0 || rows < capabilities_.ring_rows)) {
      capabilities_.ring_rows = rows;
    }
  }
  const std::string ring = capabilities_.ring_rows > 0
                               ? fmt::format(", rings of {} positions", capabilities_.ring_rows)
                               : std::string();
  const std::string per_device =
      parts > 1 ? fmt::format("; per device of {}: weights {:.1f} MiB, KV cache {:.1f} MiB", parts,
                              static_cast<double>(report_.weight_bytes_per_device) / (1 << 20),
                              static_cast<double>(report_.cache_bytes_per_device) / (1 << 20))
                : std::string();
  const std::string in_place =
      report_.file_bytes_in_place > 0
          ? fmt::format(", {:.1f} MiB of it the file's own bytes, used in place",
                        static_cast<double>(report_.file_bytes_in_place) / (1 << 20))
          : std::string();
  progress(fmt::format(
      "{}: weights uploaded ({:.1f} MiB{}, {:.2f} s); KV cache {} slot{} x {} "
      "positions{} ({:.1f} MiB){}",
      capabilities_.runtime, static_cast<double>(report_.weight_bytes) / (1 << 20), in_place,
      report_.weights_seconds, options_.slots, options_.slots == 1 ? "" : "s", options_.capacity,
      ring, static_cast<double>(report_.cache_bytes) / (1 << 20), per_device));
  report_.total_seconds = seconds_since(start);
}

Executor::~Executor() = default;

void Executor::progress(const std::string& line) const {
  if (options_.progress) options_.progress(line);
}

models::WeightType Executor::graph_weights(int64_t rows) const {
  if (options_.weights != models::WeightType::kAuto) return options_.weights;
  return lowering_->reads_as_stored(rows) ? models::WeightType::kAuto : models::WeightType::kF32;
}

models::WeightType Executor::prefill_weights() const {
  // With one slot only one-row decode runs, so only the planes are resident: prefill uses them
  // too (it dequantizes once per chunk, shared by the chunk's tokens). With more slots the f32
  // copy is resident for batched decode, and prefill's matmuls take it as is.
  return graph_weights(options_.slots == 1 ? 1 : options_.prefill_bucket);
}

std::vector<models::WeightType> Executor::resident_weight_types() const {
  std::vector<models::WeightType> types = {prefill_weights()};
  for (int64_t rows : decode_buckets(options_.slots)) {
    models::WeightType type = graph_weights(rows);
    if (std::find(types.begin(), types.end(), type) == types.end()) types.push_back(type);
  }
  return types;
}

models::GraphOptions Executor::prefill_graph(int64_t bucket, int32_t last_position,
                                             int64_t sequences) const {
  models::GraphOptions graph = {models::GraphKind::kPrefill,
                                bucket,
                                options_.capacity,
                                prefill_weights(),
                                options_.slots,
                                attention_window(last_position, options_.capacity)};
  graph.sequences = sequences;
  graph.tensor_parallel = device_->partitions();
  graph.lowering = lowering_.get();
  graph.math = options_.math;
  return graph;
}

models::GraphOptions Executor::verify_graph(int64_t bucket, int32_t last_position,
                                            int64_t sequences) const {
  models::GraphOptions graph = prefill_graph(bucket, last_position, sequences);
  graph.kind = models::GraphKind::kVerify;
  return graph;
}

models::GraphOptions Executor::embed_graph(int64_t bucket, int32_t last_position,
                                           int64_t sequences) const {
  models::GraphOptions graph = prefill_graph(bucket, last_position, sequences);
  graph.kind = models::GraphKind::kEmbed;
  return graph;
}

std::vector<int64_t> Executor::prefill_call_sizes() const {
  return decode_buckets(capabilities_.prefill_sequences);
}

int64_t Executor::decode_rows(int64_t rows) const {
  if (rows < 1 || rows > options_.slots) {
    fail("decode", "{} rows do not fit the {} slots", rows, options_.slots);
  }
  for (int64_t bucket : decode_buckets(options_.slots)) {
    if (bucket >= rows) return bucket;
  }
  return options_.slots;
}

models::GraphOptions Executor::decode_graph(int64_t rows, bool want_logits,
                                            int32_t last_position) const {
  models::GraphOptions graph = {
      want_logits ? models::GraphKind::kDecodeLogits : models::GraphKind::kDecode,
      decode_rows(rows),
      options_.capacity,
      graph_weights(decode_rows(rows)),
      options_.slots,
      attention_window(last_position, options_.capacity)};
  graph.tensor_parallel = device_->partitions();
  graph.lowering = lowering_.get();
  graph.math = options_.math;
  return graph;
}

models::GraphOptions Executor::slot_graph(models::GraphKind kind, int64_t window) const {
  models::GraphOptions graph;
  graph.kind = kind;
  graph.window = window;
  graph.capacity = options_.capacity;
  graph.weights = options_.weights;  // the caches' element type follows it
  graph.slots = options_.slots;
  graph.tensor_parallel = device_->partitions();
  graph.lowering = lowering_.get();
  return graph;
}

void Executor::prepare(std::span<const models::GraphOptions> graphs) {
  const ModelConfig& config = model_.config();
  std::vector<device::GraphSource> sources;
  std::vector<models::GraphOptions> wanted;
  std::vector<std::set<std::string>> kernel_only;
  for (const models::GraphOptions& options : graphs) {
    const std::string name = models::graph_name(options);
    if (graphs_.count(name) != 0) continue;
    if (std::any_of(wanted.begin(), wanted.end(),
                    [&](const auto& w) { return models::graph_name(w) == name; })) {
      continue;
    }
    wanted.push_back(options);
    models::EmittedGraph graph = architecture_.emit(config, options);
    sources.push_back({name, std::move(graph.mlir), models::module_name(options.kind),
                       fmt::format("{}.{}.mlir", model_.name(), name)});
    kernel_only.push_back(std::move(graph.kernel_only_arguments));
  }
  if (sources.empty()) return;
  std::vector<device::GraphLoad> loads;
  std::vector<std::unique_ptr<device::Executable>> executables = device_->load(sources, loads);
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    models::GraphSignature signature = architecture_.signature(config, wanted[i]);
    for (const models::WeightSpec& spec : signature.weights) {
      if (kernel_only[i].count(spec.name) != 0) continue;
      // Weights are uploaded once, after the first graphs: one kept at an address that only
      // kernels take must not reach a later graph's compiled code.
      if (kept_for_kernels_.count(spec.name) != 0) {
        fail(sources[i].source,
             "compiled code reads weight '{}', which is kept where the model file maps it for the "
             "hand-written kernels only",
             spec.name);
      }
      read_by_compiled_code_.insert(spec.name);
    }
    const std::size_t expected = signature.outputs.size() + signature.caches.size();
    if (executables[i]->num_results() != expected) {
      fail(sources[i].source, "the executable has {} results, the signature {}",
           executables[i]->num_results(), expected);
    }
    graphs_.emplace(sources[i].name,
                    Graph{wanted[i], std::move(signature), std::move(executables[i]), {}, {}});
  }
  report_.graphs.insert(report_.graphs.end(), loads.begin(), loads.end());
}

Executor::Graph& Executor::graph(const models::GraphOptions& options) {
  auto found = graphs_.find(models::graph_name(options));
  if (found != graphs_.end()) return found->second;
  prepare(std::span<const models::GraphOptions>(&options, 1));
  return graphs_.at(models::graph_name(options));
}

std::vector<device::BufferPtr> Executor::run(Graph& graph, std::span<const Input> inputs) {
  const models::GraphSignature& signature = graph.signature;
  std::vector<device::BufferPtr> uploaded;
  for (const models::TensorSpec& spec : signature.inputs) {
    const Input* input = nullptr;
    for (const Input& candidate : inputs) {
      if (candidate.name == spec.name) input = &candidate;
    }
    if (input == nullptr)
      fail(models::graph_name(graph.options), "no value for input '{}'", spec.name);
    const std::size_t expected = device::dense_byte_size(spec.element, spec.shape);
    if (input->bytes.size() != expected) {
      fail(models::graph_name(graph.options), "input '{}' has {} bytes, expected {}", spec.name,
           input->bytes.size(), expected);
    }
    uploaded.push_back(device_->upload(input->bytes, spec.element, spec.shape));
  }
  if (graph.weights.size() != signature.weights.size() ||
      graph.caches.size() != signature.caches.size()) {
    graph.weights.clear();
    graph.caches.clear();
    for (const models::WeightSpec& spec : signature.weights) {
      graph.weights.push_back(weights_.at(spec.name).get());
    }
    for (const models::TensorSpec& spec : signature.caches) {
      graph.caches.push_back(&caches_.at(spec.name));
    }
  }
  arguments_.clear();
  for (const device::BufferPtr& buffer : uploaded) arguments_.push_back(buffer.get());
  arguments_.insert(arguments_.end(), graph.weights.begin(), graph.weights.end());
  for (const device::BufferPtr* cache : graph.caches) arguments_.push_back(cache->get());
  std::vector<device::BufferPtr> results = device_->execute(*graph.executable, arguments_);
  // The caches were donated: their old buffers are only destroyed, the results take their place.
  const std::size_t outputs = signature.outputs.size();
  for (std::size_t i = 0; i < graph.caches.size(); ++i) {
    *graph.caches[i] = std::move(results[outputs + i]);
  }
  results.resize(outputs);
  return results;
}

void Executor::check_prefill_chunk(int32_t slot, int64_t bucket, int32_t start,
                                   int32_t valid) const {
  if (slot < 0 || slot >= options_.slots) {
    fail("prefill", "slot {} is not in [0, {})", slot, options_.slots);
  }
  if (start < 0 || start + valid > options_.capacity || valid < 1 || valid > bucket) {
    fail("prefill", "chunk at {} with {} valid tokens does not fit (bucket {}, capacity {})", start,
         valid, bucket, options_.capacity);
  }
}

void Executor::check_prefill_bucket(int64_t bucket) const {
  const std::vector<int64_t>& buckets = capabilities_.prefill_buckets;
  if (std::find(buckets.begin(), buckets.end(), bucket) == buckets.end()) {
    fail("prefill", "needs a bucket of {} tokens, got {}", fmt::join(buckets, " or "), bucket);
  }
}

std::vector<float> Executor::image_embeddings(std::span<const PrefillInput> chunks, int64_t bucket,
                                              int64_t sequences) const {
  const auto rows = static_cast<std::size_t>(bucket * capabilities_.hidden_size);
  std::vector<float> images(static_cast<std::size_t>(sequences) * rows, 0.0f);
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const std::span<const float> chunk = chunks[i].image_embeddings;
    if (chunk.empty()) continue;
    if (chunk.size() != rows) {
      fail("prefill", "a chunk's image embeddings are {} floats, expected {} ({} x {})",
           chunk.size(), rows, bucket, capabilities_.hidden_size);
    }
    std::copy(chunk.begin(), chunk.end(), images.begin() + static_cast<std::ptrdiff_t>(i * rows));
  }
  return images;
}

std::vector<device::BufferPtr> Executor::run_chunk(const models::GraphOptions& options,
                                                   const PrefillInput& chunk) {
  check_prefill_bucket(options.bucket);
  check_prefill_chunk(chunk.slot, options.bucket, chunk.start, chunk.valid);
  std::vector<Input> inputs = {{"tokens", bytes_of(chunk.bucket_tokens)},
                               {"slot", bytes_of(chunk.slot)},
                               {"start", bytes_of(chunk.start)},
                               {"valid_length", bytes_of(chunk.valid)}};
  std::vector<float> images;
  if (models::takes_image_embeddings(options, model_.config())) {
    images = image_embeddings(std::span<const PrefillInput>(&chunk, 1), options.bucket, 1);
    inputs.push_back({"image_embeddings", bytes_of(std::span<const float>(images))});
  }
  return run(graph(options), inputs);
}

std::vector<float> Executor::encode_images(std::span<const float> pixel_values) {
  if (!vision_) return ModelRunner::encode_images(pixel_values);
  return vision_->encode(pixel_values);
}

void Executor::embed_chunks(std::span<const PrefillInput> chunks,
                            std::span<std::vector<float>> hidden) {
  if (hidden.size() != chunks.size()) {
    fail("embed", "{} chunks but {} outputs", chunks.size(), hidden.size());
  }
  const auto width = static_cast<std::size_t>(capabilities_.hidden_size);
  // The device reads whole buffers: every row of each bucket, then the padding rows dropped.
  std::vector<float> rows;
  std::vector<device::BufferPtr> outputs;
  int64_t bucket = 0;
  if (chunks.size() == 1) {
    const PrefillInput& only = chunks[0];
    bucket = static_cast<int64_t>(only.bucket_tokens.size());
    outputs = run_chunk(embed_graph(bucket, static_cast<int32_t>(only.start + bucket - 1)), only);
    rows.resize(static_cast<std::size_t>(bucket) * width);
  } else {
    const ChunksCall call =
        chunks_call(chunks, capabilities_.prefill_buckets.front(), prefill_call_sizes(), "embed");
    bucket = call.bucket;
    outputs = run_chunks(embed_graph(bucket, call.last_position, call.sequences), call);
    rows.resize(static_cast<std::size_t>(call.sequences * bucket) * width);
  }
  device_->read(*outputs[0], std::as_writable_bytes(std::span<float>(rows)));
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const auto first = rows.begin() + static_cast<std::ptrdiff_t>(i * bucket * width);
    hidden[i].assign(first, first + static_cast<std::ptrdiff_t>(chunks[i].valid * width));
  }
}

void Executor::prefill_chunk(int32_t slot, std::span<const int32_t> bucket_tokens, int32_t start,
                             int32_t valid, bool want_logits, PrefillOutput& out) {
  prefill_one({slot, bucket_tokens, start, valid, {}}, want_logits, out);
}

void Executor::prefill_one(const PrefillInput& chunk, bool want_logits, PrefillOutput& out) {
  const auto bucket = static_cast<int64_t>(chunk.bucket_tokens.size());
  std::vector<device::BufferPtr> outputs =
      run_chunk(prefill_graph(bucket, static_cast<int32_t>(chunk.start + bucket - 1)), chunk);
  device_->read(*outputs[0], std::as_writable_bytes(std::span<int32_t>(&out.token, 1)));
  if (want_logits) {
    out.logits.resize(static_cast<std::size_t>(capabilities_.vocab_size));
    device_->read(*outputs[1], std::as_writable_bytes(std::span<float>(out.logits)));
  } else {
    out.logits.clear();
  }
}

Executor::ChunksCall Executor::chunks_call(std::span<const PrefillInput> chunks, int64_t bucket,
                                           std::span<const int64_t> sizes, const char* what) const {
  const auto n = static_cast<int64_t>(chunks.size());
  if (n < 1 || n > sizes.back()) {
    fail(what, "{} chunks in one call; at most {} go together", n, sizes.back());
  }
  ChunksCall call;
  call.bucket = bucket;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const PrefillInput& chunk = chunks[i];
    if (static_cast<int64_t>(chunk.bucket_tokens.size()) != call.bucket) {
      fail(what, "chunks that go together need the {}-token bucket, got {}", call.bucket,
           chunk.bucket_tokens.size());
    }
    check_prefill_chunk(chunk.slot, call.bucket, chunk.start, chunk.valid);
    for (std::size_t j = 0; j < i; ++j) {
      if (chunks[j].slot == chunk.slot) fail(what, "two chunks for slot {}", chunk.slot);
    }
    call.last_position =
        std::max(call.last_position, static_cast<int32_t>(chunk.start + call.bucket - 1));
  }
  // The smallest graph that holds them; the rest of its sequences are padding: the first chunk
  // with no valid tokens, which writes nothing (graph_options.h).
  call.sequences =
      *std::find_if(sizes.begin(), sizes.end(), [&](int64_t size) { return size >= n; });
  for (int64_t s = 0; s < call.sequences; ++s) {
    const PrefillInput& chunk = chunks[static_cast<std::size_t>(s < n ? s : 0)];
    call.tokens.insert(call.tokens.end(), chunk.bucket_tokens.begin(), chunk.bucket_tokens.end());
    call.slots.push_back(chunk.slot);
    call.starts.push_back(chunk.start);
    call.valids.push_back(s < n ? chunk.valid : 0);
  }
  if (std::any_of(chunks.begin(), chunks.end(),
                  [](const PrefillInput& chunk) { return !chunk.image_embeddings.empty(); })) {
    call.images = image_embeddings(chunks, call.bucket, call.sequences);
  }
  return call;
}

std::vector<device::BufferPtr> Executor::run_chunks(const models::GraphOptions& options,
                                                    const ChunksCall& call) {
  std::vector<Input> inputs = {{"tokens", bytes_of(std::span<const int32_t>(call.tokens))},
                               {"slot", bytes_of(std::span<const int32_t>(call.slots))},
                               {"start", bytes_of(std::span<const int32_t>(call.starts))},
                               {"valid_length", bytes_of(std::span<const int32_t>(call.valids))}};
  std::vector<float> zeros;
  if (models::takes_image_embeddings(options, model_.config())) {
    if (call.images.empty()) zeros = image_embeddings({}, call.bucket, call.sequences);
    const std::vector<float>& images = call.images.empty() ? zeros : call.images;
    inputs.push_back({"image_embeddings", bytes_of(std::span<const float>(images))});
  }
  return run(graph(options), inputs);
}

void Executor::prefill_chunks(std::span<const PrefillInput> chunks, bool want_logits,
                              std::span<PrefillOutput> outs) {
  const auto n = static_cast<int64_t>(chunks.size());
  if (n < 1 || n > capabilities_.prefill_sequences || outs.size() != chunks.size()) {
    fail("prefill", "{} chunks in one call ({} outputs); at most {} go together", n, outs.size(),
         capabilities_.prefill_sequences);
  }
  if (n == 1) {
    prefill_one(chunks[0], want_logits, outs[0]);
    return;
  }
  const ChunksCall call =
      chunks_call(chunks, capabilities_.prefill_buckets.front(), prefill_call_sizes(), "prefill");
  std::vector<device::BufferPtr> outputs =
      run_chunks(prefill_graph(call.bucket, call.last_position, call.sequences), call);
  const int64_t sequences = call.sequences;
  std::vector<int32_t> next(static_cast<std::size_t>(sequences));
  device_->read(*outputs[0], std::as_writable_bytes(std::span<int32_t>(next)));
  std::vector<float> logits;
  const auto vocab = static_cast<std::size_t>(capabilities_.vocab_size);
  if (want_logits) {
    logits.resize(next.size() * vocab);
    device_->read(*outputs[1], std::as_writable_bytes(std::span<float>(logits)));
  }
  for (std::size_t i = 0; i < outs.size(); ++i) {
    outs[i].token = next[i];
    if (want_logits) {
      outs[i].logits.assign(logits.begin() + static_cast<std::ptrdiff_t>(i * vocab),
                            logits.begin() + static_cast<std::ptrdiff_t>((i + 1) * vocab));
    } else {
      outs[i].logits.clear();
    }
  }
}

void Executor::verify(std::span<const PrefillInput> chunks, std::span<std::vector<int32_t>> next) {
  if (capabilities_.verify_tokens == 0) fail("verify", "no verify graph (verify_tokens is 0)");
  if (next.size() != chunks.size()) {
    fail("verify", "{} chunks but {} outputs", chunks.size(), next.size());
  }
  const ChunksCall call = chunks_call(chunks, capabilities_.verify_tokens,
                                      decode_buckets(capabilities_.verify_sequences), "verify");
  std::vector<device::BufferPtr> outputs =
      run_chunks(verify_graph(call.bucket, call.last_position, call.sequences), call);
  std::vector<int32_t> rows(static_cast<std::size_t>(call.sequences * call.bucket));
  device_->read(*outputs[0], std::as_writable_bytes(std::span<int32_t>(rows)));
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const auto first = rows.begin() + static_cast<std::ptrdiff_t>(i * call.bucket);
    next[i].assign(first, first + chunks[i].valid);
  }
}

void Executor::decode(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                      bool want_logits, DecodeOutput& out) {
  const auto rows = static_cast<int64_t>(tokens.size());
  if (positions.size() != tokens.size()) {
    fail("decode", "{} tokens but {} positions", tokens.size(), positions.size());
  }
  for (int32_t position : positions) {
    if (position < 0 || position >= options_.capacity) {
      fail("decode", "position {} is outside the KV cache (capacity {})", position,
           options_.capacity);
    }
  }
  if (decode_rows(rows) != rows) {
    fail("decode", "{} rows is not a compiled batch size (next: {})", rows, decode_rows(rows));
  }
  const int32_t last_position = *std::max_element(positions.begin(), positions.end());
  const models::GraphOptions step_options = decode_graph(rows, want_logits, last_position);
  if (capabilities_.verify_tokens > 0 && graphs_.count(models::graph_name(step_options)) == 0) {
    // A longer attention window: verify calls will want theirs too. Both load now, side by
    // side, rather than the verify graph's first call stalling a later step (1B: seconds).
    const std::vector<models::GraphOptions> both = {
        step_options, verify_graph(capabilities_.verify_tokens, last_position)};
    prepare(both);
  }
  Graph& step = graph(step_options);
  std::vector<device::BufferPtr> outputs =
      run(step, {{"tokens", bytes_of(tokens)}, {"positions", bytes_of(positions)}});
  const auto vocab = static_cast<std::size_t>(capabilities_.vocab_size);
  out.tokens.resize(static_cast<std::size_t>(rows));
  if (want_logits) {
    out.logits.resize(out.tokens.size() * vocab);
    device_->read(*outputs[0], std::as_writable_bytes(std::span<float>(out.logits)));
    for (std::size_t b = 0; b < out.tokens.size(); ++b) {
      out.tokens[b] = argmax(std::span<const float>(out.logits).subspan(b * vocab, vocab));
    }
  } else {
    device_->read(*outputs[0], std::as_writable_bytes(std::span<int32_t>(out.tokens)));
    out.logits.clear();
  }
}

void Executor::copy_slot(int32_t from, int32_t to) {
  for (int32_t slot : {from, to}) {
    if (slot < 0 || slot >= options_.slots) {
      fail("copy_slot", "slot {} is not in [0, {})", slot, options_.slots);
    }
  }
  if (from == to) fail("copy_slot", "slot {} would be copied onto itself", from);
  run(graph(slot_graph(models::GraphKind::kCopySlot)),
      {{"from", bytes_of(from)}, {"to", bytes_of(to)}});
}

SlotRows Executor::save_slot(int32_t slot, int64_t positions) {
  if (slot < 0 || slot >= options_.slots) {
    fail("save_slot", "slot {} is not in [0, {})", slot, options_.slots);
  }
  if (positions < 0 || positions > options_.capacity) {
    fail("save_slot", "positions {} is not in [0, capacity {}]", positions, options_.capacity);
  }
  // A slot's copy costs about its filled rows, not its capacity (slot_rows_window).
  SlotRows rows;
  rows.positions = positions == 0 ? 0 : slot_rows_window(positions, options_.capacity);
  Graph& save = graph(slot_graph(models::GraphKind::kSaveSlot, rows.positions));
  std::vector<device::BufferPtr> outputs = run(save, {{"slot", bytes_of(slot)}});
  rows.caches.resize(outputs.size());
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const models::TensorSpec& spec = save.signature.outputs[i];
    rows.caches[i].resize(device::dense_byte_size(spec.element, spec.shape));
    device_->read(*outputs[i], rows.caches[i]);
  }
  return rows;
}

void Executor::restore_slot(int32_t slot, const SlotRows& rows) {
  if (slot < 0 || slot >= options_.slots) {
    fail("restore_slot", "slot {} is not in [0, {})", slot, options_.slots);
  }
  if (rows.positions < 0 || rows.positions > options_.capacity) {
    fail("restore_slot", "rows of {} positions do not fit the capacity {}", rows.positions,
         options_.capacity);
  }
  Graph& restore = graph(slot_graph(models::GraphKind::kRestoreSlot, rows.positions));
  const std::vector<models::TensorSpec>& inputs = restore.signature.inputs;
  if (rows.caches.size() + 1 != inputs.size()) {
    fail("restore_slot", "{} caches' rows given, the graph takes {}", rows.caches.size(),
         inputs.size() - 1);
  }
  // Inputs by name: the slot, then each cache's rows (run() checks their sizes).
  std::vector<Input> named = {{"slot", bytes_of(slot)}};
  for (std::size_t i = 0; i < rows.caches.size(); ++i) {
    named.push_back({inputs[i + 1].name, rows.caches[i]});
  }
  run(restore, named);
}

}  // namespace xlacel::executor
