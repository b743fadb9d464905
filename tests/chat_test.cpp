// `xlacel chat` as a user runs it, turns piped through stdin: every turn's prompt and greedy
// reply must equal what `xlacel generate` gives for the same conversation (the messages so far,
// the replies chat printed included) rendered through the chat template, with and without
// prefix reuse; /reset starts over, /exit ends; bad flags are one line and exit 1. Needs the
// default model and the project venv; skips without them.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "models/test_support.h"
#include "run_xlacel.h"
#include "test_paths.h"

namespace xlacel {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// The same context for chat and generate, so both run the same graphs.
const std::vector<std::string> kShape = {"--context", "1024", "--max-tokens", "24"};

fs::path test_scratch() {
  return testing::scratch_dir(std::string("chat/") +
                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
}

// `xlacel chat ARGS...` with `input` on stdin.
testing::ProgramRun run_chat(const std::string& input, const std::vector<std::string>& args) {
  const fs::path scratch = test_scratch();
  const fs::path stdin_path = scratch / "stdin.txt";
  testing::write_text(stdin_path, input);
  std::vector<std::string> command = {"chat"};
  command.insert(command.end(), args.begin(), args.end());
  return testing::run_xlacel(scratch, command, "", stdin_path);
}

std::vector<json> json_lines(const std::string& text) {
  std::vector<json> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
  return lines;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST(ChatCli, EveryTurnEqualsGenerateOnTheConversationSoFar) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model);
  XLACEL_REQUIRE_IREE_PYTHON();
  const std::string input =
      "What is the capital of France?\nAnd of Germany?\n/reset\n\nName a primary color.\n"
      "/exit\nThis line is never read.\n";
  const auto chat = run_chat(input, with({"-m", model, "--output-format", "json"}, kShape));
  ASSERT_EQ(chat.exit_code, 0) << chat.err;
  const std::vector<json> turns = json_lines(chat.out);
  ASSERT_EQ(turns.size(), 3u) << chat.out;

  // The conversation each turn saw: /reset forgot the first two.
  const json user1 = {{"role", "user"}, {"content", "What is the capital of France?"}};
  const json reply1 = {{"role", "assistant"}, {"content", turns[0]["text"]}};
  const json user2 = {{"role", "user"}, {"content", "And of Germany?"}};
  const json user3 = {{"role", "user"}, {"content", "Name a primary color."}};
  const std::vector<json> conversations = {
      json::array({user1}), json::array({user1, reply1, user2}), json::array({user3})};
  const fs::path scratch = test_scratch();
  for (std::size_t i = 0; i < turns.size(); ++i) {
    const fs::path messages = scratch / ("turn" + std::to_string(i) + ".json");
    testing::write_text(messages, conversations[i].dump());
    const auto generate =
        testing::run_xlacel(scratch, {"generate", "-m", model, "--messages", messages.string(),
                                      "-n", "24", "--context", "1024", "--output-format", "json"});
    ASSERT_EQ(generate.exit_code, 0) << generate.err;
    const json want = json::parse(generate.out);
    EXPECT_EQ(turns[i]["prompt_ids"], want["prompt_ids"]) << "turn " << i + 1;
    EXPECT_EQ(turns[i]["output_ids"], want["output_ids"]) << "turn " << i + 1;
    EXPECT_EQ(turns[i]["text"], want["text"]) << "turn " << i + 1;
    EXPECT_FALSE(turns[i]["text"].get<std::string>().empty()) << "turn " << i + 1;
  }
  // The second turn reused the first turn's prompt (and reply); after /reset, only the system
  // message and the start of the user turn are shared.
  const auto cached = [&](std::size_t i) {
    return turns[i]["timings"]["cached_tokens"].get<int64_t>();
  };
  const auto prompt_size = [&](std::size_t i) {
    return static_cast<int64_t>(turns[i]["prompt_ids"].size());
  };
  EXPECT_EQ(cached(0), 0);
  EXPECT_GE(cached(1), prompt_size(0));
  EXPECT_GT(cached(2), 0);
  EXPECT_LT(cached(2), prompt_size(2));

  // Without reuse: the same tokens, nothing cached.
  const auto full =
      run_chat(input, with({"-m", model, "--output-format", "json", "--no-prefix-reuse"}, kShape));
  ASSERT_EQ(full.exit_code, 0) << full.err;
  const std::vector<json> full_turns = json_lines(full.out);
  ASSERT_EQ(full_turns.size(), 3u);
  for (std::size_t i = 0; i < turns.size(); ++i) {
    EXPECT_EQ(full_turns[i]["output_ids"], turns[i]["output_ids"]) << "turn " << i + 1;
    EXPECT_EQ(full_turns[i]["timings"]["cached_tokens"], 0) << "turn " << i + 1;
  }

  // Text: the replies streamed one after the other, a stats line per turn on stderr.
  const auto text = run_chat(input, with({"-m", model}, kShape));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  std::string want;
  for (const json& turn : turns) want += turn["text"].get<std::string>() + "\n";
  EXPECT_EQ(text.out, want);
  EXPECT_EQ(count(text.err, "time to first token"), 3u) << text.err;
  EXPECT_EQ(count(text.err, " cached), "), 2u) << text.err;
}

TEST(ChatCli, ATurnThatDoesNotFitIsDroppedAndTheChatGoesOn) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model);
  XLACEL_REQUIRE_IREE_PYTHON();
  std::string long_line;
  for (int i = 0; i < 300; ++i) long_line += "word" + std::to_string(i) + " ";
  const auto chat =
      run_chat(long_line + "\nWhat is the capital of France?\n",
               {"-m", model, "--context", "512", "--max-tokens", "8", "--output-format", "json"});
  ASSERT_EQ(chat.exit_code, 0) << chat.err;
  EXPECT_NE(chat.err.find("do not fit the context of 512 positions"), std::string::npos)
      << chat.err;
  const std::vector<json> turns = json_lines(chat.out);
  ASSERT_EQ(turns.size(), 1u) << chat.out;
  EXPECT_EQ(turns[0]["turn"], 1);
  EXPECT_FALSE(turns[0]["output_ids"].empty());
}

// --json-schema holds for every turn: each reply is JSON that the schema admits, and the first
// equals `generate --json-schema` on the same message. A schema file that cannot be used is one
// line naming it and exit status 1.
TEST(ChatCli, JsonSchemaConstrainsEveryTurn) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model);
  XLACEL_REQUIRE_IREE_PYTHON();
  const fs::path scratch = test_scratch();
  const fs::path schema = scratch / "capital.json";
  testing::write_text(schema, R"({"type": "object", "properties": {
    "city": {"type": "string", "maxLength": 30},
    "country": {"enum": ["France", "Germany", "Japan"]}},
    "required": ["city", "country"], "additionalProperties": false})");
  const std::vector<std::string> shape = {"--context", "1024", "-n", "64"};
  const auto chat = run_chat(
      "What is the capital of France? Answer in JSON.\nAnd of Japan?\n",
      with({"-m", model, "--json-schema", schema.string(), "--output-format", "json"}, shape));
  ASSERT_EQ(chat.exit_code, 0) << chat.err;
  const std::vector<json> turns = json_lines(chat.out);
  ASSERT_EQ(turns.size(), 2u) << chat.out;
  for (const json& turn : turns) {
    EXPECT_EQ(turn["stop"], "eos") << turn.dump();
    const json reply = json::parse(turn["text"].get<std::string>(), nullptr, false);
    ASSERT_TRUE(reply.is_object()) << turn["text"];
    EXPECT_EQ(reply.size(), 2u) << reply.dump();
    ASSERT_TRUE(reply.contains("city") && reply["city"].is_string()) << reply.dump();
    EXPECT_LE(reply["city"].get<std::string>().size(), 30u);
    const json countries = {"France", "Germany", "Japan"};
    EXPECT_NE(std::find(countries.begin(), countries.end(), reply["country"]), countries.end())
        << reply.dump();
  }

  const fs::path messages = scratch / "turn0.json";
  testing::write_text(messages,
                      json::array({{{"role", "user"},
                                    {"content", "What is the capital of France? Answer in JSON."}}})
                          .dump());
  const auto generate = testing::run_xlacel(
      scratch, with({"generate", "-m", model, "--messages", messages.string(), "--json-schema",
                     schema.string(), "--output-format", "json"},
                    shape));
  ASSERT_EQ(generate.exit_code, 0) << generate.err;
  EXPECT_EQ(turns[0]["output_ids"], json::parse(generate.out)["output_ids"]);

  const fs::path unsupported = scratch / "unique.json";
  testing::write_text(unsupported, R"({"type": "array", "uniqueItems": true})");
  const fs::path missing = scratch / "missing.json";
  const fs::path not_json = scratch / "broken.json";
  testing::write_text(not_json, "{\"type\": ");
  const std::vector<std::pair<fs::path, std::string>> cases = {
      {unsupported,
       "the keyword 'uniqueItems' at the root is not supported by constrained "
       "decoding"},
      {missing, "cannot open"},
      {not_json, "invalid JSON: "}};
  for (const auto& [path, message] : cases) {
    const auto bad = run_chat("Hello\n", {"-m", model, "--json-schema", path.string()});
    EXPECT_EQ(bad.exit_code, 1) << path;
    EXPECT_EQ(bad.out, "") << path;
    // The model loads first (its progress lines), then the one error line.
    const std::string line = "xlacel: " + path.string() + ": " + message;
    const std::size_t last = bad.err.rfind('\n', bad.err.size() - 2) + 1;
    EXPECT_EQ(bad.err.substr(last, line.size()), line) << bad.err;
    EXPECT_EQ(count(bad.err, "xlacel: "), 1u) << bad.err;
  }
}

// Every bad flag: exit status 1 and one line on stderr naming it.
TEST(ChatCli, BadFlagsAreOneLineAndExitOne) {
  XLACEL_REQUIRE_DEFAULT_MODEL(model);
  const std::string tiny = testing::test_data("models/tiny_llama3").string();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--max-tokens", "0"}, "xlacel: --max-tokens: must be positive, got 0\n"},
      {{"--top-p", "2"}, "xlacel: --top-p must be in (0, 1], got 2\n"},
      {{"--output-format", "yaml"},
       "xlacel: --output-format: unknown format 'yaml' (text, json)\n"},
      {{"--backend", "nope"}, "xlacel: --backend: unknown backend 'nope' (known: iree, xla)\n"},
      {{"-m", tiny}, "xlacel: " + tiny + ": no tokenizer.json in the model directory\n"}};
  for (const auto& [flags, message] : cases) {
    const auto chat = run_chat("Hello\n", flags);
    EXPECT_EQ(chat.exit_code, 1) << flags[0];
    EXPECT_EQ(chat.err, message) << flags[0];
    EXPECT_EQ(chat.out, "") << flags[0];
  }
}

}  // namespace
}  // namespace xlacel
