// Tool calling: the family chosen from each chat template, the parser on recorded replies of
// every family (whole, and streamed in every cut: the same content and calls), the request's
// tools / tool_choice / messages checked field by field, the conversation rendered through
// the server's path against jinja2 as transformers runs it (tests/data/chat/expected.json), and
// the SSE chunks of calls reassembled as OpenAI's client does; and reasoning models' thinking
// split from their answers.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "chat/chat_template.h"
#include "chat/reasoning_parser.h"
#include "chat/tool_call_format.h"
#include "chat/tool_call_parser.h"
#include "common/error.h"
#include "common/json_file.h"
#include "grammar/grammar_compiler.h"
#include "grammar/grammar_matcher.h"
#include "reference_day.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/sse_writer.h"
#include "server/tool_calls.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace xlacel {
namespace {

using testing::test_data;

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string template_source(const std::string& name) {
  const auto path = test_data("chat/templates/" + name);
  if (std::filesystem::exists(path)) return read_text(path);
  return read_text(std::filesystem::path(XLACEL_SOURCE_DIR) / "tools/reference/family_templates" /
                   name);
}

// The syntax a recorded reply is in: its template's (a file, or inline as template_source).
ToolCallSyntax syntax_of(const Json& c) {
  return tool_call_syntax(c.contains("template_source") ? c["template_source"].get<std::string>()
                                                        : template_source(c["template"]));
}

const Json& replies() {
  static const Json cases = read_json_file(test_data("chat/tool_call_replies.json").string());
  return cases["cases"];
}

struct Parsed {
  std::string content;
  std::vector<ToolCall> calls;
};

// Feeds `pieces` in order, then finishes; content and calls joined.
Parsed parse_pieces(const ToolCallSyntax& syntax, const std::vector<std::string>& pieces,
                    bool parallel = true) {
  ToolCallParser parser(syntax, parallel);
  Parsed out;
  const auto take = [&](ToolCallUpdate update) {
    out.content += update.content;
    for (ToolCall& call : update.calls) out.calls.push_back(std::move(call));
  };
  for (const std::string& piece : pieces) take(parser.feed(piece));
  take(parser.finish());
  return out;
}

// The code points of `text` (the server feeds text cut at character boundaries).
std::vector<std::string> characters(const std::string& text) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t n = 1;
    while (i + n < text.size() && (static_cast<unsigned char>(text[i + n]) & 0xC0) == 0x80) ++n;
    out.push_back(text.substr(i, n));
    i += n;
  }
  return out;
}

std::vector<ToolCall> expected_calls(const Json& c) {
  std::vector<ToolCall> calls;
  for (const Json& call : c["calls"]) calls.push_back({call["name"], call["arguments"]});
  return calls;
}

TEST(ToolCallFormat, FamilyFromTemplate) {
  for (const Json& c : replies()) {
    const ToolCallSyntax syntax = syntax_of(c);
    EXPECT_EQ(tool_call_family_name(syntax.family), c["family"].get<std::string>()) << c["name"];
  }
  EXPECT_TRUE(tool_call_syntax(template_source("qwen3.jinja")).template_renders_tools);
  EXPECT_FALSE(tool_call_syntax(template_source("smollm2.jinja")).template_renders_tools);
  EXPECT_FALSE(tool_call_syntax(template_source("mixtral.jinja")).template_renders_tools);
  EXPECT_FALSE(tool_call_syntax(template_source("mixtral.jinja")).template_mentions_system);
  EXPECT_FALSE(tool_call_syntax("").template_renders_tools);
}

TEST(ToolCallParser, RecordedRepliesWhole) {
  for (const Json& c : replies()) {
    const ToolCallSyntax syntax = syntax_of(c);
    const Parsed parsed = parse_pieces(syntax, {c["reply"].get<std::string>()});
    EXPECT_EQ(parsed.content, c["content"].get<std::string>()) << c["name"];
    EXPECT_EQ(parsed.calls, expected_calls(c)) << c["name"];
    for (const ToolCall& call : parsed.calls) {
      EXPECT_TRUE(Json::parse(call.arguments).is_object()) << c["name"];
    }
  }
}

TEST(ToolCallParser, StreamedInEveryCutEqualsWhole) {
  for (const Json& c : replies()) {
    const ToolCallSyntax syntax = syntax_of(c);
    const std::vector<std::string> chars = characters(c["reply"]);
    const Parsed whole = parse_pieces(syntax, {c["reply"].get<std::string>()});
    const Parsed one_by_one = parse_pieces(syntax, chars);
    EXPECT_EQ(one_by_one.content, whole.content) << c["name"];
    EXPECT_EQ(one_by_one.calls, whole.calls) << c["name"];
    for (std::size_t cut = 1; cut < chars.size(); ++cut) {
      std::string head, tail;
      for (std::size_t i = 0; i < chars.size(); ++i) (i < cut ? head : tail) += chars[i];
      const Parsed two = parse_pieces(syntax, {head, tail});
      ASSERT_EQ(two.content, whole.content) << c["name"] << " cut at " << cut;
      ASSERT_EQ(two.calls, whole.calls) << c["name"] << " cut at " << cut;
    }
  }
}

TEST(ToolCallParser, WithholdsOnlyWhatMayStartACall) {
  const ToolCallSyntax hermes = tool_call_syntax(template_source("qwen3.jinja"));
  ToolCallParser parser(hermes);
  EXPECT_EQ(parser.feed("Checking the <b>").content, "Checking the <b>");
  EXPECT_EQ(parser.feed(" weather <tool").content, " weather");  // " <tool" may open a call
  EXPECT_EQ(parser.feed("s> now").content, " <tools> now");
  EXPECT_EQ(parser.feed("\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}").content, "");
  ToolCallUpdate update = parser.feed("}\n</tool_call>");
  ASSERT_EQ(update.calls.size(), 1u);
  EXPECT_EQ(update.calls[0], (ToolCall{"a", "{}"}));
  EXPECT_EQ(parser.finish().content, "");

  // Bare JSON: a reply opening with '{' waits until the object is complete.
  const ToolCallSyntax llama = tool_call_syntax(template_source("llama-3.2-instruct.jinja"));
  ToolCallParser bare(llama);
  EXPECT_EQ(bare.feed("  {\"name\": \"add\", ").content, "");
  update = bare.feed("\"parameters\": {\"a\": 1}}");
  ASSERT_EQ(update.calls.size(), 1u);
  EXPECT_EQ(update.calls[0].arguments, "{\"a\": 1}");
  ToolCallParser text(llama);
  EXPECT_EQ(text.feed("Hello {").content, "Hello {");
}

TEST(ToolCallParser, ParallelFalseKeepsTheFirstCall) {
  const Json& c = replies()[1];  // qwen_text_then_two_calls
  const ToolCallSyntax syntax = syntax_of(c);
  const Parsed parsed = parse_pieces(syntax, {c["reply"].get<std::string>()}, false);
  ASSERT_EQ(parsed.calls.size(), 1u);
  EXPECT_EQ(parsed.calls[0].name, "get_weather");
}

TEST(ToolCallFormat, StructuralTagCarriesEachToolsSchema) {
  const Json tools = read_json_file(test_data("chat/tools.json").string());
  const OrderedJson ordered_tools = OrderedJson::parse(read_text(test_data("chat/tools.json")));
  const ToolCallSyntax hermes = tool_call_syntax(template_source("qwen3.jinja"));
  Json tag = tool_call_structural_tag(hermes, ordered_tools, true, "", true);
  EXPECT_EQ(tag["type"], "structural_tag");
  // Required: calls only, a newline between them.
  EXPECT_EQ(tag["format"]["type"], "tags_with_separator");
  EXPECT_EQ(tag["format"]["separator"], "\n");
  EXPECT_EQ(tag["format"]["at_least_one"], true);
  ASSERT_EQ(tag["format"]["tags"].size(), 2u);
  const Json& first = tag["format"]["tags"][0];
  EXPECT_EQ(first["begin"], "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": ");
  EXPECT_EQ(first["end"], "}\n</tool_call>");
  EXPECT_EQ(first["content"]["json_schema"], tools[0]["function"]["parameters"]);

  // Named: only that tool; parallel false: one call.
  tag = tool_call_structural_tag(hermes, ordered_tools, true, "add", false);
  ASSERT_EQ(tag["format"]["tags"].size(), 1u);
  EXPECT_EQ(tag["format"]["stop_after_first"], true);

  // Mistral: a list after the marker; Llama 3: bare objects with "parameters".
  const ToolCallSyntax mistral =
      tool_call_syntax(template_source("mistral-7b-instruct-v0.3.jinja"));
  tag = tool_call_structural_tag(mistral, ordered_tools, true, "", true);
  EXPECT_EQ(tag["format"]["type"], "sequence");
  EXPECT_EQ(tag["format"]["elements"][0]["value"], "[TOOL_CALLS] [");
  EXPECT_EQ(tag["format"]["elements"][1]["separator"], ", ");
  const ToolCallSyntax mistral_args = tool_call_syntax("{{ tools }}[TOOL_CALLS]{{ n }}[ARGS]");
  tag = tool_call_structural_tag(mistral_args, ordered_tools, true, "add", true);
  EXPECT_EQ(tag["format"]["tags"][0]["begin"], "[TOOL_CALLS]add[ARGS]");
  EXPECT_EQ(tag["format"]["tags"][0]["end"], "");
  const ToolCallSyntax llama = tool_call_syntax(template_source("llama-3.2-instruct.jinja"));
  tag = tool_call_structural_tag(llama, ordered_tools, false, "", true);
  EXPECT_EQ(tag["format"]["type"], "triggered_tags");
  EXPECT_EQ(tag["format"]["tags"][0]["begin"], "{\"name\": \"get_weather\", \"parameters\": ");
}

// The tiny Qwen 3 vocabulary, a grammar compiler over it and the test tools: what the grammar
// tests share.
class ToolCallGrammar : public ::testing::Test {
 protected:
  static std::unique_ptr<Tokenizer> qwen3_tokenizer() {
    return Tokenizer::from_tokenizer_json((test_data("models/qwen3") / "tokenizer.json").string());
  }
  static int64_t qwen3_vocab_size() {
    return read_json_file((test_data("models/qwen3") / "config.json").string())["vocab_size"];
  }

  const std::unique_ptr<Tokenizer> tokenizer = qwen3_tokenizer();
  const std::vector<int32_t> eos = {*tokenizer->eos_token_id()};
  grammar::GrammarCompiler compiler{*tokenizer, qwen3_vocab_size(), eos};
  const OrderedJson tools = OrderedJson::parse(read_text(test_data("chat/tools.json")));
};

// Each family's structural tag compiles with xgrammar (over the tiny Qwen 3 vocabulary), admits
// a call written in that family's syntax, refuses text where a call must come, and the parser
// finds the call in what it admitted.
TEST_F(ToolCallGrammar, EachFamilysRequiredCallIsAdmittedAndParsed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {template_source("qwen3.jinja"),
       "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>"},
      {template_source("mistral-7b-instruct-v0.3.jinja"),
       "[TOOL_CALLS] [{\"name\": \"add\", \"arguments\": {\"a\": 1}}]"},
      {"{{ tools }}[TOOL_CALLS]{{ name }}[ARGS]", "[TOOL_CALLS]add[ARGS]{\"a\": 1}"},
      {template_source("granite.jinja"),
       "<|tool_call|>[{\"name\": \"add\", \"arguments\": {\"a\": -1.5}}]"},
      {template_source("llama-3.2-instruct.jinja"),
       "{\"name\": \"add\", \"parameters\": {\"a\": 1}}"},
      {template_source("smollm2.jinja"), "{\"name\": \"add\", \"arguments\": {\"a\": 1}}"},
  };
  for (const auto& [source, call] : cases) {
    const ToolCallSyntax syntax = tool_call_syntax(source);
    const std::string family = tool_call_family_name(syntax.family);
    const std::string tag = tool_call_structural_tag(syntax, tools, true, "add", true).dump();
    grammar::GrammarMatcher matcher(compiler.structural_tag(tag, "tools"), eos);
    EXPECT_FALSE(matcher.allows(tokenizer->encode("Hello", false).front())) << family;
    for (int32_t id : tokenizer->encode(call, false)) {
      ASSERT_TRUE(matcher.accept(id)) << family << ": refused at token " << id << " of " << call;
    }
    EXPECT_TRUE(matcher.allows(eos[0])) << family << ": not complete after " << call;
    // Calls only: no text after them.
    EXPECT_FALSE(matcher.allows(tokenizer->encode("Hello", false).front())) << family;
    const Parsed parsed = parse_pieces(syntax, {call});
    ASSERT_EQ(parsed.calls.size(), 1u) << family;
    EXPECT_EQ(parsed.calls[0].name, "add") << family;
    EXPECT_EQ(parsed.content, "") << family;
  }
}

// tool_choice "auto": text, or a call once its marker (bare JSON: '{"name": ') starts one; the
// reply may end anywhere outside a call.
TEST_F(ToolCallGrammar, AutoAdmitsTextThenConstrainsACallOnceItStarts) {
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {template_source("qwen3.jinja"), "Let me check. ",
       "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1}}\n</tool_call>"},
      {template_source("llama-3.2-instruct.jinja"), "",
       "{\"name\": \"add\", \"parameters\": {\"a\": 1}}"},
      {template_source("smollm2.jinja"), "", "{\"name\": \"add\", \"arguments\": {\"a\": 1}}"},
  };
  const auto walk = [&](grammar::GrammarMatcher& matcher, const std::string& text) {
    for (int32_t id : tokenizer->encode(text, false)) {
      if (!matcher.accept(id)) return false;
    }
    return true;
  };
  for (const auto& [source, text, call] : cases) {
    const ToolCallSyntax syntax = tool_call_syntax(source);
    const std::string family = tool_call_family_name(syntax.family);
    const std::string tag = tool_call_structural_tag(syntax, tools, false, "", true).dump();
    const auto compiled = compiler.structural_tag(tag, "tools");
    grammar::GrammarMatcher free_text(compiled, eos);
    EXPECT_TRUE(free_text.allows(eos[0])) << family;
    EXPECT_TRUE(walk(free_text, "It is sunny {or not}.")) << family;
    EXPECT_TRUE(free_text.allows(eos[0])) << family;
    grammar::GrammarMatcher calling(compiled, eos);
    EXPECT_TRUE(walk(calling, text + call)) << family;
    EXPECT_TRUE(calling.allows(eos[0])) << family;
    grammar::GrammarMatcher unknown(compiled, eos);
    const std::string start =
        syntax.start.empty() ? "{\"name\": \"nope" : syntax.start + "\n{\"name\": \"nope";
    EXPECT_FALSE(walk(unknown, text + start)) << family << ": a call to an unknown tool";
  }
}

// --- the request ----------------------------------------------------------------------------

Json chat_body(Json extra) {
  Json body = {{"model", "m"}, {"messages", Json::array({{{"role", "user"}, {"content", "hi"}}})}};
  for (auto& [key, value] : extra.items()) body[key] = value;
  return body;
}

// The param of the 400 that parsing `body` raises ("" when it is accepted).
std::string refused_param(const Json& body, server::Endpoint endpoint = server::Endpoint::kChat) {
  try {
    server::parse_generation_request(endpoint, body, 0);
  } catch (const server::ApiError& e) {
    EXPECT_EQ(e.status, 400);
    return e.param.empty() ? "<none>" : e.param;
  }
  return "";
}

TEST(ToolRequest, MalformedValuesNameTheirField) {
  const Json tools = read_json_file(test_data("chat/tools.json").string());
  const Json weather = tools[0];
  const std::vector<std::pair<Json, std::string>> cases = {
      {{{"tools", "get_weather"}}, "tools"},
      {{{"tools", Json::array({42})}}, "tools[0]"},
      {{{"tools", Json::array({{{"type", "retrieval"}}})}}, "tools[0].type"},
      {{{"tools", Json::array({{{"type", "function"}}})}}, "tools[0].function"},
      {{{"tools", Json::array({{{"type", "function"}, {"function", {{"description", "x"}}}}})}},
       "tools[0].function.name"},
      {{{"tools", Json::array({{{"type", "function"}, {"function", {{"name", "get weather"}}}}})}},
       "tools[0].function.name"},
      {{{"tools", Json::array({{{"type", "function"},
                                {"function", {{"name", "f"}, {"parameters", "object"}}}}})}},
       "tools[0].function.parameters"},
      {{{"tools",
         Json::array({{{"type", "function"}, {"function", {{"name", "f"}, {"description", 1}}}}})}},
       "tools[0].function.description"},
      {{{"tools", Json::array({weather, weather})}}, "tools[1].function.name"},
      {{{"tools", tools}, {"tool_choice", "sometimes"}}, "tool_choice"},
      {{{"tools", tools}, {"tool_choice", 1}}, "tool_choice"},
      {{{"tools", tools}, {"tool_choice", {{"type", "function"}}}}, "tool_choice.function"},
      {{{"tools", tools},
        {"tool_choice", {{"type", "function"}, {"function", {{"name", "nope"}}}}}},
       "tool_choice.function.name"},
      {{{"tools", tools}, {"tool_choice", {{"type", "code"}}}}, "tool_choice.type"},
      {{{"tool_choice", "required"}}, "tool_choice"},
      {{{"tools", tools}, {"parallel_tool_calls", "yes"}}, "parallel_tool_calls"},
      {{{"messages", Json::array({{{"role", "tool"}, {"content", "22 C"}}})}},
       "messages[0].tool_call_id"},
      {{{"messages", Json::array({{{"role", "assistant"}, {"tool_calls", "get_weather"}}})}},
       "messages[0].tool_calls"},
      {{{"messages",
         Json::array(
             {{{"role", "assistant"},
               {"tool_calls",
                Json::array({{{"id", "a"},
                              {"type", "function"},
                              {"function", {{"name", "f"}, {"arguments", {{"a", 1}}}}}}})}}})}},
       "messages[0].tool_calls[0].function.arguments"},
      {{{"messages", Json::array({{{"role", "function"}, {"content", "x"}}})}}, "messages[0].role"},
  };
  for (const auto& [extra, param] : cases) {
    EXPECT_EQ(refused_param(chat_body(extra)), param) << extra.dump();
  }
  EXPECT_EQ(refused_param({{"model", "m"}, {"prompt", "x"}, {"tools", tools}},
                          server::Endpoint::kCompletion),
            "tools");
  // Accepted: each tool_choice form, tools without parameters, none without tools.
  for (const Json& choice : {Json("auto"), Json("none"), Json("required"),
                             Json{{"type", "function"}, {"function", {{"name", "add"}}}}}) {
    EXPECT_EQ(refused_param(chat_body({{"tools", tools}, {"tool_choice", choice}})), "")
        << choice.dump();
  }
  EXPECT_EQ(
      refused_param(chat_body(
          {{"tools", Json::array({{{"type", "function"}, {"function", {{"name", "now"}}}}})}})),
      "");
  EXPECT_EQ(refused_param(chat_body({{"tool_choice", "none"}})), "");
  const auto request = server::parse_generation_request(
      server::Endpoint::kChat,
      chat_body({{"tools", tools},
                 {"tool_choice", {{"type", "function"}, {"function", {{"name", "add"}}}}},
                 {"parallel_tool_calls", false}}),
      0);
  EXPECT_EQ(request.tools.choice, server::ToolChoice::kNamed);
  EXPECT_EQ(request.tools.named, "add");
  EXPECT_FALSE(request.tools.parallel);
  EXPECT_TRUE(request.tools.active());
}

// A conversation of tests/data/chat/conversations.json as OpenAI's API carries it: arguments
// as a string of JSON.
Json wire_conversation(const std::string& name = "tool_calls") {
  Json messages = read_json_file(test_data("chat/conversations.json").string())[name];
  for (Json& message : messages) {
    if (!message.contains("tool_calls")) continue;
    for (Json& call : message["tool_calls"]) {
      call["function"]["arguments"] = call["function"]["arguments"].dump();
    }
  }
  return messages;
}

TEST(ToolRequest, RendersAsTransformersThroughTheServersPath) {
  const Json tools = read_json_file(test_data("chat/tools.json").string());
  const Json expected = read_json_file(test_data("chat/expected.json").string())["cases"];
  int compared = 0;
  for (const Json& c : expected) {
    const std::string conversation = c["conversation"];
    if ((conversation != "tool_calls" && conversation != "parallel_tool_calls") ||
        !c["extra_context"].contains("tools")) {
      continue;
    }
    const std::string name = c["template"];
    if (name.starts_with("synthetic")) continue;
    const auto request = server::parse_generation_request(
        server::Endpoint::kChat,
        {{"model", "m"}, {"messages", wire_conversation(conversation)}, {"tools", tools}}, 0);
    const std::string source = template_source(name);
    server::ToolPrompt prompt =
        server::tool_prompt(tool_call_syntax(source), request.tools, request.messages);
    ChatTemplateOptions options;
    options.add_generation_prompt = c["add_generation_prompt"];
    options.special_tokens = c["special_tokens"];
    options.extra_context = c["extra_context"];
    options.extra_context["tools"] = prompt.extra_context.at("tools");
    const ChatTemplate chat_template(source, name);
    if (c.contains("error")) {  // Llama 3.2 refuses parallel calls, as in jinja2
      try {
        chat_template.render(prompt.messages, options);
        ADD_FAILURE() << name << " " << conversation << " rendered; jinja2 raised";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(c["error"]["message"].get<std::string>()),
                  std::string::npos)
            << e.what();
      }
    } else {
      std::string rendered = chat_template.render(prompt.messages, options);
      if (c.contains("strftime_day")) {
        rendered = testing::on_reference_day(rendered, c["strftime_day"].get<std::string>());
      }
      EXPECT_EQ(rendered, c["expected"].get<std::string>())
          << name << " " << conversation << " " << c["extra_context"].dump();
    }
    ++compared;
  }
  // Llama 3.2 (two variants), Qwen 2.5, Qwen 3, Mistral, gpt-oss; two conversations; with and
  // without the generation prompt.
  EXPECT_EQ(compared, 24);
}

TEST(ToolRequest, GenericFallbackDescribesToolsAndWritesPastCallsAsText) {
  const Json tools = read_json_file(test_data("chat/tools.json").string());
  const auto request = server::parse_generation_request(server::Endpoint::kChat,
                                                        {{"model", "m"},
                                                         {"messages", wire_conversation()},
                                                         {"tools", tools},
                                                         {"tool_choice", "required"}},
                                                        0);
  const std::string source = template_source("smollm2.jinja");
  const server::ToolPrompt prompt =
      server::tool_prompt(tool_call_syntax(source), request.tools, request.messages);
  EXPECT_TRUE(prompt.extra_context.empty());
  ASSERT_EQ(prompt.messages[0]["role"], "system");
  const std::string system = prompt.messages[0]["content"];
  EXPECT_NE(system.find("\"name\":\"get_weather\""), std::string::npos) << system;
  EXPECT_NE(system.find("You must call one of the tools"), std::string::npos) << system;
  EXPECT_EQ(
      prompt.messages[2]["content"],
      "{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\",\"unit\":\"celsius\"}}");
  EXPECT_EQ(prompt.messages[3]["role"], "user");
  EXPECT_NE(prompt.messages[3]["content"].get<std::string>().find("call12345"), std::string::npos);
  for (const Json& message : prompt.messages) EXPECT_FALSE(message.contains("tool_calls"));

  // A template without a system role gets the tools at the start of the first user turn.
  const server::ToolPrompt mixtral = server::tool_prompt(
      tool_call_syntax(template_source("mixtral.jinja")), request.tools, request.messages);
  EXPECT_EQ(mixtral.messages[0]["role"], "user");
  EXPECT_TRUE(mixtral.messages[0]["content"].get<std::string>().starts_with("You can call"));
}

TEST(ToolRequest, GraniteTemplateGetsItsOwnRoles) {
  const Json tools = read_json_file(test_data("chat/tools.json").string());
  const auto request = server::parse_generation_request(
      server::Endpoint::kChat,
      {{"model", "m"}, {"messages", wire_conversation()}, {"tools", tools}}, 0);
  const std::string source = template_source("granite.jinja");
  const server::ToolPrompt prompt =
      server::tool_prompt(tool_call_syntax(source), request.tools, request.messages);
  ChatTemplateOptions options;
  options.extra_context = prompt.extra_context;
  const std::string rendered = ChatTemplate(source, "granite").render(prompt.messages, options);
  EXPECT_NE(rendered.find("<|start_of_role|>assistant<|end_of_role|><|tool_call|>[{\"arguments\":"
                          "{\"city\":\"Paris\",\"unit\":\"celsius\"},\"name\":\"get_weather\"}]"),
            std::string::npos)
      << rendered;
  EXPECT_NE(rendered.find("<|start_of_role|>tool_response<|end_of_role|>{\"temperature\": 22.5"),
            std::string::npos)
      << rendered;
  EXPECT_NE(rendered.find("<|start_of_role|>available_tools<|end_of_role|>"), std::string::npos);
}

// --- the response and the stream ------------------------------------------------------------

// Token events carrying `pieces` (one per token); `marker` pieces stand for a special token
// (id 7) whose text decoding drops.
std::vector<engine::TokenEvent> events_of(const std::vector<std::string>& pieces,
                                          const std::string& marker) {
  std::vector<engine::TokenEvent> events;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    engine::TokenEvent event;
    event.token = pieces[i] == marker && !marker.empty() ? 7 : 100 + static_cast<int32_t>(i);
    event.text = event.token == 7 ? "" : pieces[i];
    event.finished = i + 1 == pieces.size();
    event.reason = engine::FinishReason::kEos;
    events.push_back(std::move(event));
  }
  return events;
}

// Pieces of `reply` as tokens might cut it: the marker whole, the rest 3 characters at a time.
std::vector<std::string> token_pieces(const std::string& reply, const std::string& marker) {
  std::vector<std::string> pieces;
  std::string rest = reply;
  if (!marker.empty() && rest.starts_with(marker)) {
    pieces.push_back(marker);
    rest = rest.substr(marker.size());
  }
  const std::vector<std::string> chars = characters(rest);
  for (std::size_t i = 0; i < chars.size(); i += 3) {
    std::string piece;
    for (std::size_t j = i; j < std::min(i + 3, chars.size()); ++j) piece += chars[j];
    pieces.push_back(piece);
  }
  return pieces;
}

// The chunks' choice 0 as OpenAI's client accumulates them: content joined, tool calls merged
// by index (id, type and name set once, arguments appended).
Json reassemble(const std::string& sse, std::string& finish_reason) {
  Json message = {{"content", ""}, {"tool_calls", Json::array()}};
  std::size_t pos = 0;
  while ((pos = sse.find("data: ", pos)) != std::string::npos) {
    const std::size_t end = sse.find("\n\n", pos);
    const std::string data = sse.substr(pos + 6, end - pos - 6);
    pos = end;
    if (data == "[DONE]") break;
    const Json chunk = Json::parse(data);
    if (chunk["choices"].empty()) continue;
    const Json& choice = chunk["choices"][0];
    if (!choice["finish_reason"].is_null()) finish_reason = choice["finish_reason"];
    const Json& delta = choice["delta"];
    if (delta.contains("content") && delta["content"].is_string()) {
      message["content"] =
          message["content"].get<std::string>() + delta["content"].get<std::string>();
    }
    if (!delta.contains("tool_calls")) continue;
    for (const Json& fragment : delta["tool_calls"]) {
      const std::size_t index = fragment["index"];
      Json& calls = message["tool_calls"];
      if (index == calls.size()) calls.push_back({{"function", {{"arguments", ""}}}});
      Json& call = calls.at(index);
      for (const char* key : {"id", "type"}) {
        if (fragment.contains(key)) call[key] = fragment[key];
      }
      const Json& function = fragment["function"];
      if (function.contains("name")) call["function"]["name"] = function["name"];
      call["function"]["arguments"] = call["function"]["arguments"].get<std::string>() +
                                      function.value("arguments", std::string());
    }
  }
  if (message["content"] == "") message["content"] = Json();
  return message;
}

TEST(ToolReply, StreamedChunksReassembleToTheWholeResponse) {
  for (const Json& c : replies()) {
    const ToolCallSyntax syntax = syntax_of(c);
    const std::string marker = c.contains("markers") ? c["markers"][0].get<std::string>() : "";
    const std::vector<std::pair<int32_t, std::string>> markers =
        marker.empty() ? std::vector<std::pair<int32_t, std::string>>{}
                       : std::vector<std::pair<int32_t, std::string>>{{7, marker}};
    const server::ToolReply tools(syntax, true, markers);
    const auto events = events_of(token_pieces(c["reply"], marker), marker);

    const server::ResponseHeader header{server::Endpoint::kChat, "chatcmpl-1", 0, "m"};
    std::vector<server::Choice> choices(1, server::Choice(server::Endpoint::kChat, nullptr));
    choices[0].tools = tools;
    for (const auto& event : events) choices[0].add(event);
    const Json whole = server::full_response(header, choices)["choices"][0];

    server::Choice prototype(server::Endpoint::kChat, nullptr);
    prototype.tools = tools;
    server::SseWriter writer(header, false, 1, prototype);
    std::string sse;
    for (const auto& event : events) writer.append(event, "cancelled", sse);
    std::string finish_reason;
    const Json streamed = reassemble(sse, finish_reason);

    const bool called = !c["calls"].empty();
    EXPECT_EQ(whole["finish_reason"], called ? "tool_calls" : "stop") << c["name"];
    EXPECT_EQ(finish_reason, whole["finish_reason"]) << c["name"];
    const Json& message = whole["message"];
    const std::string content = c["content"];
    EXPECT_EQ(message["content"], called && content.empty() ? Json() : Json(content)) << c["name"];
    EXPECT_EQ(streamed["content"], content.empty() ? Json() : Json(content)) << c["name"];
    ASSERT_EQ(message.contains("tool_calls"), called) << c["name"];
    if (!called) continue;
    ASSERT_EQ(message["tool_calls"].size(), c["calls"].size()) << c["name"];
    ASSERT_EQ(streamed["tool_calls"].size(), c["calls"].size()) << c["name"];
    for (std::size_t i = 0; i < c["calls"].size(); ++i) {
      for (const Json& call : {message["tool_calls"][i], streamed["tool_calls"][i]}) {
        EXPECT_EQ(call["type"], "function");
        EXPECT_EQ(call["id"].get<std::string>().size(), 9u);
        EXPECT_EQ(call["function"]["name"], c["calls"][i]["name"]) << c["name"];
        EXPECT_EQ(call["function"]["arguments"], c["calls"][i]["arguments"]) << c["name"];
      }
    }
  }
}

}  // namespace
// ---------------------------------------------------------------------------------------------
// Reasoning: `<think>` blocks split from the answer, as the thinking models' templates cut a past
// reply (reasoning.strip('\n'), content.lstrip('\n')), whatever the pieces the text comes in.

namespace {

ReasoningParser::Update split(const std::string& reply, bool inside, std::size_t step,
                              const ThinkingSyntax& syntax) {
  ReasoningParser parser(syntax, inside);
  ReasoningParser::Update all;
  for (std::size_t at = 0; at < reply.size(); at += step) {
    const ReasoningParser::Update update = parser.feed(std::string_view(reply).substr(at, step));
    all.reasoning += update.reasoning;
    all.content += update.content;
  }
  const ReasoningParser::Update last = parser.finish();
  all.reasoning += last.reasoning;
  all.content += last.content;
  return all;
}

struct SplitCase {
  std::string reply;
  bool inside;
  std::string reasoning, content;
};

// Each reply fed in pieces of several sizes splits into its reasoning and content.
void expect_splits(const std::vector<SplitCase>& cases, const ThinkingSyntax& syntax) {
  for (const SplitCase& c : cases) {
    for (std::size_t step : {1, 2, 3, 5, 7, 64}) {
      const ReasoningParser::Update got = split(c.reply, c.inside, step, syntax);
      EXPECT_EQ(got.reasoning, c.reasoning) << c.reply << " in pieces of " << step;
      EXPECT_EQ(got.content, c.content) << c.reply << " in pieces of " << step;
    }
  }
}

}  // namespace

TEST(ReasoningParser, SplitsThinkingFromTheAnswerInEveryCut) {
  expect_splits(
      {
          {"<think>\nFirst, 2 + 2.\n\nIt is 4.\n</think>\n\nVier. ✓", false,
           "First, 2 + 2.\n\nIt is 4.", "Vier. ✓"},
          {"  <think>x</think>y", false, "x", "y"},
          {"No thinking <think>here</think>", false, "", "No thinking <think>here</think>"},
          {"<thin", false, "", "<thin"},
          {"\n\n", false, "", "\n\n"},
          {"<think>\n\n</think>\n\nJust the answer", false, "", "Just the answer"},
          {"<think>cut off by max_tok", false, "cut off by max_tok", ""},
          {"<think>ends in a partial </thi", false, "ends in a partial </thi", ""},
          {"The prompt opened it.\n</think>\n\nAnswer </think> kept", true, "The prompt opened it.",
           "Answer </think> kept"},
          {"<|tool_call|>", false, "", "<|tool_call|>"},
          {"", true, "", ""},
      },
      ThinkingSyntax::think_tags());
}

// gpt-oss's harmony: the analysis channel is the thinking, the final channel's header is dropped
// and its message is the answer (the special tokens put back by the caller from the ids).
TEST(ReasoningParser, SplitsHarmonysAnalysisChannelFromTheFinalOneInEveryCut) {
  expect_splits(
      {
          {"<|channel|>analysis<|message|>User asks 2+2. Answer 4.<|end|><|start|>assistant"
           "<|channel|>final<|message|>Vier. ✓",
           false, "User asks 2+2. Answer 4.", "Vier. ✓"},
          {"<|channel|>final<|message|>Only the answer", false, "", "Only the answer"},
          {"Plain text, no channel", false, "", "Plain text, no channel"},
          {"<|channel|>analysis<|message|>cut off by max_tok", false, "cut off by max_tok", ""},
          {"The prompt opened it.<|end|><|start|>assistant<|channel|>final<|message|>Yes", true,
           "The prompt opened it.", "Yes"},
          {"<|channel|>analysis<|message|>x<|end|><|start|>assistant<|channel|>commentary", false,
           "x", "<|start|>assistant<|channel|>commentary"},
          {"<|channel|>anal", false, "", "<|channel|>anal"},
      },
      ThinkingSyntax::harmony());
}

TEST(ReasoningParser, KnowsTemplatesThatThinkAndPromptsThatOpenTheBlock) {
  const ThinkingSyntax tags = ThinkingSyntax::think_tags();
  EXPECT_EQ(thinking_syntax("{{ content.split('</think>')[-1] }}")->open, "<think>");
  EXPECT_EQ(thinking_syntax("{{- '<|channel|>analysis<|message|>' + m.thinking + '<|end|>' }}")
                ->answer_header,
            "<|start|>assistant<|channel|>final<|message|>");
  EXPECT_FALSE(thinking_syntax("{{ messages }}"));
  EXPECT_TRUE(prompt_opens_thinking("<｜Assistant｜><think>\n", tags));
  EXPECT_FALSE(prompt_opens_thinking("<|im_start|>assistant\n<think>\n\n</think>\n\n", tags));
  EXPECT_FALSE(prompt_opens_thinking("<|im_start|>assistant\n", tags));
  const ThinkingSyntax harmony = ThinkingSyntax::harmony();
  EXPECT_TRUE(prompt_opens_thinking("<|start|>assistant<|channel|>analysis<|message|>", harmony));
  EXPECT_FALSE(prompt_opens_thinking("<|start|>assistant", harmony));
}

}  // namespace xlacel
