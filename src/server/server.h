#pragma once
// An OpenAI- and Anthropic-compatible HTTP server over one Engine (cpp-httplib): POST
// /v1/chat/completions, /v1/completions, /v1/responses and /v1/messages (streamed as server-sent
// events or whole), GET and DELETE /v1/responses/{id}, POST /v1/messages/count_tokens, GET
// /v1/models, /health and /metrics. Requests go to the
// engine's scheduler through a SchedulerThread, so they batch continuously; a client that goes away
// cancels its request. The server listens before the model is loaded and answers 503 until
// attach().
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "engine/engine.h"
#include "server/openai_request.h"

namespace xlacel::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;      // 0: any free port (bind() says which)
  std::string api_key;  // when set, /v1/* needs "Authorization: Bearer <key>" or "x-api-key: <key>"
  std::string model_id;                  // the name clients put in "model"
  std::size_t max_waiting = 64;          // requests waiting for a slot before 429
  std::size_t max_body_bytes = 8 << 20;  // larger bodies get 413
  std::size_t http_threads = 80;         // connections served at once
  // Whether the thinking of models whose template thinks (`<think>` blocks) is returned apart
  // (reasoning_content, thinking blocks) or left inline in the text.
  bool split_reasoning = true;
  // Where POST /slots/{id}?action=save|restore keeps its files; empty: those actions are off.
  std::string slot_save_path;
  // Images a request's messages may have (a vision-language model's; ImageCollector).
  std::size_t max_images_per_request = kDefaultMaxImages;
  // The pooling of /v1/embeddings; unset: the model's (ModelConfig::pooling).
  std::optional<Pooling> pooling;
  std::function<void(std::string_view)> log;  // one line per request; may be empty
};

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();

  // Binds the listening socket and returns its port; Error naming host:port when it cannot.
  int bind();
  // Serves connections until shutdown() completes; blocks.
  void listen();
  // The model is loaded: generation requests go to it from now on.
  void attach(engine::Engine& engine);
  // Stops taking generation requests (503), lets those in flight finish for up to
  // `grace_seconds`, cancels the rest (their streams end with an error event), then stops
  // listening; listen() returns after that. Safe to call from any thread, once.
  void shutdown(double grace_seconds);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xlacel::server
