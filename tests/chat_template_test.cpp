// The chat-template engine against jinja2 as transformers runs it (tests/data/chat/expected.json,
// written by tools/reference/chat_template.py), plus errors and hostile templates.
#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "chat/chat_template.h"
#include "common/error.h"
#include "common/json_file.h"
#include "reference_day.h"
#include "test_paths.h"

namespace xlacel {
namespace {

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string escaped(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += c;
    }
  }
  return out;
}

std::string first_difference(const std::string& expected, const std::string& actual) {
  std::size_t i = 0;
  while (i < expected.size() && i < actual.size() && expected[i] == actual[i]) ++i;
  std::size_t from = i > 60 ? i - 60 : 0;
  std::ostringstream os;
  os << "first difference at byte " << i << " (expected " << expected.size() << " bytes, got "
     << actual.size() << ")\n  expected: ..." << escaped(expected.substr(from, 140))
     << "\n  actual:   ..." << escaped(actual.substr(from, 140));
  return os.str();
}

std::string render(const std::string& source, const Json& messages = Json::array(),
                   ChatTemplateOptions options = {}) {
  return ChatTemplate(source, "test.jinja").render(messages, options);
}

// Runs f and returns the Error's message (fails the test when nothing is thrown).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no xlacel::Error thrown";
  return "";
}

TEST(ChatTemplate, MatchesTransformersReference) {
  const Json expected = read_json_file(testing::test_data("chat/expected.json").string());
  const Json conversations = read_json_file(testing::test_data("chat/conversations.json").string());
  std::map<std::string, ChatTemplate> templates;
  int matched = 0, total = 0;
  for (const Json& c : expected["cases"]) {
    const std::string name = c["template"].get<std::string>();
    if (!templates.count(name)) {
      auto path = testing::test_data("chat/templates/" + name);
      templates.emplace(name, ChatTemplate(read_text(path), path.string()));
    }
    ChatTemplateOptions options;
    options.add_generation_prompt = c["add_generation_prompt"].get<bool>();
    options.special_tokens = c["special_tokens"];
    options.extra_context = c["extra_context"];
    const Json& messages = conversations[c["conversation"].get<std::string>()];
    std::string label = name + " / " + c["conversation"].get<std::string>() +
                        " / add_generation_prompt=" + (options.add_generation_prompt ? "1" : "0") +
                        " / extra=" + c["extra_context"].dump().substr(0, 60);
    ++total;
    if (c.contains("error")) {
      try {
        std::string out = templates.at(name).render(messages, options);
        ADD_FAILURE() << label << ": expected error " << c["error"].dump() << ", rendered:\n"
                      << out;
      } catch (const Error& e) {
        std::string type = c["error"]["type"].get<std::string>();
        std::string message = c["error"]["message"].get<std::string>();
        if (type == "raise_exception") {
          EXPECT_NE(std::string(e.what()).find(message), std::string::npos)
              << label << ": " << e.what();
        }
        EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(": line "), std::string::npos) << e.what();
        ++matched;
      }
      continue;
    }
    try {
      std::string actual = templates.at(name).render(messages, options);
      if (c.contains("strftime_day")) {
        actual = testing::on_reference_day(actual, c["strftime_day"].get<std::string>());
      }
      const std::string want = c["expected"].get<std::string>();
      if (actual == want) {
        ++matched;
      } else {
        ADD_FAILURE() << label << ": " << first_difference(want, actual);
      }
    } catch (const Error& e) {
      ADD_FAILURE() << label << ": unexpected error: " << e.what();
    }
  }
  std::cout << "[ chat ] " << matched << " of " << total << " reference cases matched\n";
  EXPECT_EQ(matched, total);
  EXPECT_GT(total, 200);
}

TEST(ChatTemplate, SmolLM2TemplateFileMatchesTheModel) {
  // The checked-in template is the default model's tokenizer.chat_template.
  std::string source = read_text(testing::test_data("chat/templates/smollm2.jinja"));
  Json messages = Json::parse(R"([{"role": "user", "content": "Hi"}])");
  ChatTemplateOptions options;
  options.add_generation_prompt = true;
  EXPECT_EQ(render(source, messages, options),
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
            "Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, PassesVariablesAsTransformersDoes) {
  ChatTemplateOptions options;
  options.special_tokens = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
  options.extra_context = {{"eos_token", "<override>"}, {"custom", 3}};
  EXPECT_EQ(render("{{ bos_token }}{{ eos_token }}{{ custom }}|{{ tools }}|{{ documents is none }}"
                   "|{{ add_generation_prompt }}",
                   Json::array(), options),
            "<s><override>3|None|True|False");
  // Reasoning fields are aliased to `thinking` and `reasoning_content`.
  Json messages = Json::parse(R"([{"role": "assistant", "reasoning": "r", "content": "c"}])");
  EXPECT_EQ(render("{{ messages[0].thinking }}{{ messages[0].reasoning_content }}", messages),
            "rr");
}

TEST(ChatTemplate, StrftimeNowUsesTheCurrentTime) {
  std::time_t t = std::time(nullptr);
  std::tm local{};
  localtime_r(&t, &local);
  EXPECT_EQ(render("{{ strftime_now('%Y') }}"), std::to_string(1900 + local.tm_year));
}

TEST(ChatTemplate, SyntaxErrorsNameTheLine) {
  std::string e = error_of([] { render("line one\n{% if true %}\nunclosed"); });
  EXPECT_NE(e.find("test.jinja: line 3"), std::string::npos) << e;
  EXPECT_NE(e.find("endif"), std::string::npos) << e;
  e = error_of([] { render("a\nb\n{{ 1 + }}"); });
  EXPECT_NE(e.find("line 3"), std::string::npos) << e;
  e = error_of([] { render("{% endfor %}"); });
  EXPECT_NE(e.find("unknown tag 'endfor'"), std::string::npos) << e;
  e = error_of([] { render("{# never closed"); });
  EXPECT_NE(e.find("Missing end of comment tag"), std::string::npos) << e;
  e = error_of([] { render("{{ 'unterminated }}"); });
  EXPECT_NE(e.find("line 1"), std::string::npos) << e;
  e = error_of([] { render("{% break %}"); });
  EXPECT_NE(e.find("outside loop"), std::string::npos) << e;
  e = error_of([] { render("{{ a ]] }}"); });
  EXPECT_NE(e.find("syntax error"), std::string::npos) << e;
}

TEST(ChatTemplate, UnsupportedConstructsAreErrorsNamingThem) {
  std::string e = error_of([] { render("x\n{% include 'other.jinja' %}"); });
  EXPECT_NE(e.find("line 2: unsupported: {% include %}"), std::string::npos) << e;
  e = error_of([] { render("{% extends 'base' %}"); });
  EXPECT_NE(e.find("unsupported: {% extends %}"), std::string::npos) << e;
  e = error_of([] { render("{% for x in [1] recursive %}{% endfor %}"); });
  EXPECT_NE(e.find("recursive"), std::string::npos) << e;
  e = error_of([] { render("a\nb\n{{ 'x' | truncate(3) }}"); });
  EXPECT_NE(e.find("line 3: unsupported: filter 'truncate'"), std::string::npos) << e;
  e = error_of([] { render("{{ 'x' | no_such_filter }}"); });
  EXPECT_NE(e.find("No filter named 'no_such_filter'"), std::string::npos) << e;
  e = error_of([] { render("{{ 1 is no_such_test }}"); });
  EXPECT_NE(e.find("No test named 'no_such_test'"), std::string::npos) << e;
  e = error_of([] { render("{{ 'x'.zfill(3) }}"); });
  EXPECT_NE(e.find("unsupported: str.zfill()"), std::string::npos) << e;
  e = error_of([] { render("{{ f(*args) }}"); });
  EXPECT_NE(e.find("unsupported"), std::string::npos) << e;
  e = error_of([] { render("{{ '%s' % 1 }}"); });
  EXPECT_NE(e.find("unsupported"), std::string::npos) << e;
  // Values whose text is a memory address in Python.
  e = error_of([] { render("{{ [1] | select }}"); });
  EXPECT_NE(e.find("generator"), std::string::npos) << e;
  e = error_of([] { render("{{ raise_exception }}"); });
  EXPECT_NE(e.find("function"), std::string::npos) << e;
}

TEST(ChatTemplate, RuntimeErrorsNameTheLine) {
  std::string e = error_of([] { render("ok\n{{ raise_exception('boom: ' ~ 42) }}"); });
  EXPECT_NE(e.find("test.jinja: line 2:"), std::string::npos) << e;
  EXPECT_NE(e.find("boom: 42"), std::string::npos) << e;
  e = error_of([] { render("\n\n{{ undefined_thing.attr }}"); });
  EXPECT_NE(e.find("line 3: 'undefined_thing' is undefined"), std::string::npos) << e;
  e = error_of([] { render("{% set x = [] %}{{ x.append(1) }}"); });
  EXPECT_NE(e.find("unsafe"), std::string::npos) << e;
  e = error_of([] { render("{{ 1 // 0 }}"); });
  EXPECT_NE(e.find("zero"), std::string::npos) << e;
  e = error_of([] { render("{{ 9223372036854775807 + 1 }}"); });
  EXPECT_NE(e.find("overflow"), std::string::npos) << e;
}

class HostileTemplates : public ::testing::Test {
 protected:
  void expect_quick_error(const std::string& source, const std::string& fragment) {
    auto start = std::chrono::steady_clock::now();
    std::string e = error_of([&] { render(source); });
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_NE(e.find(fragment), std::string::npos) << e;
#if defined(__SANITIZE_ADDRESS__)
    const double limit = 60.0;  // sanitizer builds run several times slower
#else
    const double limit = 5.0;
#endif
    EXPECT_LT(seconds, limit) << source.substr(0, 80);
  }
};

TEST_F(HostileTemplates, DeepNesting) {
  expect_quick_error("{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}",
                     "nested too deeply");
  expect_quick_error("{{ " + std::string(100000, '[') + std::string(100000, ']') + " }}",
                     "nested too deeply");
  std::string ifs;
  for (int i = 0; i < 5000; ++i) ifs += "{% if true %}";
  expect_quick_error(ifs, "nested too deeply");
  expect_quick_error("{{ " + std::string(50000, '-') + "1 }}", "nested too deeply");
  expect_quick_error("{{ x" + std::string(100000, '|').replace(0, 0, "") + " }}", "syntax error");
}

TEST_F(HostileTemplates, Recursion) {
  expect_quick_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "call depth");
  expect_quick_error("{% macro f() %}{{ f() ~ f() }}{% endmacro %}{{ f() }}", "call depth");
}

TEST_F(HostileTemplates, HugeLoopsAndOutput) {
  expect_quick_error(
      "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
      "too many loop iterations");
  expect_quick_error("{{ range(1000000000) | list | length }}", "Range too big");
  expect_quick_error("{{ 'x' * 1000000000 }}", "too large");
  expect_quick_error(
      "{% set s = 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' * 100000 %}"
      "{% for i in range(100000) %}{{ s }}{% endfor %}",
      "output too large");
  expect_quick_error(
      "{% set ns = namespace(s='x') %}{% for i in range(64) %}"
      "{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
      "too large");
  expect_quick_error("{{ [1] * 100000000 }}", "too large");
  expect_quick_error("{{ 2 ** 100 }}", "overflow");
}

}  // namespace
}  // namespace xlacel

namespace xlacel {
namespace {

TEST_F(HostileTemplates, DeepValuesAndCycles) {
  expect_quick_error(
      "{% set ns = namespace(x=[]) %}{% for i in range(100000) %}"
      "{% set ns.x = [ns.x] %}{% endfor %}",
      "nested too deeply");
  expect_quick_error("{% set ns = namespace() %}{% set ns.self = ns %}{{ ns }}",
                     "nested too deeply");
  expect_quick_error("{{ 'a\\nb' | indent(1000000000) }}", "too large");
}

TEST(ChatTemplate, DeeplyNestedInputIsAnError) {
  Json deep = "x";
  for (int i = 0; i < 2000; ++i) deep = Json::array({deep});
  Json messages = Json::array({Json{{"role", "user"}, {"content", deep}}});
  std::string e = error_of([&] { render("{{ messages }}", messages); });
  EXPECT_NE(e.find("nested too deeply"), std::string::npos) << e;
}

}  // namespace
}  // namespace xlacel
