// The Llama graphs run for real: emitted, compiled with IREE for llvm-cpu (host CPU) and run by
// tests/models/run_llama.py against HF transformers' float32 reference data
// (tests/data/models/README.md): greedy tokens must equal HF's for all 48 steps of every
// prompt, and logits (teacher-forced, at HF's top-32 ids of each step) must lie within
// kLogitTolerance. Prompts longer than the prefill bucket exercise chunked prefill; the tiny
// model also checks chunked prefill against one-token-at-a-time decoding.
//
// Tolerance: HF's own cached-vs-uncached recompute differs by up to 5.5e-5 (SmolLM2 logits
// ~20 in magnitude; see full_recompute in the reference), i.e. float32 summation-order noise.
// Our graphs sum in other orders again (IREE's tiled matmuls, its own exp/cos/sin), so we
// expect a few times that; kLogitTolerance = 2e-3 leaves a wide margin while still catching
// any real mistake (a wrong RoPE angle, mask, or norm moves logits by >0.1). The measured
// maximum is printed.
//
// Compiled modules are cached under the scratch dir by a hash of MLIR + flags; the cache is
// cleared once per binary run so compile times printed are cold.
//
// XLA CPU as a second compiler (tiny model only, to keep CI time low): the same graphs compiled
// by XLA's CPU client from jax/jaxlib (scripts/requirements.txt) and run on device buffers by
// run_llama.py's "xla" runtime, held to the same HF reference and tolerance, and to IREE's greedy
// tokens. XLA sums in its own orders (Eigen matmuls), so its logits differ from IREE's by float32
// noise too; the measured maximum is printed.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <set>

#include "model_files/model_files.h"
#include "models/graph_options.h"
#include "models/test_support.h"
#include "models/weight_layout.h"
#include "models/weight_loader.h"
#include "test_paths.h"

namespace xlacel::models {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::quote;
using testing::venv;

constexpr double kLogitTolerance = 2e-3;
constexpr std::string_view kCpuFlags[] = {"--iree-hal-target-device=local",
                                          "--iree-hal-local-target-device-backends=llvm-cpu",
                                          "--iree-llvmcpu-target-cpu=host"};

// Compiled modules of one model label, cleared once per process so compile times are cold.
// ctest runs each test in its own process, possibly in parallel: one directory per label keeps
// one test from clearing another's modules mid-compile.
fs::path vmfb_cache(const std::string& label) {
  static std::set<std::string> cleared;
  fs::path dir = testing::scratch_dir("models_llama/vmfb-" + label);
  if (cleared.insert(label).second) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  return dir;
}

struct ModelSetup {
  std::string label;
  fs::path dir;  // scratch
  json job;
};

// Emits the three graphs and writes f32 weights; returns the job without prompts.
ModelSetup setup_model(const std::string& label, const ModelFiles& files, int64_t bucket,
                       int64_t capacity, WeightType weights = WeightType::kF32) {
  ModelSetup s{label, testing::scratch_dir("models_llama/" + label), {}};
  const ModelConfig& c = files.config();
  json graphs = json::object();
  for (GraphKind kind : {GraphKind::kPrefill, GraphKind::kDecode, GraphKind::kDecodeLogits}) {
    GraphOptions options{kind, kind == GraphKind::kPrefill ? bucket : 1, capacity, weights};
    std::string text = emit_graph(c, options);
    fs::path mlir = s.dir / fmt::format("{}.mlir", graph_kind_name(kind));
    testing::write_text(mlir, text);
    std::cout << label << " " << graph_kind_name(kind) << " (bucket " << options.bucket
              << ", capacity " << capacity << ", " << weight_type_name(weights)
              << "): " << testing::format_op_counts(testing::op_counts(text)) << "\n";
    graphs[graph_kind_name(kind)] = {{"mlir", mlir.string()}, {"bucket", options.bucket}};
  }
  auto start = std::chrono::steady_clock::now();
  fs::path manifest = s.dir / "weights.json";
  write_weight_file(files, weights, (s.dir / "weights.bin").string(), manifest.string());
  std::cout << label << ": weights written in "
            << fmt::format(
                   "{:.1f}",
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count())
            << " s\n";
  const char* cache_dtype = weights == WeightType::kF32    ? "float32"
                            : weights == WeightType::kBF16 ? "bfloat16"
                                                           : "float16";
  s.job = {{"cache_dir", vmfb_cache(label).string()},
           {"compile_flags", kCpuFlags},
           {"graphs", graphs},
           {"weights", manifest.string()},
           {"capacity", capacity},
           {"num_layers", c.num_layers},
           {"num_kv_heads", c.num_kv_heads},
           {"head_dim", c.head_dim},
           {"cache_dtype", cache_dtype},
           {"prompts", json::array()}};
  return s;
}

json run_job(const ModelSetup& s) {
  fs::path job_path = s.dir / "job.json";
  testing::write_text(job_path, s.job.dump(1));
  fs::path script = fs::path(XLACEL_SOURCE_DIR) / "tests" / "models" / "run_llama.py";
  auto result = testing::run_command(
      fmt::format("{} {} {}", quote(venv() / "bin" / "python"), quote(script), quote(job_path)),
      s.dir / "run.log");
  std::string output = result.output;
  if (result.status != 0) {
    ADD_FAILURE() << "run_llama.py failed:\n" << output.substr(0, 6000);
    return json();
  }
  size_t at = output.rfind("RESULT ");
  if (at == std::string::npos) {
    ADD_FAILURE() << "no RESULT from run_llama.py:\n" << output.substr(0, 6000);
    return json();
  }
  json r = json::parse(output.substr(at + 7, output.find('\n', at) - at - 7));
  const bool xla = s.job.value("runtime", "iree") == "xla";
  for (const auto& [name, info] : r["compile"].items()) {
    std::cout << s.label << " " << name << (xla ? ": XLA CPU compile " : ": llvm-cpu compile ")
              << (info["cached"].get<bool>() ? std::string("cached")
                  : xla ? fmt::format("{:.2f} s", info["seconds"].get<double>())
                        : fmt::format("{:.1f} s (cold, two compiles in parallel)",
                                      info["seconds"].get<double>()))
              << "\n";
  }
  std::cout << s.label << ": runtime load "
            << fmt::format("{:.1f}", r["load_seconds"].get<double>()) << " s, run "
            << fmt::format("{:.1f}", result.seconds) << " s in total\n";
  return r;
}

// Adds greedy and teacher-forced logits runs of every reference prompt to the job.
void add_reference_prompts(ModelSetup& s, const json& reference) {
  for (const json& p : reference["prompts"]) {
    const int steps = static_cast<int>(p["steps"].size());
    s.job["prompts"].push_back(
        {{"name", p["name"]}, {"mode", "greedy"}, {"ids", p["prompt_ids"]}, {"steps", steps}});
    json logit_ids = json::array();
    for (const json& step : p["steps"]) logit_ids.push_back(step["top"]["ids"]);
    s.job["prompts"].push_back({{"name", p["name"]},
                                {"mode", "logits"},
                                {"ids", p["prompt_ids"]},
                                {"steps", steps},
                                {"forced", p["output_ids"]},
                                {"logit_ids", logit_ids}});
  }
}

// Checks results against the reference; returns the max |logit diff| over all prompts.
double check_reference(const ModelSetup& s, const json& reference, const json& results,
                       int64_t bucket) {
  double max_diff = 0;
  size_t index = 0;
  for (const json& p : reference["prompts"]) {
    const std::string name = p["name"];
    const json& greedy = results["prompts"][index++];
    const json& logits = results["prompts"][index++];
    auto want = p["output_ids"].get<std::vector<int64_t>>();
    auto got = greedy["tokens"].get<std::vector<int64_t>>();
    size_t matched = 0;
    while (matched < want.size() && matched < got.size() && want[matched] == got[matched]) {
      ++matched;
    }
    EXPECT_EQ(got, want) << s.label << " " << name << ": greedy tokens differ from HF's at step "
                         << matched;
    auto argmax = logits["argmax"].get<std::vector<int64_t>>();
    EXPECT_EQ(argmax, want) << s.label << " " << name << ": teacher-forced argmax differs";
    double prompt_diff = 0;
    int worst_step = 0;
    for (size_t step = 0; step < p["steps"].size(); ++step) {
      auto ref = p["steps"][step]["top"]["values"].get<std::vector<double>>();
      auto ours = logits["logits"][step].get<std::vector<double>>();
      if (ref.size() != ours.size()) {
        ADD_FAILURE() << name << " step " << step << ": " << ours.size() << " logits, expected "
                      << ref.size();
        continue;
      }
      for (size_t i = 0; i < ref.size(); ++i) {
        double diff = std::abs(ref[i] - ours[i]);
        if (!(diff <= prompt_diff)) {
          prompt_diff = diff;
          worst_step = static_cast<int>(step);
        }
      }
    }
    EXPECT_LE(prompt_diff, kLogitTolerance) << s.label << " " << name << " step " << worst_step;
    max_diff = std::max(max_diff, prompt_diff);
    const int64_t n_prompt = p["n_prompt"];
    std::cout << fmt::format(
        "{} {}: {} prompt tokens ({} prefill chunk{}), {}/{} greedy tokens match HF, max |logit "
        "diff| {:.3g} (step {}), prefill {:.3f} s, decode {:.1f} ms/step\n",
        s.label, name, n_prompt, (n_prompt + bucket - 1) / bucket, n_prompt > bucket ? "s" : "",
        matched, want.size(), prompt_diff, worst_step, greedy["prefill_seconds"].get<double>(),
        1000 * greedy["decode_seconds_per_step"].get<double>());
  }
  std::cout << s.label << ": max |logit diff| vs HF over all prompts and steps: "
            << fmt::format("{:.3g}", max_diff) << " (tolerance " << kLogitTolerance << ")\n";
  return max_diff;
}

// Chunked prefill against one token at a time (a "stepwise" prompt's result).
void check_stepwise(const ModelSetup& s, const json& stepwise) {
  auto a = stepwise["stepwise_logits"].get<std::vector<double>>();
  auto b = stepwise["chunked_logits"].get<std::vector<double>>();
  ASSERT_EQ(a.size(), b.size());
  double diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, std::abs(a[i] - b[i]));
  std::cout << s.label << ": chunked prefill vs token-by-token decode, max |logit diff| "
            << fmt::format("{:.3g}", diff) << "\n";
  EXPECT_LE(diff, kLogitTolerance);
  EXPECT_EQ(stepwise["chunked_token"].get<int64_t>(),
            std::max_element(b.begin(), b.end()) - b.begin());
}

TEST(LlamaNumerics, SmolLM2MatchesTransformers) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model_path);
  XLACEL_REQUIRE_IREE_PYTHON();
  const fs::path reference_path = testing::test_data("models/smollm2_reference.json");
  if (!fs::exists(reference_path)) GTEST_SKIP() << "no reference data at " << reference_path;
  json reference = json::parse(testing::read_text(reference_path));
  ModelFiles files = ModelFiles::open(model_path);
  const int64_t bucket = 64;  // the 237-token prompt is prefilled in 4 chunks
  ModelSetup s = setup_model("SmolLM2", files, bucket, 512);
  add_reference_prompts(s, reference);
  json results = run_job(s);
  ASSERT_FALSE(results.is_null());
  check_reference(s, reference, results, bucket);
}

const int64_t kTinyBucket = 16;  // prompts of 17, 70 and 150 tokens take 2, 5 and 10 chunks

struct TinyRun {
  ModelSetup setup;
  json reference;
  json results;  // null when the runner failed (already reported)
};

// The tiny Llama-3 reference prompts on `runtime`, plus the longest prompt fed one token at a
// time (to compare chunked prefill with decode). `label` names its scratch and vmfb dirs, so
// runs on different runtimes can go in parallel.
TinyRun run_tiny_llama3(const std::string& label, const std::string& runtime) {
  TinyRun run;
  run.reference =
      json::parse(testing::read_text(testing::test_data("models/tiny_llama3_reference.json")));
  ModelFiles files = ModelFiles::open(testing::test_data("models/tiny_llama3").string());
  run.setup = setup_model(label, files, kTinyBucket, 256);
  run.setup.job["runtime"] = runtime;
  add_reference_prompts(run.setup, run.reference);
  const json& longest = run.reference["prompts"].back();
  run.setup.job["prompts"].push_back(
      {{"name", longest["name"]}, {"mode", "stepwise"}, {"ids", longest["prompt_ids"]}});
  run.results = run_job(run.setup);
  return run;
}

TEST(LlamaNumerics, TinyLlama3MatchesTransformers) {
  XLACEL_REQUIRE_IREE_PYTHON();
  TinyRun run = run_tiny_llama3("tiny-llama3", "iree");
  ASSERT_FALSE(run.results.is_null());
  check_reference(run.setup, run.reference, run.results, kTinyBucket);
  check_stepwise(run.setup, run.results["prompts"].back());
}

#define XLACEL_REQUIRE_JAX()                                                                      \
  if (std::system(                                                                                \
          (quote(venv() / "bin" / "python") + " -c 'import jax, jax.extend, jaxlib' 2>/dev/null") \
              .c_str()) != 0)                                                                     \
  GTEST_SKIP() << "the venv's python cannot import jax (pip install jax jaxlib, pinned in "       \
               << "scripts/requirements.txt)"

TEST(LlamaNumerics, TinyLlama3MatchesTransformersOnXla) {
  XLACEL_REQUIRE_IREE_PYTHON();  // for the IREE cross-check of greedy tokens
  XLACEL_REQUIRE_JAX();
  TinyRun run = run_tiny_llama3("tiny-llama3-xla", "xla");
  const ModelSetup& s = run.setup;
  const json& reference = run.reference;
  const json& results = run.results;
  ASSERT_FALSE(results.is_null());
  ASSERT_EQ(results["runtime"], "xla");
  check_reference(s, reference, results, kTinyBucket);
  check_stepwise(s, results["prompts"].back());

  // IREE on the same graphs and weights: greedy prompts only, so prefill and decode only.
  ModelSetup iree = s;
  iree.label = "tiny-llama3-xla (IREE)";
  iree.dir = s.dir / "iree";
  fs::create_directories(iree.dir);
  iree.job["runtime"] = "iree";
  iree.job["graphs"].erase("decode-logits");
  iree.job["prompts"] = json::array();
  for (const json& p : s.job["prompts"]) {
    if (p["mode"] == "greedy") iree.job["prompts"].push_back(p);
  }
  json iree_results = run_job(iree);
  ASSERT_FALSE(iree_results.is_null());
  size_t greedy = 0;
  for (const json& xla_prompt : results["prompts"]) {
    if (xla_prompt["mode"] != "greedy") continue;
    ASSERT_LT(greedy, iree_results["prompts"].size());
    const json& iree_prompt = iree_results["prompts"][greedy++];
    ASSERT_EQ(iree_prompt["name"], xla_prompt["name"]);
    auto x = xla_prompt["tokens"].get<std::vector<int64_t>>();
    auto y = iree_prompt["tokens"].get<std::vector<int64_t>>();
    EXPECT_EQ(x, y) << xla_prompt["name"] << ": XLA and IREE greedy tokens differ";
    std::cout << "tiny-llama3 " << xla_prompt["name"].get<std::string>() << ": XLA and IREE "
              << (x == y ? "agree on" : "DIFFER in") << " all " << x.size()
              << " greedy tokens; XLA decode "
              << fmt::format("{:.2f}", 1000 * xla_prompt["decode_seconds_per_step"].get<double>())
              << " ms/step, IREE "
              << fmt::format("{:.2f}", 1000 * iree_prompt["decode_seconds_per_step"].get<double>())
              << " ms/step\n";
  }
  EXPECT_EQ(greedy, reference["prompts"].size());
}

}  // namespace
}  // namespace xlacel::models
