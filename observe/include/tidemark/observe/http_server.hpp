// A small HTTP server for observers of a running process: each route is a path and a function
// that renders the current answer. Routes are added first, then start() serves from background
// threads until the server is destroyed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace tidemark::observe {

/// What a route answers.
struct http_reply {
  std::string body;
  std::string content_type = "text/plain; charset=utf-8";
};

class http_server {
 public:
  /// Binds `listen` ("HOST:PORT"; an empty host means every interface; port 0 picks a free port).
  /// Throws std::runtime_error naming the address when it is malformed or cannot be bound.
  explicit http_server(const std::string& listen);
  /// Stops serving and waits for the threads.
  ~http_server();
  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  /// Answers GET `path` with what `render` returns at the time of the request (called on a
  /// server thread; it must be thread-safe). Only before start().
  void route(const std::string& path, std::function<http_reply()> render);
  /// Serves the routes on background threads (connections that came before wait in the backlog).
  void start();
  /// The bound port (useful with port 0).
  std::uint16_t port() const noexcept;
  /// "http://HOST:PORT" of the bound address.
  std::string url() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace tidemark::observe
