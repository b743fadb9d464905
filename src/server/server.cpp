#include "server/server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <new>
#include <optional>
#include <random>
#include <span>
#include <string_view>
#include <thread>

#include "chat/reasoning_parser.h"
#include "common/error.h"
#include "common/utf8.h"
#include "engine/embedding.h"
#include "engine/model_images.h"
#include "engine/scheduler_thread.h"
#include "server/api_error.h"
#include "server/embedding_batch.h"
#include "server/embeddings_request.h"
#include "server/event_stream.h"
#include "server/logprobs_json.h"
#include "server/messages_request.h"
#include "server/messages_response.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/response_grammar.h"
#include "server/response_store.h"
#include "server/responses_reply.h"
#include "server/responses_request.h"
#include "server/slot_request.h"
#include "server/sse_writer.h"
#include "server/tokenize_request.h"
#include "server/tool_calls.h"
#include "server/tool_grammar.h"
#include "server/web_chat.h"

namespace xlacel::server {

namespace {

using namespace std::chrono_literals;

// How often a stream with nothing to send writes an SSE comment: the write is what notices a
// client that went away while its request waited for a slot.
constexpr auto kKeepAliveInterval = 1000ms;

void send_json(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, Json::error_handler_t::replace), "application/json");
}

Json parse_body(const httplib::Request& req) {
  try {
    return Json::parse(req.body);
  } catch (const Json::exception& e) {
    throw invalid_request("", fmt::format("the body is not valid JSON: {}", e.what()),
                          "invalid_json");
  }
}

// Writes `data` as one chunk; nothing at all for empty data, since httplib takes an empty write
// for the end of the content and closes the response without its last chunk, which cuts the
// stream (a token that ends inside a UTF-8 character adds no text yet).
bool write(httplib::DataSink& sink, const std::string& data) {
  return data.empty() || sink.write(data.data(), data.size());
}

// Why a write to a client failed, for the log.
std::string write_failure(httplib::DataSink& sink, std::size_t bytes) {
  return fmt::format("writing {} bytes of the stream failed ({})", bytes,
                     sink.is_writable() ? "a write error" : "the client closed the connection");
}

// Anthropic's endpoints answer in its shapes, errors included.
ApiShape shape_of_path(const std::string& path) {
  return path.starts_with("/v1/messages") ? ApiShape::kAnthropic : ApiShape::kOpenAi;
}

// The model's text side; a 400 naming `field` for a model without a tokenizer.
const engine::ModelText& text_of(engine::Engine& loaded, const char* field) {
  try {
    return loaded.text();
  } catch (const Error& e) {
    throw invalid_request(field, e.what());
  }
}

// A 400 naming `field` unless `ids` (`where`: "input[2]", "the prompt") has a token and every
// token is in the model's vocabulary: generation and embeddings take prompts alike.
void check_prompt_ids(const char* field, std::string_view where, std::span<const int32_t> ids,
                      int64_t vocab_size) {
  if (ids.empty()) throw invalid_request(field, fmt::format("{} has no tokens", where));
  for (int32_t id : ids) {
    if (id >= vocab_size) {
      throw invalid_request(field, fmt::format("{}: token id {} is outside the vocabulary [0, {})",
                                               where, id, vocab_size));
    }
  }
}

// Decodes and preprocesses a request's images; a 400 naming the part of an image that is not one
// xlacel reads or that the model cannot take.
engine::PreparedImages prepare_request_images(const engine::ModelImages& model_images,
                                              const std::vector<engine::ImageFile>& images) {
  // ModelImages names the image at fault first ("<name>: <problem>"); its name is the part's.
  const auto part_at_fault = [&](const std::string& message) -> std::string {
    for (const engine::ImageFile& image : images) {
      if (message.starts_with(image.name + ": ")) return image.name;
    }
    return images.empty() ? std::string() : images.front().name;
  };
  try {
    return model_images.prepare(images);
  } catch (const Error& e) {
    const std::string where = part_at_fault(e.what());
    const std::string message = e.what();
    throw invalid_request(where,
                          message.starts_with(where + ": ")
                              ? fmt::format("'{}': {}", where, message.substr(where.size() + 2))
                              : message);
  } catch (const std::bad_alloc&) {
    throw invalid_request(part_at_fault({}), "the images are too large to decode");
  }
}

}  // namespace

struct Server::Impl {
  // One generation request from submit until its response is written (its destruction, when
  // httplib lets go of the response): shutdown() waits until none is left.
  struct Flight {
    explicit Flight(Impl& server) : impl(server) {
      std::lock_guard lock(impl.flights_mutex);
      ++impl.flights;
    }
    ~Flight() {
      std::lock_guard lock(impl.flights_mutex);
      --impl.flights;
      impl.flights_done.notify_all();
    }
    Flight(const Flight&) = delete;
    Flight& operator=(const Flight&) = delete;

    Impl& impl;
    ApiShape shape = ApiShape::kOpenAi;
    ResponseHeader header;
    std::vector<uint64_t> requests;  // the scheduler's, one per choice
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
    std::shared_ptr<EventStream> events = std::make_shared<EventStream>();
    std::vector<Choice> choices;          // a whole response's choices so far
    std::unique_ptr<SseWriter> streamed;  // a streamed Chat Completions / completions response
    std::unique_ptr<TypedReply> typed;    // a Messages or Responses response, streamed or whole
    std::function<void(const TypedReply&)> completed;  // Answer::completed
    StreamWriter& writer() const {
      return typed ? static_cast<StreamWriter&>(*typed) : static_cast<StreamWriter&>(*streamed);
    }
    std::string cancel_cause;    // why the server cancelled it, for the log
    std::size_t unfinished = 0;  // choices whose last event has not come yet
    bool finished() const { return unfinished == 0; }
  };

  explicit Impl(ServerOptions server_options) : options(std::move(server_options)) {}

  void routes();
  // The loaded engine; 503 while it loads or once the server drains.
  engine::Engine& ready_engine();
  // POST /v1/chat/completions and /v1/completions.
  void generate(Endpoint endpoint, const httplib::Request& req, httplib::Response& res);
  // POST /v1/messages and /v1/messages/count_tokens.
  void messages(const httplib::Request& req, httplib::Response& res);
  void count_tokens(const httplib::Request& req, httplib::Response& res);
  // POST /v1/responses; GET and DELETE /v1/responses/{id}.
  void responses(const httplib::Request& req, httplib::Response& res);
  void stored_response(const httplib::Request& req, httplib::Response& res);
  // A 404 unless the request names the served model.
  void check_model(const std::string& model) const;
  // POST /v1/embeddings.
  void embeddings(const httplib::Request& req, httplib::Response& res);
  // POST /slots/{id}?action=save|restore|erase.
  void slot_action(const httplib::Request& req, httplib::Response& res);
  // The prompt's token ids; for chat, with the request's tools shown to the model as its
  // template's family expects them (request.messages rewritten so) and `syntax` set.
  struct Prompt {
    std::vector<int32_t> ids;
    std::optional<ToolCallSyntax> syntax;
    // Set where the reply's thinking is split off: how the model writes it, and whether the
    // prompt opened the block.
    std::optional<ThinkingSyntax> thinking;
    bool opens_thinking = false;
    // The images' pixel values (RequestOptions::image_pixels); null without images.
    std::shared_ptr<const std::vector<float>> image_pixels;
  };
  Prompt prompt_for(engine::Engine& engine, GenerationRequest& request);
  // What the model takes in message content (images: a vision-language model).
  ContentOptions content_options(engine::Engine& engine) const;
  // A vision-language model's image processor, made on its first chat request.
  struct VisionSide {
    std::optional<engine::ModelImages> images;
    std::string images_problem;  // why there are none (a missing processor config)
  };
  const VisionSide& vision_side(engine::Engine& engine);
  // How an endpoint answers (run()).
  struct Answer {
    ApiShape shape = ApiShape::kOpenAi;  // of its errors
    std::string id_prefix;               // of the response's id
    // Where tools are active: the tools as tool grammars read them (OpenAI's nested function
    // shape), in the key order of the request's text.
    grammar::OrderedJson ordered_tools;
    // A typed reply (Messages, Responses); empty for Chat Completions and completions.
    std::function<std::unique_ptr<TypedReply>(ResponseHeader header, int64_t prompt_tokens,
                                              Choice prototype)>
        typed;
    // Called with the typed reply once its last event came (not when cancelled).
    std::function<void(const TypedReply&)> completed;
  };
  // Generates what `request` asks for and answers as `answer` says; `body`: the request's text
  // (for the response_format grammar, which reads the schema in its key order).
  void run(engine::Engine& engine, GenerationRequest request, Answer answer,
           const std::string& body, httplib::Response& res);
  // Answers a request whose events are read here, in the HTTP thread, until the last one.
  void answer_whole(Flight& flight, httplib::Response& res);
  void answer_streamed(std::shared_ptr<Flight> flight, httplib::Response& res);
  // Turns events into SSE text in `out`; true once the last event was handled.
  bool stream_events(Flight& flight, const std::vector<ChoiceEvent>& events, std::string& out);
  // Cancels a streamed request whose client can no longer be written to.
  void cancel_stream(Flight& flight, std::string cause);
  // Counts and logs the last event of one choice.
  void finished(Flight& flight, std::size_t choice, const engine::TokenEvent& last);
  void tokenize(const httplib::Request& req, httplib::Response& res);
  void detokenize(const httplib::Request& req, httplib::Response& res);
  void refuse(httplib::Response& res, const ApiError& error, ApiShape shape = ApiShape::kOpenAi);
  uint64_t next_seed();

  ServerOptions options;
  httplib::Server http;
  Metrics metrics;
  std::atomic<engine::Engine*> engine = nullptr;
  std::unique_ptr<engine::SchedulerThread> scheduler;
  std::atomic<bool> draining = false;
  std::atomic<uint64_t> next_id = 1;

  std::mutex flights_mutex;
  std::condition_variable flights_done;
  std::size_t flights = 0;  // generation requests submitted and not yet answered

  ResponseStore stored_responses{1024};

  std::mutex vision_mutex;
  std::unique_ptr<const VisionSide> vision;  // set once, under vision_mutex

  std::mutex seed_mutex;
  std::mt19937_64 seeds{std::random_device{}()};
};

void Server::Impl::refuse(httplib::Response& res, const ApiError& error, ApiShape shape) {
  metrics.request_refused(error.status);
  send_json(res, error.status, error.body(shape));
}

uint64_t Server::Impl::next_seed() {
  std::lock_guard lock(seed_mutex);
  return seeds();
}

void Server::Impl::routes() {
  http.set_payload_max_length(options.max_body_bytes);
  const std::size_t threads = options.http_threads;
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };

  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    const bool protected_path = req.path.starts_with("/v1/") || req.path == "/tokenize" ||
                                req.path == "/detokenize" || req.path.starts_with("/slots");
    if (options.api_key.empty() || !protected_path) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    // OpenAI's clients send the key as a bearer token, Anthropic's as x-api-key.
    if (req.get_header_value("Authorization") != "Bearer " + options.api_key &&
        req.get_header_value("x-api-key") != options.api_key) {
      refuse(res,
             ApiError(401, "authentication_error",
                      "missing or wrong API key (send 'Authorization: Bearer <key>' or "
                      "'x-api-key: <key>')",
                      {}, "invalid_api_key"),
             shape_of_path(req.path));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // httplib's own refusals (no route, body too large, unreadable request) come without a body:
  // give them OpenAI's error shape. Bodies set by the handlers are kept.
  http.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string message = fmt::format("{} {} failed", req.method, req.path);
    std::string code;
    if (res.status == 404) {
      message = fmt::format("no route for {} {}", req.method, req.path);
    } else if (res.status == 413) {
      message = fmt::format("the request body is larger than {} bytes", options.max_body_bytes);
      code = "request_too_large";
    }
    metrics.request_refused(res.status);
    send_json(res, res.status,
              ApiError(res.status, "invalid_request_error", message, {}, code)
                  .body(shape_of_path(req.path)));
  });
  http.set_exception_handler(
      [this](const httplib::Request& req, httplib::Response& res, std::exception_ptr error) {
        std::string message = "internal error";
        try {
          std::rethrow_exception(error);
        } catch (const std::exception& e) {
          message = fmt::format("internal error: {}", e.what());
        } catch (...) {
        }
        refuse(res, ApiError(500, "server_error", message), shape_of_path(req.path));
      });

  http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (draining) {
      send_json(res, 503, ApiError(503, "unavailable_error", "shutting down").body());
    } else if (engine == nullptr) {
      send_json(res, 503, ApiError(503, "unavailable_error", "loading the model").body());
    } else {
      send_json(res, 200, {{"status", "ok"}});
    }
  });
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    QueueState queue;
    if (engine::Engine* loaded = engine) {
      const engine::Scheduler& batches = loaded->scheduler();
      queue = {scheduler->waiting(),
               scheduler->running(),
               static_cast<std::size_t>(loaded->executor().capabilities().slots),
               batches.prompt_cache_hits(),
               batches.prompt_cache_entries(),
               batches.prompt_cache_bytes()};
    }
    res.set_content(metrics.prometheus_text(queue), "text/plain; version=0.0.4");
  });
  http.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(kWebChatHtml, "text/html; charset=utf-8");
  });
  http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    Json entry = {
        {"id", options.model_id}, {"object", "model"}, {"created", 0}, {"owned_by", "xlacel"}};
    // The positions one request may use (vLLM's name for it), once the model is loaded.
    if (engine::Engine* loaded = engine) {
      entry["max_model_len"] = loaded->executor().capabilities().capacity;
    }
    send_json(res, 200, {{"object", "list"}, {"data", Json::array({std::move(entry)})}});
  });
  http.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    generate(Endpoint::kChat, req, res);
  });
  http.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    generate(Endpoint::kCompletion, req, res);
  });
  http.Post("/v1/messages",
            [this](const httplib::Request& req, httplib::Response& res) { messages(req, res); });
  http.Post(
      "/v1/messages/count_tokens",
      [this](const httplib::Request& req, httplib::Response& res) { count_tokens(req, res); });
  http.Post("/v1/responses",
            [this](const httplib::Request& req, httplib::Response& res) { responses(req, res); });
  http.Get(R"(/v1/responses/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
    stored_response(req, res);
  });
  http.Delete(
      R"(/v1/responses/([^/]+))",
      [this](const httplib::Request& req, httplib::Response& res) { stored_response(req, res); });
  http.Post("/v1/embeddings",
            [this](const httplib::Request& req, httplib::Response& res) { embeddings(req, res); });
  http.Post(R"(/slots/(\d{1,9}))",
            [this](const httplib::Request& req, httplib::Response& res) { slot_action(req, res); });
  http.Post("/tokenize",
            [this](const httplib::Request& req, httplib::Response& res) { tokenize(req, res); });
  http.Post("/detokenize",
            [this](const httplib::Request& req, httplib::Response& res) { detokenize(req, res); });
}

void Server::Impl::check_model(const std::string& model) const {
  if (model != options.model_id) {
    throw ApiError(
        404, "invalid_request_error",
        fmt::format("the model '{}' does not exist; this server has '{}'", model, options.model_id),
        "model", "model_not_found");
  }
}

Server::Impl::Prompt Server::Impl::prompt_for(engine::Engine& loaded, GenerationRequest& request) {
  const bool chat = request.endpoint == Endpoint::kChat;
  Prompt prompt;
  if (const auto* ids = std::get_if<std::vector<int32_t>>(&request.prompt); ids && !chat) {
    prompt.ids = *ids;
    return prompt;
  }
  const engine::ModelText& text = text_of(loaded, chat ? "messages" : "prompt");
  try {
    if (!chat) {
      prompt.ids = text.encode_text(std::get<std::string>(request.prompt));
      return prompt;
    }
    // The tools shown to the model as its template's family expects them; the request's own
    // template variables first, so that the tools' win.
    prompt.syntax = tool_call_syntax(text.chat_template_source());
    ToolPrompt shown = tool_prompt(*prompt.syntax, request.tools, std::move(request.messages));
    request.messages = std::move(shown.messages);
    Json variables = request.chat_template_kwargs;
    variables.update(shown.extra_context);
    std::string rendered;
    engine::PreparedImages images;
    if (engine::has_vision(loaded.model())) {
      // Decoded and preprocessed here, on the HTTP handler's thread.
      const VisionSide& side = vision_side(loaded);
      if (!request.images.empty()) {
        if (!side.images) {
          throw ApiError(
              500, "server_error",
              fmt::format("the model's image processor is missing: {}", side.images_problem));
        }
        images = prepare_request_images(*side.images, request.images);
        prompt.image_pixels = images.pixels;
      }
    }
    prompt.ids = text.encode_chat(request.messages, variables, &rendered, images.layouts);
    if (request.split_reasoning.value_or(options.split_reasoning)) {
      prompt.thinking = thinking_syntax(text.chat_template_source());
      if (prompt.thinking) {
        prompt.opens_thinking = prompt_opens_thinking(rendered, *prompt.thinking);
      }
    }
  } catch (const Error& e) {
    throw invalid_request(chat ? "messages" : "prompt", e.what());
  }
  return prompt;
}

ContentOptions Server::Impl::content_options(engine::Engine& loaded) const {
  return {.images = engine::has_vision(loaded.model()),
          .max_images = options.max_images_per_request};
}

const Server::Impl::VisionSide& Server::Impl::vision_side(engine::Engine& loaded) {
  std::lock_guard lock(vision_mutex);
  if (!vision) {
    auto side = std::make_unique<VisionSide>();
    try {
      side->images.emplace(loaded.model());
    } catch (const std::exception& e) {
      side->images_problem = e.what();
    }
    vision = std::move(side);
  }
  return *vision;
}

engine::Engine& Server::Impl::ready_engine() {
  engine::Engine* loaded = engine;
  if (draining) throw ApiError(503, "unavailable_error", "the server is shutting down");
  if (loaded == nullptr) throw ApiError(503, "unavailable_error", "the model is still loading");
  return *loaded;
}

void Server::Impl::tokenize(const httplib::Request& req, httplib::Response& res) {
  try {
    const TokenizeRequest request = parse_tokenize_request(parse_body(req));
    const Tokenizer& tokenizer = text_of(ready_engine(), "content").tokenizer();
    std::vector<int32_t> ids;
    try {
      ids = tokenizer.encode(request.content, request.add_special);
    } catch (const Error& e) {
      throw invalid_request("content", e.what());
    }
    Json tokens = Json::array();
    for (int32_t id : ids) {
      if (!request.with_pieces) {
        tokens.push_back(id);
        continue;
      }
      // As llama.cpp: the piece as a string when it is valid UTF-8, else its bytes.
      const std::string bytes = token_bytes(tokenizer, id);
      Json piece = Json::array();
      if (utf8::is_valid(bytes)) {
        piece = bytes;
      } else {
        for (unsigned char byte : bytes) piece.push_back(byte);
      }
      tokens.push_back({{"id", id}, {"piece", std::move(piece)}});
    }
    send_json(res, 200, {{"tokens", std::move(tokens)}});
  } catch (const ApiError& error) {
    refuse(res, error);
  }
}

void Server::Impl::detokenize(const httplib::Request& req, httplib::Response& res) {
  try {
    const Json body = parse_body(req);
    engine::Engine& loaded = ready_engine();
    const std::vector<int32_t> ids =
        parse_detokenize_request(body, loaded.executor().capabilities().vocab_size);
    send_json(res, 200, {{"content", text_of(loaded, "tokens").tokenizer().decode(ids)}});
  } catch (const ApiError& error) {
    refuse(res, error);
  }
}

void Server::Impl::embeddings(const httplib::Request& req, httplib::Response& res) {
  try {
    engine::Engine& loaded = ready_engine();
    const EmbeddingsRequest request = parse_embeddings_request(parse_body(req));
    check_model(request.model);
    const executor::Capabilities& caps = loaded.executor().capabilities();
    if (request.dimensions > caps.hidden_size) {
      throw invalid_request("dimensions", fmt::format("'dimensions' ({}) is above the model's {}",
                                                      request.dimensions, caps.hidden_size));
    }
    std::vector<std::vector<int32_t>> prompts;
    int64_t prompt_tokens = 0;
    for (std::size_t i = 0; i < request.inputs.size(); ++i) {
      const std::string where = request.inputs.size() > 1 ? fmt::format("input[{}]", i) : "input";
      std::vector<int32_t> ids;
      if (const auto* text = std::get_if<std::string>(&request.inputs[i])) {
        try {
          // With the model's special tokens, as sentence-transformers encodes.
          ids = text_of(loaded, "input").tokenizer().encode(*text, true);
        } catch (const Error& e) {
          throw invalid_request("input", fmt::format("{}: {}", where, e.what()));
        }
      } else {
        ids = std::get<std::vector<int32_t>>(request.inputs[i]);
      }
      check_prompt_ids("input", where, ids, caps.vocab_size);
      if (static_cast<int64_t>(ids.size()) > caps.capacity) {
        throw invalid_request("input",
                              fmt::format("{} ({} tokens) does not fit the context of {} tokens",
                                          where, ids.size(), caps.capacity),
                              "context_length_exceeded");
      }
      prompt_tokens += static_cast<int64_t>(ids.size());
      prompts.push_back(std::move(ids));
    }
    engine::RequestOptions embedding;
    embedding.embed = options.pooling.value_or(loaded.model().config().pooling);
    const Flight flight(*this);  // shutdown() waits for it
    std::vector<std::vector<float>> vectors = embed_all(
        *scheduler, prompts, embedding, [this](const engine::RequestStats& stats, bool cancelled) {
          metrics.request_finished(stats, cancelled);
        });
    for (std::vector<float>& vector : vectors) {
      vector = engine::normalized(vector, request.dimensions);
    }
    send_json(res, 200, embeddings_response(request, vectors, prompt_tokens));
  } catch (const ApiError& error) {
    refuse(res, error);
  }
}

void Server::Impl::slot_action(const httplib::Request& req, httplib::Response& res) {
  try {
    engine::Engine& loaded = ready_engine();
    if (options.slot_save_path.empty()) {
      throw ApiError(501, "not_supported_error",
                     "slot save and restore are off: start the server with --slot-save-path DIR");
    }
    const std::string action = req.get_param_value("action");
    const SlotRequest request = parse_slot_request(
        action, action == "erase" && req.body.empty() ? Json::object() : parse_body(req));
    engine::SlotAction slot_action;
    slot_action.kind = request.kind;
    slot_action.slot = std::stoll(req.matches[1].str());
    slot_action.path = std::filesystem::path(options.slot_save_path) / request.filename;
    const executor::ExecutorOptions& executor = loaded.executor().options();
    // A file restores only into the same model's slots of the same shape.
    slot_action.model = fmt::format("{} ({}, {} positions a slot, {} weights)",
                                    loaded.model().name(), loaded.model().config().architecture,
                                    executor.capacity, models::weight_type_name(executor.weights));
    engine::SlotActionResult result;
    try {
      result = scheduler->slot_action(slot_action);
    } catch (const FieldError& e) {
      throw ApiError(404, "invalid_request_error", e.what(), "id_slot");
    }
    using Problem = engine::SlotActionResult::Problem;
    switch (result.problem) {
      case Problem::kNone:
        break;
      case Problem::kBusy:
        throw ApiError(409, "invalid_request_error", result.message, "id_slot", "slot_busy");
      case Problem::kNoFile:
        throw ApiError(404, "invalid_request_error", result.message, "filename");
      case Problem::kBadFile:
        throw invalid_request("filename", result.message);
      case Problem::kFailed:
        throw ApiError(500, "server_error", result.message);
    }
    if (options.log) {
      options.log(fmt::format("slot {}: {} {} tokens ({} bytes) in {:.3f} s", slot_action.slot,
                              action, result.tokens, result.bytes, result.seconds));
    }
    send_json(res, 200, slot_response(slot_action.slot, request, result));
  } catch (const ApiError& error) {
    refuse(res, error);
  }
}

void Server::Impl::generate(Endpoint endpoint, const httplib::Request& req,
                            httplib::Response& res) {
  try {
    engine::Engine& loaded = ready_engine();
    GenerationRequest request =
        parse_generation_request(endpoint, parse_body(req), next_seed(), content_options(loaded));
    Answer answer;
    answer.id_prefix = endpoint == Endpoint::kChat ? "chatcmpl-" : "cmpl-";
    if (request.tools.active()) {
      answer.ordered_tools = grammar::OrderedJson::parse(req.body).at("tools");
    }
    run(loaded, std::move(request), std::move(answer), req.body, res);
  } catch (const ApiError& error) {
    refuse(res, error);
  }
}

void Server::Impl::messages(const httplib::Request& req, httplib::Response& res) {
  try {
    engine::Engine& loaded = ready_engine();
    GenerationRequest request =
        parse_messages_request(parse_body(req), next_seed(), content_options(loaded));
    Answer answer;
    answer.shape = ApiShape::kAnthropic;
    answer.id_prefix = "msg_";
    if (request.tools.active()) {
      answer.ordered_tools = function_tools(grammar::OrderedJson::parse(req.body));
    }
    answer.typed = [](ResponseHeader header, int64_t prompt_tokens, Choice prototype) {
      return std::make_unique<MessagesReply>(std::move(header), prompt_tokens,
                                             std::move(prototype));
    };
    run(loaded, std::move(request), std::move(answer), req.body, res);
  } catch (const ApiError& error) {
    refuse(res, error, ApiShape::kAnthropic);
  }
}

void Server::Impl::count_tokens(const httplib::Request& req, httplib::Response& res) {
  try {
    engine::Engine& loaded = ready_engine();
    GenerationRequest request =
        parse_count_tokens_request(parse_body(req), content_options(loaded));
    check_model(request.model);
    const Prompt prompt = prompt_for(loaded, request);
    send_json(res, 200, {{"input_tokens", prompt.ids.size()}});
  } catch (const ApiError& error) {
    refuse(res, error, ApiShape::kAnthropic);
  }
}

void Server::Impl::responses(const httplib::Request& req, httplib::Response& res) {
  try {
    engine::Engine& loaded = ready_engine();
    ResponsesRequest request =
        parse_responses_request(parse_body(req), next_seed(), content_options(loaded));
    // The conversation so far: the previous response's, then this input (instructions apart:
    // they hold for this turn only).
    Json conversation = Json::array();
    std::vector<engine::ImageFile> images;  // the conversation's, in order
    if (!request.previous_response_id.empty()) {
      std::optional<StoredResponse> previous = stored_responses.get(request.previous_response_id);
      if (!previous) {
        throw ApiError(404, "invalid_request_error",
                       fmt::format("previous response with id '{}' not found (not stored, "
                                   "deleted, or no longer kept)",
                                   request.previous_response_id),
                       "previous_response_id", "previous_response_not_found");
      }
      conversation = std::move(previous->conversation);
      if (previous->images) images = *previous->images;
    }
    for (Json& message : request.generation.messages) conversation.push_back(std::move(message));
    request.generation.messages = conversation;
    if (!images.empty()) {
      if (images.size() + request.generation.images.size() > options.max_images_per_request) {
        throw invalid_request("previous_response_id",
                              fmt::format("too many images: the conversation would have {}, a "
                                          "request takes at most {} (serve "
                                          "--max-images-per-request)",
                                          images.size() + request.generation.images.size(),
                                          options.max_images_per_request));
      }
      images.insert(images.end(), std::make_move_iterator(request.generation.images.begin()),
                    std::make_move_iterator(request.generation.images.end()));
      request.generation.images = images;
    }
    std::shared_ptr<const std::vector<engine::ImageFile>> conversation_images;
    if (!request.generation.images.empty()) {
      conversation_images =
          std::make_shared<const std::vector<engine::ImageFile>>(request.generation.images);
    }
    if (!request.instructions.empty()) {
      request.generation.messages.insert(
          request.generation.messages.begin(),
          Json{{"role", "system"}, {"content", request.instructions}});
    }
    Answer answer;
    answer.id_prefix = "resp_";
    if (request.generation.tools.active()) {
      answer.ordered_tools = nested_function_tools(grammar::OrderedJson::parse(req.body));
    }
    answer.typed = [echo = std::move(request.echo)](ResponseHeader header, int64_t,
                                                    Choice prototype) {
      return std::make_unique<ResponsesReply>(std::move(header), echo, std::move(prototype));
    };
    if (request.store) {
      answer.completed = [this, conversation,
                          conversation_images](const TypedReply& reply) mutable {
        const auto& responses_reply = static_cast<const ResponsesReply&>(reply);
        Json response = responses_reply.whole();
        conversation.push_back(responses_reply.assistant_turn());
        const std::string id = response["id"];
        stored_responses.put(
            id, {std::move(response), std::move(conversation), std::move(conversation_images)});
      };
    }
    run(loaded, std::move(request.generation), std::move(answer), req.body, res);
  } catch (const ApiError& error) {
    refuse(res, error);
  }
}

void Server::Impl::stored_response(const httplib::Request& req, httplib::Response& res) {
  const std::string id = req.matches[1];
  const auto not_found = [&] {
    refuse(res, ApiError(404, "invalid_request_error",
                         fmt::format("response with id '{}' not found", id), "response_id",
                         "response_not_found"));
  };
  if (req.method == "DELETE") {
    if (!stored_responses.erase(id)) return not_found();
    send_json(res, 200, {{"id", id}, {"object", "response.deleted"}, {"deleted", true}});
    return;
  }
  std::optional<StoredResponse> stored = stored_responses.get(id);
  if (!stored) return not_found();
  send_json(res, 200, stored->response);
}

void Server::Impl::run(engine::Engine& loaded, GenerationRequest request, Answer answer,
                       const std::string& body, httplib::Response& res) {
  check_model(request.model);
  const Endpoint endpoint = request.endpoint;
  const Prompt built = prompt_for(loaded, request);
  const std::vector<int32_t>& prompt = built.ids;
  // Chat: the reply parsed for calls in the family's syntax, and constrained to calls when
  // tool_choice requires them.
  std::optional<ToolReply> tools;
  std::shared_ptr<const grammar::CompiledGrammar> tool_constraint;
  if (built.syntax && request.tools.active()) {
    tool_constraint = tool_grammar(loaded, *built.syntax, request.tools, answer.ordered_tools);
    tools.emplace(*built.syntax, request.tools.parallel,
                  marker_tokens(*built.syntax, loaded.text().tokenizer()),
                  tool_constraint != nullptr);
  }
  const auto& caps = loaded.executor().capabilities();
  const auto prompt_size = static_cast<int64_t>(prompt.size());
  const char* prompt_field = endpoint == Endpoint::kChat ? "messages" : "prompt";
  check_prompt_ids(prompt_field, "the prompt", prompt, caps.vocab_size);
  for (const auto& [id, bias] : request.sampling.logit_bias) {
    if (id >= caps.vocab_size) {
      throw invalid_request("logit_bias",
                            fmt::format("'logit_bias' token id {} is outside the vocabulary "
                                        "[0, {})",
                                        id, caps.vocab_size));
    }
  }
  if (prompt_size >= caps.capacity || prompt_size + request.max_tokens > caps.capacity) {
    throw invalid_request(
        prompt_field,
        fmt::format("the prompt ({} tokens){} does not fit the context of {} tokens", prompt_size,
                    request.max_tokens > 0
                        ? fmt::format(" plus max_tokens ({})", request.max_tokens)
                        : std::string(" plus one new token"),
                    caps.capacity),
        "context_length_exceeded");
  }

  engine::RequestOptions options_for_engine = loaded.default_request();
  options_for_engine.max_tokens =
      request.max_tokens > 0 ? request.max_tokens : caps.capacity - prompt_size;
  options_for_engine.sampling = request.sampling;
  options_for_engine.stop = request.stop;
  options_for_engine.image_pixels = built.image_pixels;  // n > 1: the choices share them
  options_for_engine.grammar =
      tool_constraint ? tool_constraint : response_grammar(loaded, request.response_format, body);
  // Choice i samples with seed + i (see GenerationRequest::n).
  const auto choices = static_cast<std::size_t>(request.n);
  std::vector<engine::RequestOptions> choice_options(choices, options_for_engine);
  for (std::size_t i = 0; i < choices; ++i) choice_options[i].sampling.seed += i;

  auto flight = std::make_shared<Flight>(*this);
  flight->shape = answer.shape;
  flight->completed = std::move(answer.completed);
  flight->header = {endpoint, fmt::format("{}{}", answer.id_prefix, next_id++),
                    static_cast<int64_t>(std::time(nullptr)), options.model_id};
  const Tokenizer* logprobs_tokenizer =
      request.sampling.logprobs ? &loaded.text().tokenizer() : nullptr;
  // How each choice's reply is read: logprobs, tool calls, thinking.
  Choice prototype(endpoint, logprobs_tokenizer);
  prototype.tools = tools;
  if (built.thinking) {
    // Every special token of the syntax (think tags; harmony's <|channel|>, <|message|>,
    // <|end|>, <|start|>), which text decoding skips and the parser needs back.
    const ThinkingSyntax& syntax = *built.thinking;
    prototype.thinking.emplace(ThinkingSplit{
        ReasoningParser(syntax, built.opens_thinking),
        special_markers(
            syntax.answer_header.empty()
                ? std::vector<std::string>{syntax.open, syntax.close}
                : std::vector<std::string>{"<|channel|>", "<|message|>", "<|end|>", "<|start|>"},
            loaded.text().tokenizer())});
  }
  if (answer.typed) {
    flight->typed = answer.typed(flight->header, prompt_size, prototype);
  } else if (request.stream) {
    flight->streamed =
        std::make_unique<SseWriter>(flight->header, request.include_usage, choices, prototype);
  } else {
    flight->choices.assign(choices, prototype);
  }
  flight->unfinished = choices;
  try {
    std::shared_ptr<EventStream> events = flight->events;
    flight->requests = scheduler->submit_all(prompt, choice_options, [events](std::size_t i) {
      return [events, i](const engine::TokenEvent& event) { events->push(i, event); };
    });
  } catch (const engine::QueueFull& e) {
    throw ApiError(429, "rate_limit_error", e.what(), {}, "queue_full");
  } catch (const Error& e) {
    throw invalid_request(prompt_field, e.what());
  }
  if (request.stream) {
    answer_streamed(flight, res);
  } else {
    answer_whole(*flight, res);
  }
}

void Server::Impl::finished(Flight& flight, std::size_t choice, const engine::TokenEvent& last) {
  --flight.unfinished;
  const bool cancelled = last.reason == engine::FinishReason::kCancelled;
  if (!cancelled && flight.completed && flight.typed) flight.completed(*flight.typed);
  metrics.request_finished(last.stats, cancelled);
  if (options.log) {
    const engine::RequestStats& stats = last.stats;
    options.log(fmt::format(
        "{}{}: prompt {} tokens ({} cached), completion {} tokens, ttft {:.3f} s, {:.1f} tok/s, "
        "{:.3f} s, {}",
        flight.header.id, flight.requests.size() > 1 ? fmt::format(" choice {}", choice) : "",
        stats.prompt_tokens, stats.cached_tokens, stats.output_tokens, stats.time_to_first_token(),
        stats.generation_tokens_per_second(),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - flight.started).count(),
        cancelled ? (flight.cancel_cause.empty() ? std::string("cancelled")
                                                 : "cancelled: " + flight.cancel_cause)
                  : std::string(openai_finish_reason(last.reason))));
  }
}

void Server::Impl::answer_whole(Flight& flight, httplib::Response& res) {
  std::vector<ChoiceEvent> events;
  std::string cancel_message;  // of the first choice cancelled
  while (!flight.finished()) {
    if (!flight.events->pop_all(events, kKeepAliveInterval)) continue;
    for (const auto& [choice, event] : events) {
      if (flight.typed) {
        std::string events_text;  // the stream's, not sent
        flight.typed->append(event, choice, "", events_text);
      } else {
        flight.choices.at(choice).add(event);
      }
      if (!event.finished) continue;
      finished(flight, choice, event);
      if (event.reason == engine::FinishReason::kCancelled && cancel_message.empty()) {
        cancel_message = event.message.empty() ? "the request was cancelled" : event.message;
      }
    }
  }
  if (!cancel_message.empty()) {
    send_json(res, 503, ApiError(503, "unavailable_error", cancel_message).body(flight.shape));
  } else if (flight.typed) {
    send_json(res, 200, flight.typed->whole());
  } else {
    send_json(res, 200, full_response(flight.header, flight.choices));
  }
}

bool Server::Impl::stream_events(Flight& flight, const std::vector<ChoiceEvent>& events,
                                 std::string& out) {
  const std::string cancel_message =
      draining ? "the server is shutting down" : "the request was cancelled";
  bool ended = false;
  for (const auto& [choice, event] : events) {
    ended = flight.writer().append(event, choice, cancel_message, out) || ended;
    if (event.finished) finished(flight, choice, event);
  }
  return ended;
}

void Server::Impl::cancel_stream(Flight& flight, std::string cause) {
  if (flight.cancel_cause.empty()) flight.cancel_cause = std::move(cause);
  for (uint64_t request : flight.requests) scheduler->cancel(request);
}

void Server::Impl::answer_streamed(std::shared_ptr<Flight> flight, httplib::Response& res) {
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, flight](std::size_t, httplib::DataSink& sink) {
        std::vector<ChoiceEvent> events;
        if (!flight->events->pop_all(events, kKeepAliveInterval)) {
          static const std::string kKeepAlive = ": keep-alive\n\n";
          if (write(sink, kKeepAlive)) return true;
          cancel_stream(*flight, write_failure(sink, kKeepAlive.size()));
          return false;
        }
        std::string out;
        const bool last = stream_events(*flight, events, out);
        if (!write(sink, out)) {
          if (!last) cancel_stream(*flight, write_failure(sink, out.size()));
          return false;
        }
        if (last) sink.done();
        return true;
      },
      [this, flight](bool) {
        // The connection ended before the last event (the client closed it, or a write
        // failed): the request must not keep its slot, and its last event still has to be
        // counted, so wait for it here.
        if (flight->finished()) return;
        cancel_stream(*flight, "the connection ended before the last chunk");
        std::vector<ChoiceEvent> events;
        std::string discarded;
        while (!flight->finished()) {
          if (flight->events->pop_all(events, kKeepAliveInterval)) {
            stream_events(*flight, events, discarded);
          }
        }
      });
}

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  impl_->routes();
}

Server::~Server() {
  if (impl_->scheduler) impl_->scheduler->stop();
}

int Server::bind() {
  const ServerOptions& options = impl_->options;
  if (options.port == 0) {
    const int port = impl_->http.bind_to_any_port(options.host);
    if (port <= 0) fail(options.host, "cannot listen on any port");
    return port;
  }
  if (!impl_->http.bind_to_port(options.host, options.port)) {
    fail(fmt::format("{}:{}", options.host, options.port),
         "cannot listen there (in use, or not an address of this machine)");
  }
  return options.port;
}

void Server::listen() {
  impl_->http.listen_after_bind();
}

void Server::attach(engine::Engine& loaded) {
  impl_->scheduler = std::make_unique<engine::SchedulerThread>(
      loaded.scheduler(), impl_->options.max_waiting,
      [this](const engine::StepReport& report) { impl_->metrics.step(report); });
  impl_->engine = &loaded;
}

void Server::shutdown(double grace_seconds) {
  Impl& impl = *impl_;
  impl.draining = true;
  std::unique_lock lock(impl.flights_mutex);
  const auto grace = std::chrono::duration<double>(grace_seconds);
  if (!impl.flights_done.wait_for(lock, grace, [&] { return impl.flights == 0; })) {
    if (impl.scheduler) impl.scheduler->cancel_all();
    impl.flights_done.wait(lock, [&] { return impl.flights == 0; });
  }
  lock.unlock();
  impl.http.stop();
}

}  // namespace xlacel::server
