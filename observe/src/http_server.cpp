// The HTTP server behind --metrics-listen and --dashboard, on cpp-httplib.
#include "tidemark/observe/http_server.hpp"

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include <sys/socket.h>

#include <httplib.h>

namespace tidemark::observe {

struct http_server::impl {
  httplib::Server server;
  std::string host;
  int port = 0;
  std::atomic<bool> ended{false};  // the listen loop returned
  std::thread thread;
};

namespace {

/// Splits "HOST:PORT" (the host may be empty for all interfaces, or a bracketed IPv6 address).
std::pair<std::string, int> split_listen(const std::string& listen) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos)
    throw std::runtime_error("listen address '" + listen + "': expected HOST:PORT");
  auto host = listen.substr(0, colon);
  if (host.empty()) host = "0.0.0.0";
  if (host.size() > 1 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  int port = 0;
  try {
    std::size_t used = 0;
    port = std::stoi(listen.substr(colon + 1), &used);
    if (used != listen.size() - colon - 1 || port < 0 || port > 65535) throw std::out_of_range{""};
  } catch (const std::exception&) {
    throw std::runtime_error("listen address '" + listen + "': the port must be 0-65535");
  }
  return {host, port};
}

}  // namespace

http_server::http_server(const std::string& listen) : impl_(std::make_unique<impl>()) {
  auto [host, port] = split_listen(listen);
  // httplib's default adds SO_REUSEPORT, which lets a second process share a taken port and
  // splits the scrapes between them; a taken port must be an error instead
  impl_->server.set_socket_options([](int sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  impl_->host = host;
  impl_->port = port == 0 ? impl_->server.bind_to_any_port(host) : port;
  if (impl_->port < 0 || (port != 0 && !impl_->server.bind_to_port(host, port)))
    throw std::runtime_error("cannot listen on '" + listen + "' (address in use or not local?)");
}

void http_server::start() {
  impl_->thread = std::thread{[i = impl_.get()] {
    i->server.listen_after_bind();
    i->ended = true;
  }};
  // httplib's stop() only ends a loop that is already running: without this wait, a server
  // destroyed right after start() (a short job) would leave the loop running and hang in join
  while (!impl_->server.is_running() && !impl_->ended)
    std::this_thread::sleep_for(std::chrono::microseconds{100});
}

http_server::~http_server() {
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

void http_server::route(const std::string& path, std::function<http_reply()> render) {
  impl_->server.Get(path, [render = std::move(render)](const httplib::Request&, httplib::Response& res) {
    auto reply = render();
    res.set_content(reply.body, reply.content_type);
  });
}

std::uint16_t http_server::port() const noexcept { return static_cast<std::uint16_t>(impl_->port); }

std::string http_server::url() const {
  auto host = impl_->host == "0.0.0.0" ? std::string{"127.0.0.1"} : impl_->host;
  return "http://" + host + ":" + std::to_string(impl_->port);
}

}  // namespace tidemark::observe
