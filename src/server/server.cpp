#include "server/server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "common/error.h"
#include "engine/scheduler_thread.h"
#include "server/api_error.h"
#include "server/event_stream.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/sse_writer.h"

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
    ResponseHeader header;
    uint64_t request = 0;
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
    std::shared_ptr<EventStream> events = std::make_shared<EventStream>();
    std::string text;                   // a whole response's text so far
    std::optional<SseWriter> streamed;  // a streamed response's chunks
    std::string cancel_cause;           // why the server cancelled it, for the log
    bool finished = false;
  };

  explicit Impl(ServerOptions server_options) : options(std::move(server_options)) {}

  void routes();
  void generate(Endpoint endpoint, const httplib::Request& req, httplib::Response& res);
  std::vector<int32_t> prompt_ids(engine::Engine& engine, const GenerationRequest& request);
  // Answers a request whose events are read here, in the HTTP thread, until the last one.
  void answer_whole(Flight& flight, httplib::Response& res);
  void answer_streamed(std::shared_ptr<Flight> flight, httplib::Response& res);
  // Turns events into SSE text in `out`; true once the last event was handled.
  bool stream_events(Flight& flight, const std::vector<engine::TokenEvent>& events,
                     std::string& out);
  // Cancels a streamed request whose client can no longer be written to.
  void cancel_stream(Flight& flight, std::string cause);
  void finished(Flight& flight, const engine::TokenEvent& last);
  void refuse(httplib::Response& res, const ApiError& error);
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

  std::mutex seed_mutex;
  std::mt19937_64 seeds{std::random_device{}()};
};

void Server::Impl::refuse(httplib::Response& res, const ApiError& error) {
  metrics.request_refused(error.status);
  send_json(res, error.status, error.body());
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
    if (options.api_key.empty() || !req.path.starts_with("/v1/")) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    if (req.get_header_value("Authorization") != "Bearer " + options.api_key) {
      refuse(res, ApiError(401, "authentication_error",
                           "missing or wrong API key (send 'Authorization: Bearer <key>')", {},
                           "invalid_api_key"));
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
              ApiError(res.status, "invalid_request_error", message, {}, code).body());
  });
  http.set_exception_handler(
      [this](const httplib::Request&, httplib::Response& res, std::exception_ptr error) {
        std::string message = "internal error";
        try {
          std::rethrow_exception(error);
        } catch (const std::exception& e) {
          message = fmt::format("internal error: {}", e.what());
        } catch (...) {
        }
        refuse(res, ApiError(500, "server_error", message));
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
      queue = {scheduler->waiting(), scheduler->running(),
               static_cast<std::size_t>(loaded->executor().capabilities().slots)};
    }
    res.set_content(metrics.prometheus_text(queue), "text/plain; version=0.0.4");
  });
  http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200,
              {{"object", "list"},
               {"data", Json::array({{{"id", options.model_id},
                                      {"object", "model"},
                                      {"created", 0},
                                      {"owned_by", "xlacel"}}})}});
  });
  http.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    generate(Endpoint::kChat, req, res);
  });
  http.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    generate(Endpoint::kCompletion, req, res);
  });
}

std::vector<int32_t> Server::Impl::prompt_ids(engine::Engine& loaded,
                                              const GenerationRequest& request) {
  const bool chat = request.endpoint == Endpoint::kChat;
  if (const auto* ids = std::get_if<std::vector<int32_t>>(&request.prompt); ids && !chat) {
    return *ids;
  }
  try {
    const engine::ModelText& text = loaded.text();
    if (chat) return text.encode_chat(request.messages, Json::object());
    return text.encode_text(std::get<std::string>(request.prompt));
  } catch (const Error& e) {
    throw invalid_request(chat ? "messages" : "prompt", e.what());
  }
}

void Server::Impl::generate(Endpoint endpoint, const httplib::Request& req,
                            httplib::Response& res) {
  try {
    engine::Engine* loaded = engine;
    if (draining) throw ApiError(503, "unavailable_error", "the server is shutting down");
    if (loaded == nullptr) throw ApiError(503, "unavailable_error", "the model is still loading");
    Json body;
    try {
      body = Json::parse(req.body);
    } catch (const Json::exception& e) {
      throw invalid_request("", fmt::format("the body is not valid JSON: {}", e.what()),
                            "invalid_json");
    }
    const GenerationRequest request = parse_generation_request(endpoint, body, next_seed());
    if (request.model != options.model_id) {
      throw ApiError(404, "invalid_request_error",
                     fmt::format("the model '{}' does not exist; this server has '{}'",
                                 request.model, options.model_id),
                     "model", "model_not_found");
    }
    std::vector<int32_t> prompt = prompt_ids(*loaded, request);
    const auto& caps = loaded->executor().capabilities();
    const auto prompt_size = static_cast<int64_t>(prompt.size());
    const char* prompt_field = endpoint == Endpoint::kChat ? "messages" : "prompt";
    if (prompt_size == 0) throw invalid_request(prompt_field, "the prompt has no tokens");
    for (int32_t id : prompt) {
      if (id >= caps.vocab_size) {
        throw invalid_request("prompt", fmt::format("token id {} is outside the vocabulary [0, {})",
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

    engine::RequestOptions options_for_engine = loaded->default_request();
    options_for_engine.max_tokens =
        request.max_tokens > 0 ? request.max_tokens : caps.capacity - prompt_size;
    options_for_engine.sampling = request.sampling;
    options_for_engine.stop = request.stop;

    auto flight = std::make_shared<Flight>(*this);
    const uint64_t number = next_id++;
    flight->header = {
        endpoint, fmt::format("{}-{}", endpoint == Endpoint::kChat ? "chatcmpl" : "cmpl", number),
        static_cast<int64_t>(std::time(nullptr)), options.model_id};
    if (request.stream) flight->streamed.emplace(flight->header, request.include_usage);
    try {
      std::shared_ptr<EventStream> events = flight->events;
      flight->request =
          scheduler->submit(std::move(prompt), options_for_engine,
                            [events](const engine::TokenEvent& event) { events->push(event); });
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
  } catch (const ApiError& error) {
    refuse(res, error);
  }
}

void Server::Impl::finished(Flight& flight, const engine::TokenEvent& last) {
  flight.finished = true;
  const bool cancelled = last.reason == engine::FinishReason::kCancelled;
  metrics.request_finished(last.stats, cancelled);
  if (options.log) {
    const engine::RequestStats& stats = last.stats;
    options.log(fmt::format(
        "{}: prompt {} tokens ({} cached), completion {} tokens, ttft {:.3f} s, {:.1f} tok/s, "
        "{:.3f} s, {}",
        flight.header.id, stats.prompt_tokens, stats.cached_tokens, stats.output_tokens,
        stats.time_to_first_token(), stats.generation_tokens_per_second(),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - flight.started).count(),
        cancelled ? (flight.cancel_cause.empty() ? std::string("cancelled")
                                                 : "cancelled: " + flight.cancel_cause)
                  : std::string(openai_finish_reason(last.reason))));
  }
}

void Server::Impl::answer_whole(Flight& flight, httplib::Response& res) {
  std::vector<engine::TokenEvent> events;
  for (;;) {
    if (!flight.events->pop_all(events, kKeepAliveInterval)) continue;
    for (const engine::TokenEvent& event : events) {
      flight.text += event.text;
      if (!event.finished) continue;
      finished(flight, event);
      if (event.reason == engine::FinishReason::kCancelled) {
        send_json(res, 503,
                  ApiError(503, "unavailable_error",
                           event.message.empty() ? "the request was cancelled" : event.message)
                      .body());
      } else {
        send_json(res, 200, full_response(flight.header, flight.text, event.reason, event.stats));
      }
      return;
    }
  }
}

bool Server::Impl::stream_events(Flight& flight, const std::vector<engine::TokenEvent>& events,
                                 std::string& out) {
  const std::string cancel_message =
      draining ? "the server is shutting down" : "the request was cancelled";
  for (const engine::TokenEvent& event : events) {
    if (flight.streamed->append(event, cancel_message, out)) {
      finished(flight, event);
      return true;
    }
  }
  return false;
}

void Server::Impl::cancel_stream(Flight& flight, std::string cause) {
  if (flight.cancel_cause.empty()) flight.cancel_cause = std::move(cause);
  scheduler->cancel(flight.request);
}

void Server::Impl::answer_streamed(std::shared_ptr<Flight> flight, httplib::Response& res) {
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, flight](std::size_t, httplib::DataSink& sink) {
        std::vector<engine::TokenEvent> events;
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
        if (flight->finished) return;
        cancel_stream(*flight, "the connection ended before the last chunk");
        std::vector<engine::TokenEvent> events;
        std::string discarded;
        while (!flight->finished) {
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
