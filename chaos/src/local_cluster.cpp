// Starting and signalling local node processes (posix_spawn, kill, waitpid); free ports are found
// by binding both ports of a node before it starts.
#include "tidemark/chaos/local_cluster.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace tidemark::chaos {

namespace {

bool port_free(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

// `count` consecutive free ports, starting somewhere that depends on the process and on how many
// clusters it made, so parallel tests rarely try the same ones; all below Linux's ephemeral range
// (32768 and up), where a client connection of any process may take the port a node wants to bind.
int free_ports(int count) {
  static int clusters = 0;
  constexpr int first = 20000;
  const int span = 32768 - first - count;
  int base = first + ((::getpid() % 400) * 30 + (clusters++ % 5) * 6) % span;
  for (int tries = 0; tries < 200; ++tries, base = first + (base - first + 97) % span) {
    bool all = true;
    for (int p = base; p < base + count && all; ++p) all = port_free(p);
    if (all) return base;
  }
  throw std::runtime_error("local cluster: no " + std::to_string(count) +
                           " consecutive free loopback ports in 20000-32767");
}

bool local_endpoint(const std::string& endpoint) {
  for (const char* host : {"tcp://127.", "tcp://localhost:", "tcp://[::1]:"})
    if (endpoint.rfind(host, 0) == 0) return true;
  return false;
}

std::filesystem::path fresh_temp_dir() {
  auto pattern = (std::filesystem::temp_directory_path() / "tidemark-chaos-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("cannot create a folder " + pattern);
  return pattern;
}

}  // namespace

std::string sibling_binary(const std::string& name) {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto candidate = self.parent_path() / name;
    if (std::filesystem::exists(candidate)) return candidate.string();
  }
  return name;
}

local_cluster::local_cluster(local_cluster_options opts) : opts_(std::move(opts)) {
  owns_dir_ = opts_.dir.empty();
  dir = owns_dir_ ? fresh_temp_dir() : opts_.dir;
  keys_dir_ = (dir / "keys").string();
  data_dir_ = dir;
  cluster.coordinator = key_pair::generate();
  cluster.coordinator.save(keys_dir_, "coordinator");
  cluster.connect_timeout = std::chrono::milliseconds{3000};
  cluster.faults_allowed = opts_.allow_faults;
  const int base = free_ports(static_cast<int>(opts_.nodes) * 2);
  for (std::size_t i = 0; i < opts_.nodes; ++i) {
    auto id = "n" + std::to_string(i + 1);
    auto keys = key_pair::generate();
    keys.save(keys_dir_, id);
    const auto host = opts_.host ? opts_.host(i) : std::string{"127.0.0.1"};
    cluster.nodes.push_back(
        {id, "tcp://" + host + ":" + std::to_string(base + static_cast<int>(i) * 2), keys.public_key});
  }
  init_processes();
}

local_cluster::local_cluster(cluster_config existing, std::string keys_dir,
                             std::filesystem::path data_dir, local_cluster_options opts)
    : dir(data_dir),
      cluster(std::move(existing)),
      opts_(std::move(opts)),
      keys_dir_(std::move(keys_dir)),
      data_dir_(std::move(data_dir)) {
  for (const auto& n : cluster.nodes)
    if (!local_endpoint(n.endpoint))
      throw std::runtime_error("node '" + n.id + "' at " + n.endpoint +
                               " is not on this host: only nodes on loopback addresses can be "
                               "started here (and killed, paused or restarted)");
  init_processes();
}

void local_cluster::init_processes() {
  // The lifeline: nodes inherit the read end only (the write end closes on exec), so when this
  // process ends, however it ends, every node it started sees end of file and stops.
  if (::pipe2(lifeline_, O_CLOEXEC) != 0 || ::fcntl(lifeline_[0], F_SETFD, 0) != 0)
    throw std::runtime_error(std::string{"local cluster: cannot create the nodes' lifeline pipe: "} +
                             std::strerror(errno));
  pids_.assign(cluster.nodes.size(), 0);
  paused_.assign(cluster.nodes.size(), false);
  try {
    for (std::size_t i = 0; i < cluster.nodes.size(); ++i) start(i);
  } catch (...) {
    for (std::size_t i = 0; i < pids_.size(); ++i)
      if (pids_[i] > 0) kill(i);
    ::close(lifeline_[0]);
    ::close(lifeline_[1]);
    if (owns_dir_) std::filesystem::remove_all(dir);
    throw;
  }
}

local_cluster::~local_cluster() {
  for (std::size_t i = 0; i < pids_.size(); ++i)
    if (pids_[i] > 0) stop(i);
  ::close(lifeline_[0]);
  ::close(lifeline_[1]);
  if (owns_dir_) {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
}

std::size_t local_cluster::index_of(const std::string& id) const {
  if (auto i = cluster.find(id)) return *i;
  throw std::runtime_error("no node '" + id + "' in the local cluster");
}

void local_cluster::start(std::size_t i) {
  const auto& n = cluster.nodes.at(i);
  if (pids_[i] > 0) throw std::runtime_error("node '" + n.id + "' is already running");
  std::vector<std::string> args = opts_.launcher ? opts_.launcher(i) : std::vector<std::string>{};
  for (std::string a : {opts_.node_binary, std::string{"--id"}, n.id, std::string{"--listen"},
                        n.endpoint, std::string{"--data-dir"}, (data_dir_ / n.id).string(),
                        std::string{"--keys"}, keys_dir_, std::string{"--lifeline"},
                        std::to_string(lifeline_[0])})
    args.push_back(std::move(a));
  if (opts_.allow_faults) args.emplace_back("--allow-faults");
  if (opts_.extra_args)
    for (auto& a : opts_.extra_args(i)) args.push_back(a);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (::posix_spawnp(&pid, args.front().c_str(), nullptr, nullptr, argv.data(), environ) != 0)
    throw std::runtime_error("cannot start node '" + n.id + "': cannot run " + args.front());
  pids_[i] = pid;
  paused_[i] = false;
  const auto deadline = std::chrono::steady_clock::now() + opts_.start_timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (query_status(n.endpoint, cluster, std::chrono::milliseconds{100})) return;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      pids_[i] = 0;
      throw std::runtime_error("node '" + n.id + "' (" + opts_.node_binary +
                               ") exited at start with " +
                               (WIFEXITED(status) ? "code " + std::to_string(WEXITSTATUS(status))
                                                  : "signal " + std::to_string(WTERMSIG(status))));
    }
  }
  throw std::runtime_error("node '" + n.id + "' did not answer within " +
                           std::to_string(opts_.start_timeout.count()) + " ms of its start");
}

void local_cluster::kill(std::size_t i) {
  if (pids_.at(i) <= 0) return;
  ::kill(pids_[i], SIGKILL);
  ::waitpid(pids_[i], nullptr, 0);
  pids_[i] = 0;
  paused_[i] = false;
}

void local_cluster::stop(std::size_t i) {
  if (pids_.at(i) <= 0) return;
  if (paused_[i]) resume(i);
  ::kill(pids_[i], SIGTERM);
  // a node that does not stop within 10 s is killed, so a test never hangs on it
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
  while (::waitpid(pids_[i], nullptr, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pids_[i], SIGKILL);
      ::waitpid(pids_[i], nullptr, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  }
  pids_[i] = 0;
}

void local_cluster::pause(std::size_t i) {
  if (pids_.at(i) <= 0 || paused_[i]) return;
  ::kill(pids_[i], SIGSTOP);
  paused_[i] = true;
}

void local_cluster::resume(std::size_t i) {
  if (pids_.at(i) <= 0 || !paused_[i]) return;
  ::kill(pids_[i], SIGCONT);
  paused_[i] = false;
}

bool local_cluster::running(std::size_t i) const {
  return pids_.at(i) > 0;
}
bool local_cluster::paused(std::size_t i) const {
  return paused_.at(i);
}

node_status local_cluster::status(std::size_t i) const {
  auto s = query_status(cluster.nodes.at(i).endpoint, cluster, std::chrono::milliseconds{2000});
  if (!s) throw std::runtime_error("node '" + cluster.nodes[i].id + "' does not answer");
  return *s;
}

void local_cluster::write_cluster_file(const std::string& path) const {
  // the coordinator's key pair as a file the cluster file can name
  const auto key_dir = std::filesystem::path{path}.parent_path() / "coordinator-key";
  cluster.coordinator.save(key_dir.string(), "coordinator");
  std::ofstream out{path};
  out << "# written by tidemark::chaos::local_cluster\n";
  out << "coordinator_key: " << (std::filesystem::absolute(key_dir) / "coordinator.key").string()
      << "\n";
  out << "heartbeat_timeout_ms: " << cluster.heartbeat_timeout.count() << "\n";
  if (opts_.allow_faults) out << "faults: allow\n";
  out << "checkpoint: {copies: " << std::min<std::size_t>(cluster.checkpoint.copies, cluster.nodes.size() - 1)
      << ", retain: " << cluster.checkpoint.retain << "}\n";
  out << "nodes:\n";
  for (const auto& n : cluster.nodes)
    out << "  - id: " << n.id << "\n    endpoint: " << n.endpoint << "\n    public_key: \""
        << n.public_key << "\"\n";
  if (!cluster.pins.empty()) {
    out << "pins:\n";
    for (const auto& [op, node] : cluster.pins) out << "  " << op << ": " << node << "\n";
  }
  if (!out) throw std::runtime_error("cannot write cluster file '" + path + "'");
}

}  // namespace tidemark::chaos
