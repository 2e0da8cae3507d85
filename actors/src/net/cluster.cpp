// The cluster file (YAML), placement of stage instances on nodes and its check, endpoints (see
// cluster.hpp).
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "tidemark/runtime/cluster.hpp"

#include "tidemark/replication/availability.hpp"
#include "tidemark/replication/graph_adapter.hpp"

#include "channels.hpp"

namespace tidemark {
namespace {

std::string resolve(const std::filesystem::path& base, const std::string& p) {
  std::filesystem::path path{p};
  return (path.is_absolute() ? path : base / path).string();
}

// The `replication` section: `replicate` (named operators) or `spare` (planned), not both.
template <class Where>
void read_replication(const YAML::Node& r, cluster_config& c, const Where& where) {
  if (!r.IsMap()) throw std::runtime_error(where("'replication' must be a map"));
  auto& planned = c.planned;
  auto name = [&](const char* key, auto parse, auto& into) {
    if (!r[key]) return;
    const auto text = r[key].as<std::string>();
    auto value = parse(text);
    if (!value) throw std::runtime_error(where("replication: unknown " + std::string{key} + " '" + text + "'"));
    into = *value;
  };
  for (const auto& e : r) {
    const auto key = e.first.as<std::string>();
    if (key == "replicate") {
      // a list of names (one replica each) or a map of name -> replicas
      for (const auto& op : e.second) {
        if (op.IsScalar())
          c.replicate[op.as<std::string>()] = 1;
        else
          c.replicate[op.first.as<std::string>()] = op.second.as<std::uint32_t>();
      }
    } else if (key == "spare") {
      planned.spare = e.second.as<std::string>();
      if (!replication::parse_spare(planned.spare, 1))
        throw std::runtime_error(where("replication: spare '" + planned.spare +
                                       "' is not a number of cores >= 0 or a share such as 50%"));
    } else if (key == "query_level") {
      planned.planner.query_level = e.second.as<bool>();
    } else if (key == "replicas") {
      planned.planner.max_level = e.second.as<std::uint32_t>();
      if (planned.planner.max_level < 1)
        throw std::runtime_error(where("replication: 'replicas' (per instance, at most) must be >= 1"));
    } else if (key == "seed") {
      planned.planner.seed = e.second.as<std::uint64_t>();
    } else if (key == "failure_probability") {
      planned.failure_probability = e.second.as<double>();
      if (!(planned.failure_probability >= 0 && planned.failure_probability <= 1))
        throw std::runtime_error(where("replication: 'failure_probability' must be in [0, 1]"));
    } else if (key == "replan_interval_ms") {
      planned.replan_interval = std::chrono::milliseconds{e.second.as<long>()};
    } else if (key == "replan_threshold") {
      planned.replan_threshold = e.second.as<double>();
    } else if (key != "heuristic" && key != "selection" && key != "placement") {
      throw std::runtime_error(where("replication: unknown field '" + key + "' (replicate, spare, "
                                     "heuristic, selection, placement, query_level, replicas, seed, "
                                     "failure_probability, replan_interval_ms, replan_threshold)"));
    }
  }
  name("heuristic", replication::parse_heuristic, planned.planner.importance);
  name("selection", replication::parse_selection, planned.planner.selection);
  name("placement", replication::parse_placement, planned.planner.placement);
  if (!c.replicate.empty() && !planned.spare.empty())
    throw std::runtime_error(where("replication: 'replicate' names the replicas, 'spare' lets the "
                                   "planner choose them: give one of the two"));
}

/// `checkpoint: {copies: N, retain: R}`; without `copies`, one copy when there is another node.
template <class Where>
void read_checkpoint(const YAML::Node& doc, cluster_config& c, const Where& where) {
  const auto nodes = static_cast<std::uint32_t>(c.nodes.size());
  c.checkpoint.copies = std::min<std::uint32_t>(1, nodes - 1);
  if (!doc) return;
  if (!doc.IsMap())
    throw std::runtime_error(where("'checkpoint' must be a map like {copies: 1, retain: 3}"));
  for (const auto& e : doc) {
    const auto key = e.first.as<std::string>();
    if (key == "copies") {
      const auto copies = e.second.as<long>();
      if (copies < 0 || copies >= nodes)
        throw std::runtime_error(where(
            "checkpoint: 'copies' is " + std::to_string(copies) + ": it must be at least 0 and "
            "less than the number of nodes (" + std::to_string(nodes) + "), since a node's "
            "pieces are copied to other nodes"));
      c.checkpoint.copies = static_cast<std::uint32_t>(copies);
    } else if (key == "retain") {
      const auto retain = e.second.as<long>();
      if (retain < 1)
        throw std::runtime_error(where("checkpoint: 'retain' is " + std::to_string(retain) +
                                       ": the nodes must keep at least 1 checkpoint"));
      c.checkpoint.retain = static_cast<std::uint32_t>(retain);
    } else {
      throw std::runtime_error(where("checkpoint: unknown field '" + key + "' (copies, retain)"));
    }
  }
}

/// `broker: {node: n2, port: 1883}`: a node of the file, a TCP port.
template <class Where>
void read_broker(const YAML::Node& doc, cluster_config& c, const Where& where) {
  if (!doc.IsMap())
    throw std::runtime_error(where("'broker' must be a map like {node: n2, port: 1883}"));
  for (const auto& e : doc) {
    const auto key = e.first.as<std::string>();
    if (key == "node")
      c.broker.node = e.second.as<std::string>();
    else if (key == "port")
      c.broker.port = e.second.as<int>();
    else
      throw std::runtime_error(where("broker: unknown field '" + key + "' (node, port)"));
  }
  if (!c.find(c.broker.node))
    throw std::runtime_error(where("broker: 'node' is '" + c.broker.node +
                                   "', which is no node id of 'nodes'"));
  if (c.broker.port < 1 || c.broker.port > 65535)
    throw std::runtime_error(where("broker: 'port' is " + std::to_string(c.broker.port) +
                                   ": it must be a TCP port (1 to 65535)"));
}

/// The host of a node's endpoint: `tcp://10.0.0.5:7100` -> `10.0.0.5`, `tcp://[::1]:7100` -> `::1`.
std::string endpoint_host(const std::string& endpoint) {
  auto host = endpoint.substr(0, endpoint.rfind(':'));
  if (host.rfind("tcp://", 0) == 0) host = host.substr(6);
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  return host;
}

}  // namespace

cluster_config cluster_config::load(const std::string& path) {
  YAML::Node doc;
  try {
    doc = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    throw std::runtime_error("cluster file '" + path + "': " + e.what());
  }
  auto base = std::filesystem::path{path}.parent_path();
  auto where = [&](const std::string& what) { return "cluster file '" + path + "': " + what; };
  cluster_config c;
  try {
    c.insecure = doc["insecure"].as<bool>(false);
    c.heartbeat_timeout = std::chrono::milliseconds{doc["heartbeat_timeout_ms"].as<long>(1000)};
    c.heartbeat_interval = std::chrono::milliseconds{
        doc["heartbeat_interval_ms"].as<long>(std::max<long>(1, c.heartbeat_timeout.count() / 4))};
    c.max_message_bytes = doc["max_message_bytes"].as<std::int64_t>(c.max_message_bytes);
    if (!doc["nodes"] || !doc["nodes"].IsSequence() || doc["nodes"].size() == 0)
      throw std::runtime_error(where("'nodes' must list at least one node"));
    for (const auto& n : doc["nodes"]) {
      cluster_node node;
      node.id = n["id"].as<std::string>("");
      node.endpoint = n["endpoint"].as<std::string>("");
      node.cpu = n["cpu"].as<double>(1.0);
      if (!(node.cpu > 0)) throw std::runtime_error(where("node '" + node.id + "': 'cpu' must be > 0"));
      if (node.id.empty() || node.endpoint.empty())
        throw std::runtime_error(where("every node needs 'id' and 'endpoint'"));
      if (c.find(node.id)) throw std::runtime_error(where("node id '" + node.id + "' appears twice"));
      if (n["public_key"])
        node.public_key = n["public_key"].as<std::string>();
      else if (n["public_key_file"])
        node.public_key = key_pair::load_public(resolve(base, n["public_key_file"].as<std::string>()));
      else if (!c.insecure)
        throw std::runtime_error(where("node '" + node.id +
                                       "' needs 'public_key' or 'public_key_file' (or insecure: true)"));
      c.nodes.push_back(std::move(node));
    }
    if (doc["coordinator_key"])
      c.coordinator = key_pair::load(resolve(base, doc["coordinator_key"].as<std::string>()));
    else if (!c.insecure)
      throw std::runtime_error(where("'coordinator_key' (the coordinator's .key file) is missing"));
    if (doc["faults"]) {
      const auto faults = doc["faults"].as<std::string>();
      if (faults != "allow" && faults != "deny")
        throw std::runtime_error(where("'faults' is '" + faults + "': write 'allow' (the chaos "
                                       "tool may inject faults) or 'deny' (the default)"));
      c.faults_allowed = faults == "allow";
    }
    if (doc["on_loss"]) {
      const auto on_loss = doc["on_loss"].as<std::string>();
      if (on_loss != "continue" && on_loss != "stop")
        throw std::runtime_error(where("'on_loss' is '" + on_loss + "': write 'continue' (a lost "
                                       "node stops only the queries it breaks) or 'stop' (the "
                                       "default: recover from a checkpoint or fail)"));
      c.continue_on_loss = on_loss == "continue";
    }
    if (doc["pins"])
      for (const auto& p : doc["pins"]) c.pins[p.first.as<std::string>()] = p.second.as<std::string>();
    if (const auto r = doc["replication"]) read_replication(r, c, where);
    read_checkpoint(doc["checkpoint"], c, where);
    if (const auto b = doc["broker"]) read_broker(b, c, where);
  } catch (const YAML::Exception& e) {
    throw std::runtime_error(where(e.what()));
  }
  return c;
}

std::optional<std::uint32_t> cluster_config::find(const std::string& id) const {
  for (std::uint32_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].id == id) return i;
  return std::nullopt;
}

std::string cluster_config::broker_address() const {
  const auto n = find(broker.node);
  return n ? endpoint_host(nodes[*n].endpoint) + ":" + std::to_string(broker.port) : std::string{};
}

std::vector<std::uint32_t> place(const logical_graph& g, const physical_plan& p,
                                 const cluster_config& cluster) {
  if (cluster.nodes.empty()) throw job_error("the cluster has no nodes");
  std::map<std::string, std::uint32_t> pinned;
  for (const auto& [op, node] : cluster.pins) {
    auto idx = cluster.find(node);
    if (!idx) throw job_error("pin '" + op + "': no node '" + node + "' in the cluster");
    bool known = false;
    for (const auto& n : g.nodes()) known |= n.name == op;
    if (!known) throw job_error("pin '" + op + "': the job has no operator of that name");
    pinned[op] = *idx;
  }
  std::vector<std::optional<std::uint32_t>> pin(p.stages.size());
  for (std::size_t s = 0; s < p.stages.size(); ++s)
    for (const auto& op : p.stages[s].ops)
      if (auto it = pinned.find(g.node(op.node).name); it != pinned.end()) pin[s] = it->second;
  const auto load = instance_loads(g, p, cluster);

  std::vector<std::uint32_t> placement(load.size());
  std::vector<std::size_t> stage_of(load.size());
  std::vector<std::pair<double, std::size_t>> free;  // (load, instance) of the unpinned ones
  std::vector<double> used(cluster.nodes.size());
  std::vector<std::size_t> count(cluster.nodes.size());
  // instances of each stage on each node
  std::vector<std::vector<std::size_t>> spread(p.stages.size(), count);
  for (std::size_t s = 0, instance = 0; s < p.stages.size(); ++s)
    for (std::uint32_t i = 0; i < p.stages[s].parallelism; ++i, ++instance) {
      stage_of[instance] = s;
      if (!pin[s]) {
        free.emplace_back(load[instance], instance);
        continue;
      }
      placement[instance] = *pin[s];
      used[*pin[s]] += load[instance];
      ++count[*pin[s]];
    }
  // heaviest first (equal loads in instance order), each on the node running the fewest instances
  // of its stage (a data-parallel stage uses the cores of as many nodes as it can), among those
  // the one whose share of its CPU is the least with it, then the one running fewer instances,
  // then the first in the file. Shares within a rounding error are equal (sums of equal estimates
  // differ in the last bits).
  std::stable_sort(free.begin(), free.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  auto share = [&](std::uint32_t n, double l) { return (used[n] + l) / cluster.nodes[n].cpu; };
  for (const auto& item : free) {
    const double l = item.first;  // a plain variable: C++17 lambdas cannot capture a binding
    const std::size_t instance = item.second;
    auto& same = spread[stage_of[instance]];
    auto better = [&](std::uint32_t n, std::uint32_t best) {
      if (same[n] != same[best]) return same[n] < same[best];
      const double a = share(n, l), b = share(best, l), close = 1e-9 * std::max(a, b);
      if (a < b - close || a > b + close) return a < b;
      return count[n] < count[best];
    };
    std::uint32_t best = 0;
    for (std::uint32_t n = 1; n < used.size(); ++n)
      if (better(n, best)) best = n;
    placement[instance] = best;
    used[best] += l;
    ++count[best];
    ++same[best];
  }
  return placement;
}

std::map<std::string, double> stage_load_from_report(const std::string& json) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string{"the report is not JSON: "} + e.what());
  }
  if (!doc.contains("instances") || !doc["instances"].is_array())
    throw std::runtime_error("the report has no 'instances' list (write it with tidemark run --report)");
  const double seconds = doc.value("seconds", 0.0);
  if (!(seconds > 0)) throw std::runtime_error("the report has no run time ('seconds' > 0)");
  std::map<std::string, double> load;
  for (const auto& inst : doc["instances"]) {
    const auto& ops = inst.value("operators", nlohmann::json::array());
    if (ops.empty() || !inst.contains("busy_ms"))
      throw std::runtime_error("a report instance lacks 'operators' or 'busy_ms': " + inst.dump());
    load[ops.front().at("name").get<std::string>()] += inst["busy_ms"].get<double>() / 1e3 / seconds;
  }
  return load;
}

std::vector<double> instance_loads(const logical_graph& g, const physical_plan& p,
                                   const cluster_config& cluster) {
  std::vector<std::optional<double>> stage(p.stages.size());  // per instance, when measured
  double measured = 0;
  std::size_t measured_instances = 0;
  for (std::size_t s = 0; s < p.stages.size(); ++s) {
    const auto& st = p.stages[s];
    for (const auto& op : st.ops)
      if (auto it = cluster.operator_load.find(g.node(op.node).name);
          it != cluster.operator_load.end())
        stage[s] = stage[s].value_or(0) + it->second / st.parallelism;
    if (stage[s]) {
      measured += *stage[s] * st.parallelism;
      measured_instances += st.parallelism;
    }
  }
  if (!cluster.operator_load.empty() && measured_instances == 0)
    throw job_error("placement load: it names no operator of this job (a report of another job?)");
  std::vector<double> load;
  if (measured_instances > 0) {
    const double mean = measured / measured_instances;
    for (std::size_t s = 0; s < p.stages.size(); ++s)
      load.insert(load.end(), p.stages[s].parallelism, stage[s].value_or(mean));
    return load;
  }
  // the estimate: every operator of an instance's stage costs the same, and the instances of the
  // job together use half of the nodes' CPU
  double cpu = 0, operators = 0;
  for (const auto& n : cluster.nodes) cpu += n.cpu;
  for (const auto& st : p.stages) operators += static_cast<double>(st.ops.size() * st.parallelism);
  for (const auto& st : p.stages)
    load.insert(load.end(), st.parallelism,
                cpu / 2 * static_cast<double>(st.ops.size()) / std::max(1.0, operators));
  return load;
}

spare_plan plan_spare_replicas(const logical_graph& g, const physical_plan& p,
                               const std::vector<std::uint32_t>& placement,
                               const cluster_config& cluster, const std::vector<double>& load,
                               const std::vector<std::vector<std::uint32_t>>* running) {
  const auto& planned = cluster.planned;
  if (planned.spare.empty()) throw job_error("the cluster file plans no replicas (replication: spare)");
  const auto loops = loops_of(p);
  if (std::any_of(loops.begin(), loops.end(), [](std::int32_t l) { return l >= 0; }))
    throw job_error("a job with a loop (job::iterate) runs without "
                    "replicas; remove `replication: spare` from the cluster file");
  std::vector<replication::host_info> hosts;
  for (const auto& n : cluster.nodes) hosts.push_back({n.id, n.cpu});
  try {
    const auto m = replication::model_from_plan(
        g, p, load, std::move(hosts), {placement.begin(), placement.end()});
    auto options = planned.planner;
    options.spare = replication::parse_spare(planned.spare, replication::total_load(m));
    const replication::simulation_options sim{planned.failure_probability, 1000,
                                              planned.planner.seed};
    const auto without = replication::simulate_availability(m, {}, sim).running;
    auto judged = [&](replication::replica_plan plan) {
      spare_plan result;
      result.budget = *options.spare;
      for (std::size_t k = 0; k < plan.replicas.size(); ++k)
        result.replica_load += m.operators[k].load * static_cast<double>(plan.replicas[k].size());
      result.availability = replication::simulate_availability(m, plan, sim).running;
      result.availability_without = without;
      result.replicas = std::move(plan.replicas);
      return result;
    };
    auto fresh = judged(replication::plan_replicas(m, options));
    if (!running || running->size() != placement.size()) return fresh;
    // the running replicas stay while they fit the load and budget and the new plan is not
    // clearly more available: plans of equal worth (copies on either of two idle nodes) must
    // not make the job move back and forth
    replication::replica_plan kept;
    kept.replicas = *running;
    auto current = judged(kept);
    std::vector<double> used(cluster.nodes.size());
    for (std::size_t k = 0; k < placement.size(); ++k) {
      used.at(placement[k]) += m.operators[k].load;
      for (auto n : (*running)[k]) used.at(n) += m.operators[k].load;
    }
    bool fits = current.replica_load <= current.budget * (1 + 1e-9);
    for (std::size_t n = 0; n < used.size(); ++n) fits = fits && used[n] <= cluster.nodes[n].cpu;
    constexpr double min_gain = 0.001;  // a tenth of a percentage point of the queries
    return fits && fresh.availability <= current.availability + min_gain ? current : fresh;
  } catch (const replication::model_error& e) {
    throw job_error(std::string{"replication: "} + e.what());
  }
}

std::vector<std::vector<std::uint32_t>> place_replicas(const logical_graph& g,
                                                       const physical_plan& p,
                                                       const std::vector<std::uint32_t>& placement,
                                                       const cluster_config& cluster) {
  std::vector<std::vector<std::uint32_t>> replicas(placement.size());
  const auto nodes = static_cast<std::uint32_t>(cluster.nodes.size());
  for (const auto& [name, copies] : cluster.replicate) {
    std::optional<std::uint32_t> stage;
    for (std::uint32_t s = 0; s < p.stages.size(); ++s)
      for (const auto& op : p.stages[s].ops)
        if (g.node(op.node).name == name) stage = s;
    const auto what = "replicate '" + name + "': ";
    if (!stage) throw job_error(what + "the job has no operator of that name");
    for (const auto& op : p.stages[*stage].ops) {
      const auto& n = g.node(op.node);
      if (n.kind == node_kind::source || n.kind == node_kind::sink)
        throw job_error(what + "it runs in one actor with " +
                        (n.kind == node_kind::source ? "the source '" : "the sink '") + n.name +
                        "', and sources and sinks are not replicated (a source's copy would read "
                        "the input twice, a sink's would write the output twice): replicate an "
                        "operator that is not fused with them");
    }
    if (copies + 1 > nodes)
      throw job_error(what + std::to_string(copies) + " replica(s) per instance need " +
                      std::to_string(copies + 1) + " nodes (no two copies on one node), the "
                      "cluster has " + std::to_string(nodes));
    const auto first = net::instance_offsets(p)[*stage];
    for (std::uint32_t i = 0; i < p.stages[*stage].parallelism; ++i) {
      auto& r = replicas.at(first + i);
      r.clear();
      for (std::uint32_t c = 1; c <= copies; ++c)
        r.push_back((placement.at(first + i) + c) % nodes);
    }
  }
  return replicas;
}

void check_placement(const logical_graph& g, const physical_plan& p,
                     const std::vector<std::uint32_t>& placement, const cluster_config& cluster,
                     const std::vector<std::vector<std::uint32_t>>& replicas) {
  auto offsets = net::instance_offsets(p);
  auto instances = p.stages.empty() ? 0 : offsets.back() + p.stages.back().parallelism;
  if (placement.size() != instances)
    throw job_error("the placement lists " + std::to_string(placement.size()) +
                    " stage instances, the plan has " + std::to_string(instances));
  std::vector<std::string> ids;
  for (const auto& n : cluster.nodes) ids.push_back(n.id);
  auto check_node = [&](std::uint32_t n) {
    if (n >= ids.size())
      throw job_error("the placement names node " + std::to_string(n) + ", the cluster has " +
                      std::to_string(ids.size()));
  };
  for (auto n : placement) check_node(n);
  for (const auto& r : replicas)
    for (auto n : r) check_node(n);
  const detail::placement where{placement, 0, replicas};
  net::check_codecs(net::enumerate_channels(g, p, detail::wire(p, where.replica_counts())),
                    offsets, where, ids);
}

std::string data_endpoint(const std::string& control) {
  auto colon = control.rfind(':');
  int port = 0;
  try {
    port = colon == std::string::npos ? 0 : std::stoi(control.substr(colon + 1));
  } catch (const std::exception&) {
  }
  if (port <= 0 || port >= 65535)
    throw std::runtime_error("endpoint '" + control +
                             "' needs a TCP port below 65535, e.g. tcp://0.0.0.0:7100");
  return control.substr(0, colon + 1) + std::to_string(port + 1);
}

std::string local_address_towards(const cluster_config& cluster) {
  if (cluster.nodes.empty()) throw std::runtime_error("the cluster has no nodes");
  const auto& endpoint = cluster.nodes.front().endpoint;
  const auto host = endpoint_host(endpoint);
  auto fail = [&](const std::string& why) {
    return std::runtime_error("cannot find this host's address towards node '" +
                              cluster.nodes.front().id + "' at " + endpoint + ": " + why);
  };
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), "9", &hints, &found); rc != 0) throw fail(gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owned{found, &::freeaddrinfo};
  // connecting a UDP socket sends nothing: it only asks the kernel for the route and its source
  int fd = ::socket(found->ai_family, SOCK_DGRAM, 0);
  if (fd < 0) throw fail("no socket");
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  const bool ok = ::connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0;
  ::close(fd);
  char text[NI_MAXHOST] = {};
  if (!ok || ::getnameinfo(reinterpret_cast<sockaddr*>(&local), len, text, sizeof text, nullptr, 0,
                           NI_NUMERICHOST) != 0)
    throw fail("no route");
  return text;
}

}  // namespace tidemark
