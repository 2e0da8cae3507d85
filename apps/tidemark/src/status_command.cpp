// `tidemark status`: asks every node of the cluster file at once (query_cluster_status) and prints
// the nodes, then the plan of the job they run from their views.
#include "status_command.hpp"

#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "job_commands.hpp"
#include "tidemark/runtime/cluster_status.hpp"

namespace tidemark {

namespace {

/// A planner figure (-1: unknown) as a percentage or a number.
std::string figure(double v, bool percent) {
  if (v < 0) return "unknown";
  char text[32];
  std::snprintf(text, sizeof text, percent ? "%.2f %%" : "%.3f cores", percent ? v * 100 : v);
  return text;
}

nlohmann::json figure_json(double v) {
  return v < 0 ? nlohmann::json() : nlohmann::json(v);
}

std::string role(std::size_t copy) {
  return copy == 0 ? "primary" : "replica " + std::to_string(copy);
}

/// The status as text for a terminal.
std::string status_text(const cluster_status& s) {
  std::ostringstream out;
  out << "nodes:\n";
  for (const auto& n : s.nodes) {
    out << "  " << n.id << "  " << n.endpoint << "  ";
    if (!n.counters) {
      out << "no answer\n";
      continue;
    }
    const auto& c = *n.counters;
    out << (n.deployment ? "runs deployment " + std::to_string(n.deployment->deployment)
                         : std::string{"no job"})
        << "; frames in " << c.frames_in << ", batch frames in " << c.batch_frames_in << " ("
        << c.data_bytes_in << " data bytes), bad " << c.bad_frames << ", refused "
        << c.refused_peers + c.refused_control + c.refused_data << ", retransmitted "
        << c.retransmitted << "\n";
  }
  if (!s.plan) {
    out << "no job: no node that answered runs one\n";
    return out.str();
  }
  const auto& p = *s.plan;
  if (!s.disagreeing.empty()) {
    out << "the nodes disagree: ";
    for (const auto& id : s.disagreeing) out << id << ' ';
    out << "report another view; this is the newest (deployment " << p.deployment << ")\n";
  }
  out << "job '" << p.job << "', deployment " << p.deployment << ", on";
  for (const auto& id : p.nodes) out << ' ' << id;
  out << "; gone:";
  if (p.gone.empty()) out << " none";
  for (const auto& id : p.gone) out << ' ' << id;
  out << "\nreplication: spare budget " << figure(p.spare_budget, false) << ", replicas use "
      << figure(p.replica_load, false) << ", predicted availability "
      << figure(p.predicted_availability, true) << "\n";
  char line[160];
  std::snprintf(line, sizeof line, "  %5s %8s  %-20s %-10s %-10s %-18s %s\n", "stage", "instance",
                "operator", "copy", "node", "state", "lag (batches)");
  out << line;
  for (const auto& inst : p.instances)
    for (std::size_t c = 0; c < inst.copies.size(); ++c) {
      const auto& copy = inst.copies[c];
      auto state = std::string{to_string(copy.now)};
      if (!copy.was_on.empty()) state += " (was " + copy.was_on + ")";
      const auto lag = copy.lag ? std::to_string(*copy.lag) : std::string{"-"};
      std::snprintf(line, sizeof line, "  %5u %8u  %-20s %-10s %-10s %-18s %s\n", inst.stage,
                    inst.instance, inst.name.c_str(), role(c).c_str(), copy.node.c_str(),
                    state.c_str(), lag.c_str());
      out << line;
    }
  return out.str();
}

/// The status as JSON (docs/replication.md#visibility-tidemark-status lists the fields).
std::string status_json(const cluster_status& s) {
  using json = nlohmann::json;
  json nodes = json::array();
  for (const auto& n : s.nodes) {
    json node{{"id", n.id}, {"endpoint", n.endpoint}, {"answers", n.counters.has_value()}};
    if (n.counters) {
      const auto& c = *n.counters;
      node["counters"] = {
          {"frames_in", c.frames_in},         {"bad_frames", c.bad_frames},
          {"refused_peers", c.refused_peers}, {"refused_control", c.refused_control},
          {"refused_data", c.refused_data},   {"lost_frames", c.lost_frames},
          {"data_bytes_in", c.data_bytes_in}, {"batch_frames_in", c.batch_frames_in},
          {"retransmitted", c.retransmitted}};
    }
    node["deployment"] = n.deployment ? json(n.deployment->deployment) : json();
    nodes.push_back(std::move(node));
  }
  json out{{"nodes", std::move(nodes)}, {"disagreeing", s.disagreeing}, {"job", json()}};
  if (!s.plan) return out.dump(2) + "\n";
  const auto& p = *s.plan;
  json instances = json::array();
  for (const auto& inst : p.instances) {
    json copies = json::array();
    for (std::size_t c = 0; c < inst.copies.size(); ++c) {
      const auto& copy = inst.copies[c];
      copies.push_back({{"copy", c},
                        {"node", copy.node},
                        {"state", to_string(copy.now)},
                        {"was_on", copy.was_on.empty() ? json() : json(copy.was_on)},
                        {"lag", copy.lag ? json(*copy.lag) : json()}});
    }
    instances.push_back({{"stage", inst.stage},
                         {"instance", inst.instance},
                         {"operator", inst.name},
                         {"copies", std::move(copies)}});
  }
  out["job"] = {{"name", p.job},
                {"deployment", p.deployment},
                {"nodes", p.nodes},
                {"gone", p.gone},
                {"spare_budget", figure_json(p.spare_budget)},
                {"replica_load", figure_json(p.replica_load)},
                {"predicted_availability", figure_json(p.predicted_availability)},
                {"instances", std::move(instances)}};
  return out.dump(2) + "\n";
}

}  // namespace

void add_status_command(CLI::App& app) {
  auto cluster_file = std::make_shared<std::string>();
  auto insecure = std::make_shared<bool>(false);
  auto json = std::make_shared<bool>(false);
  auto timeout_ms = std::make_shared<std::int64_t>(2000);
  auto* cmd = app.add_subcommand(
      "status",
      "ask every node of a cluster what it runs: counters, the job's plan, replicas, lag");
  cmd->add_option("--cluster", *cluster_file, "cluster file (YAML, see docs/deploy.md)")
      ->required();
  cmd->add_flag("--insecure", *insecure, "the cluster runs in plain text (as `run --insecure`)");
  cmd->add_flag("--json", *json, "print JSON instead of text");
  cmd->add_option("--timeout-ms", *timeout_ms,
                  "how long to wait for the nodes' answers (default 2000); a node silent that long "
                  "is shown as not answering");
  cmd->callback([cluster_file, insecure, json, timeout_ms] {
    const auto cluster = cluster_config::load(*cluster_file);
    confirm_insecure(cluster, *insecure);
    const auto s = query_cluster_status(cluster, std::chrono::milliseconds{*timeout_ms});
    std::cout << (*json ? status_json(s) : status_text(s));
  });
}

}  // namespace tidemark
