// tc netem for nodes in network namespaces: command lines, a small posix_spawn runner that keeps
// the output, and the availability check (a kernel without sch_netem answers "Specified qdisc
// kind is unknown", which must fail a schedule, not be ignored).
#include "tidemark/chaos/netem.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

extern char** environ;

namespace tidemark::chaos {

namespace {

std::vector<std::string> in_namespace(const netns_device& d, std::vector<std::string> tc) {
  if (d.ns.empty()) return tc;
  std::vector<std::string> out{"ip", "netns", "exec", d.ns};
  out.insert(out.end(), tc.begin(), tc.end());
  return out;
}

std::string where(const netns_device& d) {
  return "device " + d.device + (d.ns.empty() ? "" : " in network namespace " + d.ns);
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

std::pair<std::string, netns_device> parse_netns(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw std::invalid_argument("'" + text + "': expected ID=NAMESPACE or ID=NAMESPACE:DEVICE");
  netns_device d;
  auto rest = text.substr(eq + 1);
  if (auto colon = rest.find(':'); colon != std::string::npos) {
    d.device = rest.substr(colon + 1);
    rest.resize(colon);
    if (d.device.empty() || rest.empty())
      throw std::invalid_argument("'" + text + "': expected ID=NAMESPACE or ID=NAMESPACE:DEVICE");
  }
  d.ns = rest;
  return {text.substr(0, eq), d};
}

std::optional<netem_settings> netem_for(const std::string& node,
                                        const std::vector<const fault*>& active) {
  std::optional<netem_settings> out;
  for (const auto* f : active) {
    if (f->kind != fault_kind::netem ||
        std::find(f->targets.begin(), f->targets.end(), node) == f->targets.end())
      continue;
    if (!out) out.emplace();
    out->delay = std::max(out->delay, f->delay);
    out->jitter = std::max(out->jitter, f->jitter);
    out->loss = std::max(out->loss, f->probability);
  }
  return out;
}

std::vector<std::string> netem_command(const netns_device& d,
                                       const std::optional<netem_settings>& s) {
  if (!s) return in_namespace(d, {"tc", "qdisc", "del", "dev", d.device, "root"});
  std::vector<std::string> tc{"tc", "qdisc", "replace", "dev", d.device, "root", "netem"};
  if (s->delay.count() > 0 || s->jitter.count() > 0) {
    tc.insert(tc.end(), {"delay", std::to_string(s->delay.count()) + "ms"});
    if (s->jitter.count() > 0) tc.push_back(std::to_string(s->jitter.count()) + "ms");
  }
  if (s->loss > 0) {
    char percent[32];
    std::snprintf(percent, sizeof percent, "%g%%", s->loss * 100);
    tc.insert(tc.end(), {"loss", percent});
  }
  return in_namespace(d, tc);
}

command_result run_command(const std::vector<std::string>& argv) {
  command_result r;
  int pipe_fds[2];
  if (argv.empty() || ::pipe2(pipe_fds, O_CLOEXEC) != 0) return {127, "cannot start a command"};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (spawned != 0) {
    ::close(pipe_fds[0]);
    return {127, "cannot run '" + argv[0] + "' (is it installed and on the PATH?)"};
  }
  char buf[512];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0;) r.output.append(buf, n);
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::optional<std::string> netem_unavailable(const netns_device& d, const command_runner& run) {
  auto tried = run(netem_command(d, netem_settings{}));
  if (tried.status == 0) {
    auto removed = run(netem_command(d, std::nullopt));
    if (removed.status == 0) return std::nullopt;
    return "tc netem on " + where(d) +
           ": the test qdisc could not be removed: " + trimmed(removed.output);
  }
  if (tried.output.find("qdisc kind is unknown") != std::string::npos)
    return "tc netem is not available on this kernel: " + trimmed(tried.output) +
           " (the sch_netem module is missing or cannot be loaded; tried on " + where(d) + ")";
  return "tc netem on " + where(d) + " failed (exit " + std::to_string(tried.status) +
         "): " + trimmed(tried.output);
}

}  // namespace tidemark::chaos
