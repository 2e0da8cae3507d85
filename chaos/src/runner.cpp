// The chaos runner: the reference run, the run under faults with the schedule applied from this
// thread while run_on_cluster drives the job on another, and the check. Network and storage
// faults are combined per node, because a fault command replaces the node's previous one; netem
// faults likewise, because a qdisc replaces the device's previous one.
#include "tidemark/chaos/runner.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <future>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

namespace tidemark::chaos {

namespace {

using clock = std::chrono::steady_clock;

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool declares(const job_spec& spec, const std::string& option) {
  return std::any_of(spec.options.begin(), spec.options.end(),
                     [&](const job_option_spec& o) { return o.name == option; });
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out{path};
  out << text;
  if (!out) throw std::runtime_error("cannot write '" + path.string() + "'");
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in{path};
  if (!in) throw std::runtime_error("cannot read '" + path.string() + "'");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The partition of `f` as sides: its own, or its targets against everyone else.
std::vector<std::vector<std::string>> sides_of(const fault& f, const cluster_config& cluster) {
  if (!f.sides.empty()) return f.sides;
  std::vector<std::string> rest{"coordinator"};
  for (const auto& n : cluster.nodes)
    if (std::find(f.targets.begin(), f.targets.end(), n.id) == f.targets.end())
      rest.push_back(n.id);
  return {f.targets, rest};
}

// The nodes whose fault command `f` changes.
std::set<std::string> nodes_touched(const fault& f, const cluster_config& cluster) {
  std::set<std::string> out;
  if (f.kind == fault_kind::partition) {
    for (const auto& side : sides_of(f, cluster))
      for (const auto& id : side)
        if (id != "coordinator") out.insert(id);
  } else {
    out.insert(f.targets.begin(), f.targets.end());
  }
  return out;
}

std::uint64_t results_so_far(const run_options& ro) {
  if (!ro.live) return 0;
  auto snap = ro.live->latest();
  if (!snap) return 0;
  double n = 0;
  for (const auto& i : snap->instances)
    for (const auto& op : i.operators)
      if (op.op == "history")
        if (auto it = op.extra.find("rows_committed"); it != op.extra.end()) n += it->second;
  return static_cast<std::uint64_t>(n);
}

// Applies and heals the faults of a run; owns the state a fault changes.
class fault_applier {
 public:
  fault_applier(const cluster_config& cluster, const chaos_options& opts)
      : cluster_(cluster), opts_(opts) {}

  void apply(std::size_t k, const fault& f, applied_fault& record) {
    record.started_ms = wall_ms();
    try {
      if (is_process_fault(f.kind)) {
        for (const auto& id : f.targets) {
          auto i = opts_.processes->index_of(id);
          if (f.kind == fault_kind::kill) opts_.processes->kill(i);
          if (f.kind == fault_kind::pause) opts_.processes->pause(i);
          if (f.kind == fault_kind::restart) opts_.processes->stop(i);
        }
      } else if (f.kind == fault_kind::netem) {
        netem_[k] = &f;
        set_netem(f.targets);
      } else {
        active_[k] = &f;
        send(nodes_touched(f, cluster_));
      }
    } catch (const std::exception& e) {
      record.note = std::string{"applying: "} + e.what();
      spdlog::warn("chaos: {}: {}", describe(f), record.note);
    }
    spdlog::info("chaos: {}", describe(f));
  }

  void heal(std::size_t k, const fault& f, applied_fault& record) {
    try {
      if (is_process_fault(f.kind)) {
        for (const auto& id : f.targets) {
          auto i = opts_.processes->index_of(id);
          if (f.kind == fault_kind::pause)
            opts_.processes->resume(i);
          else if (!opts_.processes->running(i))
            opts_.processes->start(i);
        }
      } else if (f.kind == fault_kind::netem) {
        netem_.erase(k);
        set_netem(f.targets);
      } else {
        active_.erase(k);
        send(nodes_touched(f, cluster_));
      }
    } catch (const std::exception& e) {
      record.note += (record.note.empty() ? "" : "; ") + std::string{"healing: "} + e.what();
      spdlog::warn("chaos: healing {}: {}", describe(f), e.what());
    }
    record.healed_ms = wall_ms();
  }

  /// Heals whatever is still in force (the run ended first) so the nodes are whole again.
  void heal_all(const std::vector<fault>& faults, std::vector<applied_fault>& records) {
    for (std::size_t k = 0; k < records.size(); ++k)
      if (records[k].started_ms > 0 && records[k].healed_ms == 0 &&
          (faults[k].duration.count() > 0 || !is_process_fault(faults[k].kind)))
        heal(k, faults[k], records[k]);
    if (opts_.processes)
      for (std::size_t i = 0; i < opts_.processes->size(); ++i) {
        opts_.processes->resume(i);
        if (!opts_.processes->running(i)) {
          try {
            opts_.processes->start(i);
          } catch (const std::exception& e) {
            spdlog::warn("chaos: restarting node '{}' after the run: {}",
                         opts_.processes->cluster.nodes[i].id, e.what());
          }
        }
      }
  }

 private:
  void send(const std::set<std::string>& nodes) {
    std::vector<const fault*> active;
    for (const auto& [k, f] : active_) active.push_back(f);
    for (const auto& id : nodes)
      opts_.inject(cluster_, id, command_for(id, active, cluster_, opts_.seed));
  }

  // Like a fault command, a qdisc replaces the previous one: each node gets the union of the
  // netem faults on it, or none.
  void set_netem(const std::vector<std::string>& nodes) {
    std::vector<const fault*> active;
    for (const auto& [k, f] : netem_) active.push_back(f);
    for (const auto& id : nodes) {
      const auto r = opts_.run_tc(netem_command(opts_.netns.at(id), netem_for(id, active)));
      if (r.status != 0)
        throw std::runtime_error("tc on node '" + id + "' (exit " + std::to_string(r.status) +
                                 "): " + r.output);
    }
  }

  const cluster_config& cluster_;
  const chaos_options& opts_;
  std::map<std::size_t, const fault*> active_;  // network and storage faults in force
  std::map<std::size_t, const fault*> netem_;   // netem faults in force
};

void check_applicable(const std::vector<fault>& faults, const cluster_config& cluster,
                      const chaos_options& opts) {
  std::set<std::string> probed;
  for (const auto& f : faults) {
    if (f.kind == fault_kind::netem) {
      // tc on the node's device: neither a fault command nor a signal
      for (const auto& id : f.targets) {
        auto it = opts.netns.find(id);
        if (it == opts.netns.end())
          throw std::runtime_error("fault " + describe(f) +
                                   ": netem acts on the network device of "
                                   "node '" +
                                   id + "' in its namespace: name it (--netns " + id +
                                   "=NAMESPACE[:DEVICE], chaos_options::netns)");
        if (!probed.insert(id).second) continue;
        if (auto why = netem_unavailable(it->second, opts.run_tc))
          throw std::runtime_error("fault " + describe(f) + ": " + *why);
      }
      continue;
    }
    if (!is_process_fault(f.kind) && opts.inject && !cluster.faults_allowed)
      throw std::runtime_error("fault " + describe(f) +
                               ": the cluster file does not say 'faults: allow', so the nodes "
                               "would refuse it (docs/deploy.md)");
    if (is_process_fault(f.kind) && !opts.processes)
      throw std::runtime_error("fault " + describe(f) +
                               ": kill, pause and restart need nodes started by this tool "
                               "(tidemark chaos run --start-nodes, or the chaos fixture)");
    if (!is_process_fault(f.kind) && !opts.inject)
      throw std::runtime_error("fault " + describe(f) +
                               ": network and storage faults need a fault injector "
                               "(chaos_options::inject, e.g. default_injector())");
  }
}

}  // namespace

fault_injector default_injector() {
  return [](const cluster_config& cluster, const std::string& node, const fault_command& cmd) {
    inject_faults(cluster, node, cmd);
  };
}

fault_command command_for(const std::string& node, const std::vector<const fault*>& active,
                          const cluster_config& cluster, std::uint64_t seed) {
  fault_command cmd;
  cmd.seed = seed * 1000003u + std::hash<std::string>{}(node);
  for (const auto* f : active) {
    const bool target = std::find(f->targets.begin(), f->targets.end(), node) != f->targets.end();
    switch (f->kind) {
      case fault_kind::partition: {
        auto sides = sides_of(*f, cluster);
        for (std::size_t s = 0; s < sides.size(); ++s) {
          if (std::find(sides[s].begin(), sides[s].end(), node) == sides[s].end()) continue;
          for (std::size_t o = 0; o < sides.size(); ++o)
            if (o != s) cmd.unreachable.insert(sides[o].begin(), sides[o].end());
        }
        break;
      }
      case fault_kind::slow_disk:
        if (target) cmd.storage.write_delay = std::max(cmd.storage.write_delay, f->delay);
        break;
      case fault_kind::disk_errors:
        if (target) cmd.storage.fail_writes = std::max(cmd.storage.fail_writes, f->probability);
        break;
      case fault_kind::drop:
      case fault_kind::delay:
      case fault_kind::duplicate:
      case fault_kind::reorder: {
        if (!target) break;
        std::vector<std::string> peers =
            f->peers.empty() ? std::vector<std::string>{"*"} : f->peers;
        for (const auto& p : peers) {
          auto& l = cmd.links[p];
          if (f->kind == fault_kind::drop) l.drop = std::max(l.drop, f->probability);
          if (f->kind == fault_kind::duplicate) l.duplicate = std::max(l.duplicate, f->probability);
          if (f->kind == fault_kind::reorder) l.reorder = std::max(l.reorder, f->probability);
          if (f->kind == fault_kind::delay) {
            l.delay = std::max(l.delay, f->delay);
            l.jitter = std::max(l.jitter, f->jitter);
          }
        }
        break;
      }
      default:
        break;
    }
  }
  cmd.storage.seed = cmd.seed;
  cmd.unreachable.erase(node);
  return cmd;
}

report run_chaos(const job_spec& spec, const job_options& options, const cluster_config& cluster,
                 const std::vector<fault>& faults, const chaos_options& opts) {
  if (!declares(spec, "history"))
    throw std::runtime_error("job '" + spec.name +
                             "' has no 'history' option: tidemark chaos records the results of a "
                             "job through it (chaos::record, see docs/fault-injection.md)");
  check_applicable(faults, cluster, opts);
  // absolute: nodes resolve the history option against their own working directory
  const auto out = std::filesystem::absolute(opts.out);
  if (std::filesystem::exists(out / "history") || std::filesystem::exists(out / "faults.json"))
    throw std::runtime_error("'" + out.string() +
                             "' holds an earlier chaos run: remove it or choose another --out");
  std::filesystem::create_directories(out);

  // the reference: embedded, no faults, as fast as the job allows
  auto reference = options;
  reference.set("history", (out / "reference").string());
  if (declares(spec, "rate")) reference.set("rate", "0");
  if (opts.progress) opts.progress("chaos: reference run of '" + spec.name + "' (no faults)");
  run_options quiet;
  quiet.print_summary = false;
  // Checkpoints only to keep the history's commits small: without them an exactly-once history
  // appends every result in one transaction at the end, which outgrows WiredTiger's cache for a
  // long run (670,000 results of the 5-minute benchmark failed with WT_ROLLBACK).
  const auto reference_checkpoints = out / "reference-checkpoints";
  quiet.checkpoints.dir = reference_checkpoints.string();
  quiet.checkpoints.interval = std::chrono::milliseconds{250};
  run_registered(spec, reference, quiet);
  std::filesystem::remove_all(reference_checkpoints);

  auto under_faults = options;
  under_faults.set("history", (out / "history").string());
  auto ro = opts.run;
  ro.print_summary = false;
  if (opts.checkpoint_interval.count() > 0) {
    ro.checkpoints.dir = (out / "checkpoints").string();
    ro.checkpoints.interval = opts.checkpoint_interval;
  }
  if (opts.progress && !ro.live) ro.live = std::make_shared<live_view>();

  std::vector<applied_fault> records(faults.size());
  for (std::size_t k = 0; k < faults.size(); ++k) records[k].planned = faults[k];
  // apply and heal events in time order; heals of faults that outlast the duration still happen
  struct event {
    std::chrono::milliseconds at;
    std::size_t fault;
    bool heal;
  };
  std::vector<event> events;
  for (std::size_t k = 0; k < faults.size(); ++k) {
    events.push_back({faults[k].at, k, false});
    if (faults[k].duration.count() > 0)
      events.push_back({faults[k].at + faults[k].duration, k, true});
  }
  std::stable_sort(events.begin(), events.end(), [](const event& a, const event& b) {
    return a.at < b.at || (a.at == b.at && a.heal && !b.heal);
  });

  run_facts facts;
  facts.started_ms = wall_ms();
  const auto started = clock::now();
  if (opts.progress)
    opts.progress("chaos: running '" + spec.name + "' on " + std::to_string(cluster.nodes.size()) +
                  " nodes under " + std::to_string(faults.size()) + " faults over " +
                  std::to_string(opts.duration.count() / 1000) + " s");
  auto running = std::async(std::launch::async,
                            [&] { return run_on_cluster(spec, under_faults, cluster, ro); });
  fault_applier applier{cluster, opts};
  std::size_t applied = 0;
  auto next_progress = started + opts.progress_period;
  std::size_t next = 0;
  while (true) {
    auto wake = next < events.size() ? started + events[next].at : clock::time_point::max();
    if (opts.progress) wake = std::min(wake, next_progress);
    if (running.wait_until(std::min(wake, clock::now() + std::chrono::hours{1})) ==
        std::future_status::ready)
      break;
    const auto now = clock::now();
    while (next < events.size() && started + events[next].at <= now) {
      const auto& e = events[next++];
      if (e.heal) {
        if (records[e.fault].started_ms > 0)
          applier.heal(e.fault, faults[e.fault], records[e.fault]);
      } else {
        applier.apply(e.fault, faults[e.fault], records[e.fault]);
        ++applied;
      }
    }
    if (opts.progress && now >= next_progress) {
      next_progress = now + opts.progress_period;
      char line[160];
      std::snprintf(line, sizeof line,
                    "chaos: %.0f s, %zu of %zu faults applied, %llu results committed",
                    std::chrono::duration<double>(now - started).count(), applied, faults.size(),
                    static_cast<unsigned long long>(results_so_far(ro)));
      opts.progress(line);
    }
  }
  try {
    facts.recoveries = running.get().recoveries;
  } catch (const std::exception& e) {
    facts.error = e.what();
  }
  facts.ended_ms = wall_ms();
  applier.heal_all(faults, records);
  // a fault whose time came after the job ended was never applied
  records.erase(std::remove_if(records.begin(), records.end(),
                               [](const applied_fault& r) { return r.started_ms == 0; }),
                records.end());
  write_file(out / "faults.json", faults_to_json(records, facts));
  return check_run(out);
}

report check_run(const std::filesystem::path& out) {
  if (!std::filesystem::exists(out / "faults.json"))
    throw std::runtime_error("'" + out.string() + "' holds no chaos run (no faults.json)");
  auto [faults, facts] = faults_from_json(read_file(out / "faults.json"));
  auto r = check(read_history((out / "reference").string()),
                 read_history((out / "history").string()), faults, facts);
  write_file(out / "report.json", r.to_json());
  write_timeline_png(r, (out / "timeline.png").string());
  return r;
}

}  // namespace tidemark::chaos
