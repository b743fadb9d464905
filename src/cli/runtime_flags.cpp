#include "cli/runtime_flags.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>

#include "cli/graph_flags.h"
#include "common/error.h"

namespace xlacel::cli {

void add_runtime_flags(CLI::App* command, RuntimeFlags& flags) {
  command->add_option("-m,--model", flags.model,
                      "GGUF file or HF model directory (default: the model scripts/setup fetched)");
  command->add_option(
      "--mmproj", flags.mmproj,
      "the image encoder (llama.cpp's mmproj GGUF) of a vision-language GGUF model: "
      "then --image works");
  command->add_option("--backend", flags.backend, "iree or xla")->capture_default_str();
  command->add_option("--device", flags.device, "cpu or cuda")->capture_default_str();
  command
      ->add_option("--threads", flags.threads,
                   "CPU worker threads of the runtime (0: its default, one per core)")
      ->capture_default_str();
  command
      ->add_option("--tensor-parallel", flags.tensor_parallel,
                   "devices to split the model over (XLA's SPMD partitioner; --backend xla; on "
                   "cpu, that many CPU devices in this process sharing --threads)")
      ->capture_default_str();
  command
      ->add_option("--weights", flags.weights,
                   "weights: auto (each tensor as the file stores it, quantized ones included; "
                   "exact), or all converted to f32 (exact), bf16 or f16 (weights and KV cache)")
      ->capture_default_str();
  command
      ->add_option("--math", flags.math,
                   "exact (products in f32 on the values transformers dequantizes) or fast "
                   "(quantized weights multiply activations rounded to 8 bits per 32, as "
                   "llama.cpp does: faster, not exact; --backend iree on a CPU with AVX2 and "
                   "FMA; prefill stays exact without AVX-512 VNNI)")
      ->capture_default_str();
  command->add_option("--context", flags.context,
                      "KV-cache positions per sequence (default: the smallest power of two "
                      "from 512 that holds prompt and new tokens)");
  command->add_option("--prefill-bucket", flags.prefill_bucket, "prompt tokens per prefill call")
      ->capture_default_str();
  command
      ->add_option("--small-prefill-bucket", flags.small_prefill_bucket,
                   "a second prefill graph for shorter chunks (a chat turn's new text, a short "
                   "prompt), which cost their bucket; 0: none")
      ->capture_default_str();
  command
      ->add_option("--prefill-sequences", flags.prefill_sequences,
                   "with several slots, chunks of the small bucket (of as many waiting prompts) "
                   "one prefill call takes, so a burst of short prompts prefills together; 1: one")
      ->capture_default_str();
  command
      ->add_option("--speculative", flags.speculative,
                   "speculative decoding of greedy requests: ngram (tokens drafted by looking the "
                   "text's latest tokens up earlier in it, checked several in one call: the same "
                   "tokens, sooner where the text repeats its input), auto (ngram) or off")
      ->capture_default_str();
  command->add_option("--draft-max", flags.draft_max, "drafted tokens checked per call, at most")
      ->capture_default_str();
  command->add_option("--plugin", flags.plugin, "PJRT plugin .so for --backend xla");
  command->add_option("--cuda-sm", flags.cuda_sm, "CUDA architecture for IREE (default sm_80)");
  command->add_option("--compiler-flag", flags.compiler_flags,
                      "extra iree-compile flag (repeatable; part of the cache key), for tuning");
}

engine::EngineOptions engine_options(const RuntimeFlags& flags, const ModelFiles& model,
                                     int64_t positions, int64_t slots, bool quiet) {
  engine::EngineOptions options;
  const std::vector<std::string> runtimes = backends::runtime_names();
  if (std::find(runtimes.begin(), runtimes.end(), flags.backend) == runtimes.end()) {
    fail("--backend", "unknown backend '{}' (known: {})", flags.backend, fmt::join(runtimes, ", "));
  }
  options.runtime = flags.backend;
  auto device = device::parse_device_kind(flags.device);
  if (!device) fail("--device", "unknown device '{}' (cpu, cuda)", flags.device);
  options.device.kind = *device;
  options.device.threads = flags.threads;
  options.device.tensor_parallel = flags.tensor_parallel;
  options.executor.weights = parse_weights_flag(flags.weights);
  const std::optional<lowering::Math> math = lowering::parse_math(flags.math);
  if (!math) fail("--math", "unknown mode '{}' (exact, fast)", flags.math);
  options.executor.math = *math;

  // The positions the model runs exactly (LongRoPE: up to its original context).
  const int64_t max_positions = model.config().exact_positions();
  int64_t capacity = flags.context;
  if (capacity < 0) fail("--context", "must be positive, got {}", capacity);
  if (capacity == 0) {
    capacity = 512;
    while (capacity < positions && capacity < max_positions) capacity *= 2;
    if (max_positions > 0) capacity = std::min(capacity, max_positions);
  } else if (max_positions > 0 && capacity > max_positions) {
    fail("--context", "{} is more than the model's {} positions{}", capacity, max_positions,
         max_positions < model.config().max_position_embeddings
             ? " run exactly (LongRoPE: its short factors, up to original_max_position_embeddings)"
             : "");
  }
  options.executor.capacity = capacity;
  options.executor.slots = slots;
  // A bucket past the context is cut to it; values out of their domain are the options' own to
  // refuse (validate, below), under the flags' names (cli/field_flags.h).
  options.executor.prefill_bucket =
      flags.prefill_bucket > 0 ? std::min(flags.prefill_bucket, capacity) : flags.prefill_bucket;
  // Gemma 3's image tokens attend to each other and so prefill in one chunk: a bucket that holds
  // an image's (256).
  if (const auto& vision = model.config().vision;
      vision && vision->projector == VisionProjector::kGemma3AvgPool) {
    options.executor.prefill_bucket =
        std::min(std::max(options.executor.prefill_bucket, vision->tokens_per_image()), capacity);
  }
  options.executor.small_prefill_bucket = flags.small_prefill_bucket;
  options.executor.prefill_sequences = flags.prefill_sequences;
  const std::optional<engine::Speculation> speculation =
      engine::parse_speculation(flags.speculative);
  if (!speculation) {
    fail("--speculative", "unknown mode '{}' (auto, ngram, off)", flags.speculative);
  }
  options.scheduler.speculation = *speculation;
  options.scheduler.draft_max = flags.draft_max;
  options.runtime_options.xla.plugin_path = flags.plugin;
  options.runtime_options.iree.cuda_sm = flags.cuda_sm;
  options.runtime_options.iree.compiler_flags = flags.compiler_flags;
  if (flags.backend != "xla" && !flags.plugin.empty()) {
    fail("--plugin", "is an option of --backend xla");
  }
  if (flags.backend != "iree" && (!flags.cuda_sm.empty() || !flags.compiler_flags.empty())) {
    fail(flags.cuda_sm.empty() ? "--compiler-flag" : "--cuda-sm", "is an option of --backend iree");
  }
  options.device.validate();
  options.executor.validate();
  options.scheduler.validate();
  if (!quiet) {
    options.device.progress = [](std::string_view line) {
      std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
    };
  }
  return options;
}

}  // namespace xlacel::cli
