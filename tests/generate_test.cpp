// `xlacel generate` as a user runs it: greedy output token for token against HF transformers
// (tests/data/models/*_reference.json, written by tools/reference/llama.py), streaming, seeded
// sampling, stop strings, and the errors a user can cause. Needs the project venv (iree-compile,
// iree.runtime); skips without it. The engine itself is tested in-process in engine_test.cpp.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "common/base64.h"
#include "models/test_support.h"
#include "run_xlacel.h"
#include "test_paths.h"

namespace xlacel {
namespace {

using nlohmann::json;
using testing::run_xlacel;
using testing::scratch_dir;
using testing::test_data;

json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  return json::parse(in);
}

std::vector<int32_t> ids(const json& array) {
  return array.get<std::vector<int32_t>>();
}

// How many leading tokens agree.
size_t matched(const std::vector<int32_t>& got, const std::vector<int32_t>& want) {
  size_t n = 0;
  while (n < got.size() && n < want.size() && got[n] == want[n]) ++n;
  return n;
}

bool one_line(const std::string& text) {
  return !text.empty() && text.find('\n') == text.size() - 1;
}

TEST(GenerateCli, SmolLM2GreedyMatchesHfOnEveryReferencePrompt) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model);
  XLACEL_REQUIRE_IREE_PYTHON();
  const json reference = read_json(test_data("models/smollm2_reference.json"));
  const auto scratch = scratch_dir("generate_smollm2");
  ASSERT_GE(reference["prompts"].size(), 5u);
  for (const json& prompt : reference["prompts"]) {
    const std::string name = prompt["name"];
    std::vector<std::string> args = {"generate",        "-m",  model, "-n", "48", "--ignore-eos",
                                     "--output-format", "json"};
    if (prompt["kind"] == "chat") {
      const auto messages = scratch / (name + ".json");
      std::ofstream(messages) << prompt["messages"].dump();
      args.insert(args.end(), {"--messages", messages.string()});
    } else {
      args.insert(args.end(), {"-p", prompt["text"].get<std::string>()});
    }
    const auto run = run_xlacel(scratch, args);
    ASSERT_EQ(run.exit_code, 0) << name << ": " << run.err;
    const json out = json::parse(run.out);
    EXPECT_EQ(ids(out["prompt_ids"]), ids(prompt["prompt_ids"])) << name;
    const auto want = ids(prompt["output_ids"]);
    const auto got = ids(out["output_ids"]);
    EXPECT_EQ(got, want) << name;
    std::printf(
        "%-18s prompt %3zu tokens: %zu/%zu tokens match HF; prefill %.3f s, decode %.1f "
        "tok/s\n",
        name.c_str(), got.empty() ? 0 : ids(out["prompt_ids"]).size(), matched(got, want),
        want.size(), out["timings"]["prefill_seconds"].get<double>(),
        out["timings"]["generation_tokens_per_second"].get<double>());
  }
}

TEST(GenerateCli, StreamsAChatAnswerAndStopsAtEndOfTurn) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model);
  XLACEL_REQUIRE_IREE_PYTHON();
  const auto run = run_xlacel(scratch_dir("generate_chat"), {"generate", "-m", model, "--chat",
                                                             "What is the capital of France?"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // HF's greedy answer up to its first <|im_end|> (capital_chat in the reference).
  EXPECT_EQ(run.out, "The capital of France is Paris.\n");
  EXPECT_NE(run.err.find("time to first token"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("generated 8 tokens"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("stop: eos"), std::string::npos) << run.err;
}

TEST(GenerateCli, StopStringEndsTheTextBeforeIt) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model);
  XLACEL_REQUIRE_IREE_PYTHON();
  const auto run = run_xlacel(scratch_dir("generate_stop"),
                              {"generate", "-m", model, "--chat", "What is the capital of France?",
                               "--stop", " Paris", "--stop", "never appears"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "The capital of France is\n");
  EXPECT_NE(run.err.find("stop: stop"), std::string::npos) << run.err;
}

TEST(GenerateCli, SeededSamplingIsReproducible) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model);
  XLACEL_REQUIRE_IREE_PYTHON();
  const auto scratch = scratch_dir("generate_sampling");
  auto sample = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"generate",         "-m",  model, "-p",
                                     "Once upon a time", "-n",  "24",  "--ignore-eos",
                                     "--output-format",  "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto run = run_xlacel(scratch, args);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    return run.exit_code == 0 ? ids(json::parse(run.out)["output_ids"]) : std::vector<int32_t>{};
  };
  const std::vector<std::string> warm = {"--temp",           "1.0",  "--top-k", "50",
                                         "--top-p",          "0.95", "--min-p", "0.02",
                                         "--repeat-penalty", "1.1"};
  auto with_seed = [&](const char* seed) {
    auto args = warm;
    args.insert(args.end(), {"--seed", seed});
    return sample(args);
  };
  const auto first = with_seed("7");
  ASSERT_EQ(first.size(), 24u);
  EXPECT_EQ(with_seed("7"), first) << "same seed, same tokens";
  EXPECT_NE(with_seed("8"), first) << "another seed should sample differently";
  // top-k 1 keeps only the argmax: sampling then equals greedy decoding on the device.
  EXPECT_EQ(sample({"--temp", "1.0", "--top-k", "1", "--seed", "3"}), sample({}));
}

// One graph, two OpenXLA runtimes: `--backend xla` (PJRT CPU plugin) and `--backend iree` give
// the same greedy tokens, and HF's.
TEST(GenerateCli, XlaAndIreeGiveTheSameGreedyTokens) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model);
  XLACEL_REQUIRE_IREE_PYTHON();
  const json reference = read_json(test_data("models/smollm2_reference.json"));
  const auto scratch = scratch_dir("generate_xla_iree");
  for (const json& prompt : reference["prompts"]) {
    if (prompt["name"] != "capital_chat" && prompt["name"] != "fibonacci_code") continue;
    const auto messages = scratch / "messages.json";
    std::vector<std::string> input = {"-p", prompt["text"].get<std::string>()};
    if (prompt["kind"] == "chat") {
      std::ofstream(messages) << prompt["messages"].dump();
      input = {"--messages", messages.string()};
    }
    std::map<std::string, std::vector<int32_t>> tokens;
    for (const std::string backend : {"xla", "iree"}) {
      std::vector<std::string> args = {"generate", "-m", model,          "--backend",       backend,
                                       "-n",       "48", "--ignore-eos", "--output-format", "json"};
      args.insert(args.end(), input.begin(), input.end());
      const auto run = run_xlacel(scratch, args);
      if (backend == "xla" && run.exit_code != 0 &&
          run.err.find("no PJRT CPU plugin") != std::string::npos) {
        GTEST_SKIP() << run.err;
      }
      ASSERT_EQ(run.exit_code, 0) << backend << ": " << run.err;
      tokens[backend] = ids(json::parse(run.out)["output_ids"]);
    }
    EXPECT_EQ(tokens["xla"], tokens["iree"]) << prompt["name"];
    EXPECT_EQ(tokens["xla"], ids(prompt["output_ids"])) << prompt["name"];
  }
}

// IREE on CUDA (sm_80 code, which Hopper also runs): greedy tokens as on the CPU and as HF.
TEST(GenerateCli, IreeOnCudaMatchesHfWhereAGpuExists) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model);
  XLACEL_REQUIRE_IREE_PYTHON();
  if (std::system("nvidia-smi -L >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "no CUDA GPU on this machine (nvidia-smi -L failed)";
  }
  const json reference = read_json(test_data("models/smollm2_reference.json"));
  const json& prompt = reference["prompts"][0];
  const auto run =
      run_xlacel(scratch_dir("generate_cuda"), {"generate", "-m", model, "--device", "cuda", "-p",
                                                prompt["text"].get<std::string>(), "-n", "48",
                                                "--ignore-eos", "--output-format", "json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json out = json::parse(run.out);
  EXPECT_EQ(ids(out["output_ids"]), ids(prompt["output_ids"]));
  std::printf("iree cuda: %s, decode %.1f tok/s\n", out["device"].get<std::string>().c_str(),
              out["timings"]["generation_tokens_per_second"].get<double>());
}

// A vision-language model with images, as a user runs it: image files through the model's own
// image processor and chat template into HF's prompt ids (the image tokens of every tile and the
// whole image), and HF's greedy tokens after them (tests/data/models/smolvlm_tiny, written by
// tools/reference/vision_chat.py from Idefics3Processor and model.generate). Each case with
// --chat and --image; one on XLA too; one as a messages file whose image parts are a local path
// and a data: URL. Then what a user can get wrong, each a one-line error.
TEST(GenerateCli, ImagesGiveHfPromptAndTokens) {
  XLACEL_REQUIRE_IREE_PYTHON();
  const auto model = test_data("models/smolvlm_tiny");
  const json reference = read_json(model / "reference.json");
  const auto scratch = scratch_dir("generate_images");
  auto image = [](const std::string& name) { return test_data("images/" + name).string(); };
  auto run_case = [&](const json& test, const std::vector<std::string>& input,
                      const std::string& backend) {
    std::vector<std::string> args = {"generate", "-m", model.string(),    "--backend", backend,
                                     "-n",       "12", "--output-format", "json"};
    args.insert(args.end(), input.begin(), input.end());
    const auto run = run_xlacel(scratch, args);
    if (backend == "xla" && run.exit_code != 0 &&
        run.err.find("no PJRT CPU plugin") != std::string::npos) {
      return;
    }
    ASSERT_EQ(run.exit_code, 0) << test["name"] << " " << backend << ": " << run.err;
    const json out = json::parse(run.out);
    EXPECT_EQ(ids(out["prompt_ids"]), ids(test["prompt_ids"])) << test["name"] << " " << backend;
    EXPECT_EQ(ids(out["output_ids"]), ids(test["output_ids"])) << test["name"] << " " << backend;
  };
  for (const json& test : reference["cases"]) {
    std::vector<std::string> input = {
        "--chat", test["messages"][0]["content"].back()["text"].get<std::string>()};
    for (const json& file : test["images"]) input.insert(input.end(), {"--image", image(file)});
    run_case(test, input, "iree");
    if (test["name"] == "one_image") run_case(test, input, "xla");
  }
  // Gemma 3's processor (one 32 x 32 image each, its tokens between <start_of_image> and
  // <end_of_image>), whose image tokens attend to each other.
  const auto gemma3 = test_data("models/gemma3_vlm_tiny");
  for (const json& test : read_json(gemma3 / "reference.json")["cases"]) {
    std::vector<std::string> args = {
        "generate", "-m",     gemma3.string(),
        "-n",       "12",     "--output-format",
        "json",     "--chat", test["messages"][0]["content"].back()["text"]};
    for (const json& file : test["images"]) args.insert(args.end(), {"--image", image(file)});
    const auto run = run_xlacel(scratch, args);
    ASSERT_EQ(run.exit_code, 0) << test["name"] << ": " << run.err;
    const json out = json::parse(run.out);
    EXPECT_EQ(ids(out["prompt_ids"]), ids(test["prompt_ids"])) << "gemma3 " << test["name"];
    EXPECT_EQ(ids(out["output_ids"]), ids(test["output_ids"])) << "gemma3 " << test["name"];
  }

  const json& two = reference["cases"][1];
  const std::string second = testing::read_file(image(two["images"][1]));
  json messages = two["messages"];
  messages[0]["content"][0] = {{"type", "image_url"},
                               {"image_url", {{"url", image(two["images"][0])}}}};
  messages[0]["content"][1] = {
      {"type", "image_url"},
      {"image_url",
       {{"url", "data:image/png;base64," + base64_encode(std::as_bytes(std::span(second)))}}}};
  std::ofstream(scratch / "messages.json") << messages.dump();
  run_case(two, {"--messages", (scratch / "messages.json").string()}, "iree");

  auto expect_error = [&](const std::vector<std::string>& args, const std::string& message) {
    const auto run = run_xlacel(scratch, args);
    EXPECT_EQ(run.exit_code, 1) << run.err;
    EXPECT_TRUE(one_line(run.err)) << run.err;
    EXPECT_NE(run.err.find(message), std::string::npos) << run.err;
  };
  expect_error(
      {"generate", "-m", model.string(), "--chat", "Hi", "--image", image("truncated.png")},
      image("truncated.png") + ":");
  expect_error({"generate", "-m", model.string(), "--chat", "Hi", "--image",
                (scratch / "absent.png").string()},
               "cannot open the image");
  expect_error({"generate", "-m", test_data("models/tiny_llama3").string(), "--prompt-ids", "1 2",
                "--image", image("rgb_1x1.png")},
               "--prompt-ids");
  expect_error({"generate", "-m", test_data("models/qwen3").string(), "-p", "Hi", "--image",
                image("rgb_1x1.png")},
               "--image: the model reads text only");
  messages[0]["content"][0]["image_url"]["url"] = "https://example.com/cat.png";
  std::ofstream(scratch / "remote.json") << messages.dump();
  expect_error({"generate", "-m", model.string(), "--messages", (scratch / "remote.json").string()},
               "messages[0].content[0]: images are not fetched from URLs");
}

TEST(GenerateCli, PromptBeyondTheContextIsAnError) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model);
  const auto run = run_xlacel(scratch_dir("generate_capacity"),
                              {"generate", "-m", model, "--context", "16", "-p",
                               "one two three four five six seven eight nine ten eleven twelve "
                               "thirteen fourteen fifteen sixteen seventeen"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(one_line(run.err)) << run.err;
  EXPECT_NE(run.err.find("do not fit the context of 16 positions"), std::string::npos) << run.err;
}

TEST(GenerateCli, MissingIreeRuntimeNamesThePackage) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model);
  const auto scratch = scratch_dir("generate_no_venv");
  const auto empty = scratch / "empty-venv";
  std::filesystem::create_directories(empty);
  const auto run = run_xlacel(scratch, {"generate", "-m", model, "-p", "Hello"},
                              "XLACEL_VENV='" + empty.string() + "'");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(one_line(run.err)) << run.err;
  EXPECT_NE(run.err.find("iree-base-runtime"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("scripts/setup"), std::string::npos) << run.err;
}

TEST(GenerateCli, UnknownArchitectureIsAnError) {
  const auto scratch = scratch_dir("generate_unknown_arch");
  const auto dir = scratch / "model";
  std::filesystem::create_directories(dir);
  json config = read_json(test_data("models/tiny_llama3/config.json"));
  config["model_type"] = "gpt2";
  config["architectures"] = {"GPT2LMHeadModel"};
  std::ofstream(dir / "config.json") << config.dump();
  std::filesystem::copy_file(test_data("models/tiny_llama3/model.safetensors"),
                             dir / "model.safetensors",
                             std::filesystem::copy_options::overwrite_existing);
  const auto run = run_xlacel(scratch, {"generate", "-m", dir.string(), "-p", "Hello"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(one_line(run.err)) << run.err;
  EXPECT_NE(run.err.find("unknown architecture 'gpt2'"), std::string::npos) << run.err;
}

TEST(GenerateCli, BadSamplingOptionsAreErrors) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model);
  const auto scratch = scratch_dir("generate_bad_options");
  for (const auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{
           {"--top-p", "1.5"}, {"--min-p", "-0.1"}, {"--top-k", "-1"}, {"-n", "0"}}) {
    const auto run = run_xlacel(scratch, {"generate", "-m", model, "-p", "Hi", flag, value});
    EXPECT_EQ(run.exit_code, 1) << flag;
    EXPECT_TRUE(one_line(run.err)) << run.err;
    EXPECT_NE(run.err.find(flag), std::string::npos) << run.err;
  }
}

}  // namespace
}  // namespace xlacel
