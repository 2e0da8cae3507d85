// Key pairs, the ZAP handler and socket security settings (see security.hpp).
#include "security.hpp"

#include <sys/stat.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <spdlog/spdlog.h>

#ifndef ZMQ_ZAP_ENFORCE_DOMAIN
#define ZMQ_ZAP_ENFORCE_DOMAIN 93  // a DRAFT option in libzmq 4.3 headers, honoured by the library
#endif

namespace tidemark {
namespace {

std::string field(const std::string& path, const std::string& text, const std::string& name) {
  auto at = text.find(name + " = ");
  if (at == std::string::npos)
    throw std::runtime_error("key file '" + path + "' has no '" + name + " = ...' line");
  auto start = at + name.size() + 3;
  auto value = text.substr(start, text.find('\n', start) - start);
  if (value.size() != 40)
    throw std::runtime_error("key file '" + path + "': " + name + " must be 40 Z85 characters");
  return value;
}

std::string read_file(const std::string& path) {
  std::ifstream in{path};
  if (!in) throw std::runtime_error("cannot read key file '" + path + "'");
  return {std::istreambuf_iterator<char>{in}, {}};
}

}  // namespace

key_pair key_pair::generate() {
  std::array<char, 41> pub{}, sec{};
  if (zmq_curve_keypair(pub.data(), sec.data()) != 0)
    throw std::runtime_error("libzmq has no CURVE support: cannot generate keys");
  return {pub.data(), sec.data()};
}

key_pair key_pair::load(const std::string& path) {
  auto text = read_file(path);
  return {field(path, text, "public-key"), field(path, text, "secret-key")};
}

std::string key_pair::load_public(const std::string& path) {
  return field(path, read_file(path), "public-key");
}

void key_pair::save(const std::string& dir, const std::string& name) const {
  std::filesystem::create_directories(dir);
  auto base = (std::filesystem::path{dir} / name).string();
  {
    std::ofstream out{base + ".key"};
    if (!out) throw std::runtime_error("cannot write '" + base + ".key'");
    out << "# Tidemark CURVE key pair of '" << name << "': keep secret\n"
        << "public-key = " << public_key << "\nsecret-key = " << secret_key << "\n";
  }
  ::chmod((base + ".key").c_str(), 0600);
  std::ofstream pub{base + ".pub"};
  if (!pub) throw std::runtime_error("cannot write '" + base + ".pub'");
  pub << "# Tidemark public key of '" << name << "'\npublic-key = " << public_key << "\n";
}

namespace net {

zap_handler::zap_handler(zmq::context_t& ctx, std::set<std::string> allowed, std::string owner)
    : socket_(ctx, zmq::socket_type::rep), allowed_(std::move(allowed)), owner_(std::move(owner)) {
  socket_.bind("inproc://zeromq.zap.01");
  socket_.set(zmq::sockopt::rcvtimeo, 100);
  thread_ = std::thread{[this] { serve(); }};
}

zap_handler::~zap_handler() {
  stop_ = true;
  thread_.join();
}

void zap_handler::serve() {
  while (!stop_) {
    std::vector<zmq::message_t> req;
    zmq::message_t part;
    if (!socket_.recv(part)) continue;
    req.push_back(std::move(part));
    while (req.back().more()) {
      zmq::message_t next;
      (void)socket_.recv(next);
      req.push_back(std::move(next));
    }
    // version, request id, domain, address, identity, mechanism, credentials...
    std::string status = "400", text = "not allowed", user;
    auto str = [&](std::size_t i) { return i < req.size() ? req[i].to_string() : std::string{}; };
    const auto domain = str(2), address = str(3), mechanism = str(5);
    if (str(0) != "1.0") {
      text = "bad ZAP version";
    } else if (domain != zap_domain) {
      text = "wrong ZAP domain";
    } else if (mechanism != "CURVE" || req.size() < 7 || req[6].size() != 32) {
      text = "CURVE required";
    } else {
      std::array<char, 41> z85{};
      zmq_z85_encode(z85.data(), static_cast<const std::uint8_t*>(req[6].data()), 32);
      if (allowed_.count(z85.data())) {
        status = "200";
        text = "OK";
        user = z85.data();
      }
    }
    if (status != "200") {
      ++refused_;
      spdlog::warn("{}: refused peer {} ({}): {}", owner_, address, mechanism, text);
    }
    socket_.send(zmq::buffer(std::string{"1.0"}), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(str(1)), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(status), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(text), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(user), zmq::send_flags::sndmore);
    socket_.send(zmq::message_t{}, zmq::send_flags::none);
  }
}

void make_server(zmq::socket_t& s, const key_pair& own, bool insecure, std::int64_t max_bytes) {
  s.set(zmq::sockopt::maxmsgsize, max_bytes);
  s.set(zmq::sockopt::linger, 0);
  if (insecure) return;
  s.set(zmq::sockopt::curve_server, 1);
  s.set(zmq::sockopt::curve_secretkey, own.secret_key);
  s.set(zmq::sockopt::zap_domain, zap_domain);
  int on = 1;
  s.setsockopt(ZMQ_ZAP_ENFORCE_DOMAIN, &on, sizeof on);
}

void make_client(zmq::socket_t& s, const key_pair& own, const std::string& server, bool insecure,
                 std::int64_t max_bytes) {
  s.set(zmq::sockopt::maxmsgsize, max_bytes);
  s.set(zmq::sockopt::linger, 0);
  if (insecure) return;
  s.set(zmq::sockopt::curve_serverkey, server);
  s.set(zmq::sockopt::curve_publickey, own.public_key);
  s.set(zmq::sockopt::curve_secretkey, own.secret_key);
}

std::set<std::string> load_allow_list(const std::string& dir) {
  std::set<std::string> keys;
  for (const auto& e : std::filesystem::directory_iterator{dir}) {
    auto ext = e.path().extension();
    if (ext == ".pub" || ext == ".key") keys.insert(key_pair::load_public(e.path().string()));
  }
  return keys;
}

void warn_insecure(const std::string& who) {
  spdlog::warn(
      "{} runs with --insecure: ZeroMQ traffic is plain text and unauthenticated; anyone "
      "who can reach its ports can deploy jobs and inject data",
      who);
}

}  // namespace net
}  // namespace tidemark
