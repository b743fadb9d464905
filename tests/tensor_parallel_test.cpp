// Tensor parallelism without running a model end to end (that is engine_test's
// TensorParallelFamilyTest): the registry's sharding of each weight and cache for N devices (query
// heads split, KV heads split where they divide and replicated where not, an error naming the
// numbers where the query heads do not divide; planes cut on whole blocks or replicated), the
// sdy annotations of an emitted graph, a host tensor uploaded in slices and gathered back by a
// partitioned program, and the collectives XLA's SPMD partitioner puts in a decode step (read back
// from the compiled executable's optimized program). PJRT tests skip when the CPU plugin is
// missing.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "backends/pjrt/compile_options_proto.h"
#include "backends/pjrt/hlo_module_proto.h"
#include "backends/pjrt/pjrt_client.h"
#include "backends/pjrt/pjrt_device.h"
#include "backends/pjrt/pjrt_plugin.h"
#include "common/error.h"
#include "model_files/model_files.h"
#include "models/architecture.h"
#include "models/tensor_parallel.h"
#include "test_paths.h"

namespace xlacel::models {
namespace {

namespace fs = std::filesystem;
using stablehlo::Sharding;

const fs::path kTinyDir = testing::test_data("models/tiny_llama3");

#define REQUIRE_TINY() \
  if (!fs::exists(kTinyDir / "config.json")) GTEST_SKIP() << "tiny model not found at " << kTinyDir

std::optional<std::string> missing_cpu_plugin() {
  try {
    pjrt::find_plugin(device::DeviceKind::kCpu, "");
    return std::nullopt;
  } catch (const Error& e) {
    return std::string(e.what());
  }
}

// Each weight's sharding over `parts` devices, by name.
std::map<std::string, Sharding> weight_shardings(const ModelConfig& config, WeightType weights,
                                                 int64_t parts) {
  std::map<std::string, Sharding> shardings;
  for (const WeightSpec& spec : architecture_for(config).weight_specs(config, weights)) {
    shardings[spec.name] = weight_sharding(config, spec, parts);
  }
  return shardings;
}

std::string error_of(const ModelConfig& config, int64_t parts) {
  try {
    check_tensor_parallel(config, parts);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The tiny Llama 3 (4 query heads, 2 KV heads, intermediate 128): over 2 devices q, k, v, gate
// and up split by output rows, o and down by input columns, caches by KV heads, embeddings and
// the head by vocabulary rows; norms replicated. Over 4, K/V and their caches are replicated and
// the rest still splits.
TEST(TensorParallelSharding, MegatronSplitsAndKvReplicatedWhereKvHeadsDoNotDivide) {
  REQUIRE_TINY();
  const ModelConfig config = ModelFiles::open(kTinyDir.string()).config();
  ASSERT_EQ(config.num_heads, 4);
  ASSERT_EQ(config.num_kv_heads, 2);
  const Sharding rows = Sharding::split(0), columns = Sharding::split(1), whole;
  std::map<std::string, Sharding> two = weight_shardings(config, WeightType::kF32, 2);
  EXPECT_EQ(two.at("l0_q_proj"), rows);
  EXPECT_EQ(two.at("l0_k_proj"), rows);
  EXPECT_EQ(two.at("l0_v_proj"), rows);
  EXPECT_EQ(two.at("l0_o_proj"), columns);
  EXPECT_EQ(two.at("l1_gate_proj"), rows);
  EXPECT_EQ(two.at("l1_up_proj"), rows);
  EXPECT_EQ(two.at("l1_down_proj"), columns);
  EXPECT_EQ(two.at("l0_input_norm"), whole);
  EXPECT_EQ(two.at("embed_tokens"), rows);  // vocabulary 512
  EXPECT_EQ(two.at("lm_head"), rows);
  EXPECT_EQ(two.at("rope_inv_freq"), whole);
  std::map<std::string, Sharding> four = weight_shardings(config, WeightType::kF32, 4);
  EXPECT_EQ(four.at("l0_q_proj"), rows);
  EXPECT_EQ(four.at("l0_k_proj"), whole);
  EXPECT_EQ(four.at("l0_v_proj"), whole);
  EXPECT_EQ(four.at("l0_o_proj"), columns);
  EXPECT_EQ(four.at("l1_down_proj"), columns);
  EXPECT_TRUE(splits_kv_heads(config, 2));
  EXPECT_FALSE(splits_kv_heads(config, 4));

  const std::vector<TensorSpec> caches =
      architecture_for(config).cache_specs(config, WeightType::kF32, 4, 256);
  EXPECT_EQ(tensor_sharding(config, caches.at(0), 2), columns);  // [slots, kv_heads, rows, d]
  EXPECT_EQ(tensor_sharding(config, caches.at(1), 4), whole);
  EXPECT_EQ(tensor_sharding(config, caches.at(0), 1), whole);
  EXPECT_EQ(error_of(config, 2), "");
  EXPECT_EQ(error_of(config, 4), "");
}

// SmolLM2's heads (9 query, 3 KV): 3 devices split both; 2 devices is an error naming the numbers.
TEST(TensorParallelSharding, QueryHeadsThatDoNotDivideAreAnErrorNamingThem) {
  REQUIRE_TINY();
  ModelConfig config = ModelFiles::open(kTinyDir.string()).config();
  config.num_heads = 9;
  config.num_kv_heads = 3;
  EXPECT_EQ(error_of(config, 3), "");
  EXPECT_TRUE(splits_kv_heads(config, 3));
  EXPECT_EQ(error_of(config, 2),
            "tensor_parallel: the model's 9 query heads (3 KV heads) do not divide over 2 "
            "devices: each device attends with whole query heads (divisors of 9: 1, 3, 9)");
  EXPECT_NE(error_of(config, 0).find("at least 1"), std::string::npos);
}

// Planes of a block format (--weights auto) split with their matrix: by rows always; by columns
// only where each device's slice is whole blocks (32 elements, or 256 for the K-quants), the same
// element boundaries in every plane; otherwise the matrix (all its planes) is replicated.
TEST(TensorParallelSharding, PlanesSplitWithTheirMatrixOnWholeBlocks) {
  REQUIRE_TINY();
  ModelConfig config = ModelFiles::open(kTinyDir.string()).config();
  // hidden 64, intermediate 128: down_proj [64, 128] has 128 columns.
  for (const char* name :
       {"model.layers.0.mlp.down_proj.weight", "model.layers.0.self_attn.q_proj.weight"}) {
    config.stored_types[name] = DType::kQ4_1;
  }
  std::map<std::string, Sharding> two = weight_shardings(config, WeightType::kAuto, 2);
  std::map<std::string, Sharding> four = weight_shardings(config, WeightType::kAuto, 4);
  std::map<std::string, Sharding> eight = weight_shardings(config, WeightType::kAuto, 8);
  for (const char* plane : {"_nibbles", "_scales", "_offsets"}) {
    EXPECT_EQ(two.at(std::string("l0_q_proj") + plane), Sharding::split(0)) << plane;
    // 128 columns = 4 blocks of 32: whole blocks over 2 and 4 devices, not over 8.
    EXPECT_EQ(two.at(std::string("l0_down_proj") + plane), Sharding::split(1)) << plane;
    EXPECT_EQ(four.at(std::string("l0_down_proj") + plane), Sharding::split(1)) << plane;
    EXPECT_EQ(eight.at(std::string("l0_down_proj") + plane), Sharding()) << plane;
  }
  // A K-quant of 768 columns (3 super-groups of 256): 1.5 super-groups each over 2 devices, so
  // replicated (every plane); one each over 3.
  config.intermediate_size = 768;
  config.stored_types["model.layers.1.mlp.down_proj.weight"] = DType::kQ4_K;
  two = weight_shardings(config, WeightType::kAuto, 2);
  std::map<std::string, Sharding> three = weight_shardings(config, WeightType::kAuto, 3);
  for (const char* plane : {"_nibbles", "_scales", "_offsets", "_super_scales", "_super_offsets"}) {
    EXPECT_EQ(two.at(std::string("l1_down_proj") + plane), Sharding()) << plane;
    EXPECT_EQ(three.at(std::string("l1_down_proj") + plane), Sharding::split(1)) << plane;
  }
}

// Over 2 devices an emitted decode graph declares the mesh and partition count and annotates
// every argument and result; over 1 it carries none of it.
TEST(TensorParallelGraph, EmittedGraphCarriesShardyAnnotations) {
  REQUIRE_TINY();
  const ModelConfig config = ModelFiles::open(kTinyDir.string()).config();
  GraphOptions options{GraphKind::kDecode, 2, 64, WeightType::kF32, 2};
  const std::string single = architecture_for(config).emit(config, options).mlir;
  EXPECT_EQ(single.find("sdy."), std::string::npos);
  options.tensor_parallel = 2;
  EXPECT_EQ(graph_name(options), "decode-b2-s2-c64-f32-tp2");
  const std::string text = architecture_for(config).emit(config, options).mlir;
  EXPECT_NE(text.find("mhlo.num_partitions = 2 : i32"), std::string::npos);
  EXPECT_NE(text.find("sdy.mesh @mesh = <[\"tp\"=2]>"), std::string::npos);
  EXPECT_NE(text.find("%l0_q_proj: tensor<64x64xf32> {sdy.sharding = #sdy.sharding<@mesh, "
                      "[{\"tp\"}, {}]>}"),
            std::string::npos);
  EXPECT_NE(text.find("%l0_o_proj: tensor<64x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, "
                      "{\"tp\"}]>}"),
            std::string::npos);
  EXPECT_NE(text.find("%tokens: tensor<2xi32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}"),
            std::string::npos);
  // The next tokens come back replicated, the caches as they went in.
  EXPECT_NE(text.find("-> (tensor<2xi32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}, "
                      "tensor<2x2x64x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {\"tp\"}, "
                      "{}, {}]>}"),
            std::string::npos);
}

// A host tensor uploaded in slices along axis 1 over 2 devices comes back whole from a program
// that returns it (plus one) replicated, so each device's slice was the right columns.
TEST(TensorParallelDevice, SlicesUploadedAlongAnAxisGatherBackToTheTensor) {
  if (auto missing = missing_cpu_plugin()) GTEST_SKIP() << *missing;
  device::DeviceOptions options;
  options.tensor_parallel = 2;
  std::unique_ptr<device::Device> device = backends::open_pjrt_device(options, {});
  EXPECT_EQ(device->partitions(), 2);
  const std::string mlir =
      R"(module @gather attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["tp"=2]>
  func.func public @main(%x: tensor<3x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"tp"}]>}) -> (tensor<3x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) {
    %one = stablehlo.constant dense<1.0> : tensor<3x4xf32>
    %y = stablehlo.add %x, %one : tensor<3x4xf32>
    return %y : tensor<3x4xf32>
  }
}
)";
  std::vector<device::GraphLoad> loads;
  const device::GraphSource source{"gather", mlir, "gather", "gather.mlir"};
  auto executables = device->load(std::span(&source, 1), loads);
  std::vector<float> x(12);
  std::iota(x.begin(), x.end(), 0.0f);
  const int64_t shape[] = {3, 4};
  device::BufferPtr input = device->upload_sharded(
      std::as_bytes(std::span(x)), stablehlo::ElementType::kF32, shape, Sharding::split(1));
  device::Buffer* arguments[] = {input.get()};
  std::vector<device::BufferPtr> results = device->execute(*executables.at(0), arguments);
  std::vector<float> y(12);
  device->read(*results.at(0), std::as_writable_bytes(std::span(y)));
  for (std::size_t i = 0; i < y.size(); ++i) EXPECT_EQ(y[i], x[i] + 1) << i;
  // A sliced buffer cannot be read as the whole tensor.
  EXPECT_THROW(device->read(*input, std::as_writable_bytes(std::span(y))), Error);
  // An axis that does not divide is refused.
  const int64_t odd[] = {3, 3};
  EXPECT_THROW(device->zeros_sharded(stablehlo::ElementType::kF32, odd, Sharding::split(1)), Error);
}

// The partitioned decode step of the tiny Llama 3 over 2 devices (heads split, KV split) and
// over 4 (K/V replicated), untied and tied: XLA inserts one all-reduce after each layer's
// attention output and one after its MLP (the kInputs products); per step, one all-reduce that
// adds each token's embedding row from the device holding it (the table is cut by vocabulary)
// and two for the argmax of the logits sliced by vocabulary (their maximum, then the lowest
// index holding it: stablehlo::argmax), so the logits themselves are never gathered. Nothing
// else moves data between devices.
TEST(TensorParallelGraph, DecodeStepHasTwoAllReducesPerLayer) {
  REQUIRE_TINY();
  if (auto missing = missing_cpu_plugin()) GTEST_SKIP() << *missing;
  ModelConfig config = ModelFiles::open(kTinyDir.string()).config();
  ASSERT_FALSE(config.tie_word_embeddings);
  auto plugin = pjrt::Plugin::load(pjrt::find_plugin(device::DeviceKind::kCpu, "").path);
  for (bool tied : {false, true}) {
    config.tie_word_embeddings = tied;
    for (int64_t parts : {2, 4}) {
      const pjrt::IntegerOption devices[] = {{"cpu_device_count", parts}};
      pjrt::Client client(plugin, devices, static_cast<std::size_t>(parts));
      GraphOptions options{GraphKind::kDecode, 4, 256, WeightType::kF32, 4};
      options.tensor_parallel = parts;
      const std::string mlir = architecture_for(config).emit(config, options).mlir;
      pjrt::LoadedExecutable executable =
          client.compile(mlir, pjrt::partitioned_compile_options({}, parts));
      EXPECT_EQ(executable.addressable_devices(), client.devices());
      const pjrt::LoadedExecutable::Program program = executable.optimized_program();
      const std::map<std::string, int64_t> ops = pjrt::count_opcodes(program.code, program.format);
      ASSERT_GT(ops.size(), 3u) << program.code.size() << " bytes of " << program.format;
      auto count = [&](const char* opcode) {
        auto found = ops.find(opcode);
        return found == ops.end() ? int64_t{0} : found->second;
      };
      std::string collectives;
      for (const auto& [opcode, n] : ops) {
        if (opcode.find("all-") == 0 || opcode.find("collective") != std::string::npos ||
            opcode.find("reduce-scatter") == 0) {
          collectives += fmt::format(" {}={}", opcode, n);
        }
      }
      std::printf("tp%lld decode-b4 of %lld layers (%s), collectives:%s\n",
                  static_cast<long long>(parts), static_cast<long long>(config.num_layers),
                  tied ? "tied" : "untied", collectives.c_str());
      EXPECT_EQ(count("all-reduce"), 2 * config.num_layers + 3) << collectives;
      EXPECT_EQ(count("all-gather"), 0) << collectives;
      EXPECT_EQ(count("all-to-all"), 0) << collectives;
      EXPECT_EQ(count("collective-permute"), 0) << collectives;
    }
  }
}

}  // namespace
}  // namespace xlacel::models
