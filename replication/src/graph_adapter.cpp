// From a logical graph (and its JSON form) to the replication model: instances, edge shares,
// one query per sink node, annotated costs and primary placement.
#include "tidemark/replication/graph_adapter.hpp"

#include "tidemark/core/metrics.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace tidemark::replication {

namespace {

// What one logical operator did over an interval, summed over its instances.
struct operator_counters {
  double in = 0;
  double out = 0;
  double busy_s = 0;
};

// Per operator name. A fused stage reports one busy time for its chain: each operator gets the
// share of the events it handled (input events, output events for a source).
std::map<std::string, operator_counters> counters_by_operator(
    const std::vector<instance_metrics>& instances) {
  std::map<std::string, operator_counters> per_name;
  for (const auto& inst : instances) {
    auto handled = [](const operator_metrics& m) {
      return static_cast<double>(m.events_in ? m.events_in : m.events_out);
    };
    double all = 0;
    for (const auto& m : inst.operators) all += handled(m);
    for (const auto& m : inst.operators) {
      auto& t = per_name[m.name];
      t.in += static_cast<double>(m.events_in);
      t.out += static_cast<double>(m.events_out);
      double share = all > 0 ? handled(m) / all : 1.0 / static_cast<double>(inst.operators.size());
      t.busy_s += share * static_cast<double>(inst.busy_ns) * 1e-9;
    }
  }
  return per_name;
}

std::map<std::string, operator_annotation> annotations_over(
    const std::map<std::string, operator_counters>& per_name, double seconds) {
  if (!(seconds > 0)) throw model_error("the run lasted no time: nothing was measured");
  std::map<std::string, operator_annotation> result;
  for (const auto& [name, t] : per_name) {
    auto& a = result[name];
    if (t.in > 0) {
      a.measured_input_rate = t.in / seconds;
      a.selectivity = t.out / t.in;
    } else {
      a.source_rate = t.out / seconds;
    }
    a.measured_load = t.busy_s / seconds;
  }
  return result;
}

// `after` minus `before`, stage instance by stage instance (operators in chain order).
std::vector<instance_metrics> difference(const std::vector<instance_metrics>& before,
                                         const std::vector<instance_metrics>& after) {
  std::map<std::pair<std::uint32_t, std::uint32_t>, const instance_metrics*> start;
  for (const auto& inst : before) start[{inst.stage, inst.instance}] = &inst;
  std::vector<instance_metrics> delta = after;
  for (auto& d : delta) {
    auto it = start.find({d.stage, d.instance});
    if (it == start.end()) continue;
    const auto& b = *it->second;
    d.busy_ns -= std::min(d.busy_ns, b.busy_ns);
    for (std::size_t k = 0; k < d.operators.size() && k < b.operators.size(); ++k) {
      auto& m = d.operators[k];
      m.events_in -= std::min(m.events_in, b.operators[k].events_in);
      m.events_out -= std::min(m.events_out, b.operators[k].events_out);
    }
  }
  return delta;
}

}  // namespace

std::map<std::string, operator_annotation> measured_annotations(const job_result& r) {
  return annotations_over(counters_by_operator(r.instances), r.seconds);
}

std::map<std::string, operator_annotation> measured_annotations(
    const std::vector<instance_metrics>& before, const std::vector<instance_metrics>& after,
    double seconds) {
  return annotations_over(counters_by_operator(difference(before, after)), seconds);
}

namespace {

std::string instance_name(const logical_node& n, std::uint32_t i) {
  return n.parallelism == 1 ? n.name : n.name + "[" + std::to_string(i) + "]";
}

host_index find_host(const std::vector<host_info>& hosts, const std::string& name,
                     const std::string& who) {
  for (host_index h = 0; h < hosts.size(); ++h)
    if (hosts[h].name == name) return h;
  throw model_error(who + " is placed on unknown host '" + name + "'");
}

}  // namespace

replication_model model_from_graph(const logical_graph& g,
                                   const std::map<std::string, operator_annotation>& annotations,
                                   std::vector<host_info> hosts) {
  if (auto problem = validate(g)) throw model_error(*problem);
  for (const auto& [name, a] : annotations) {
    bool known = false;
    for (const auto& n : g.nodes()) known = known || n.name == name;
    if (!known) throw model_error("annotation for unknown operator '" + name + "'");
  }
  replication_model m;
  m.hosts = std::move(hosts);
  std::vector<op_index> first(g.nodes().size());  // first instance of each node
  std::size_t placed = 0;
  const auto order = *g.topological_order();  // validate() ruled out cycles
  for (auto id : order) {
    const auto& n = g.node(id);
    first[id] = static_cast<op_index>(m.operators.size());
    operator_annotation a;
    if (auto it = annotations.find(n.name); it != annotations.end()) a = it->second;
    if (!a.hosts.empty() && a.hosts.size() != n.parallelism)
      throw model_error("operator '" + n.name + "' names " + std::to_string(a.hosts.size()) +
                        " hosts for " + std::to_string(n.parallelism) + " instances");
    placed += !a.hosts.empty();
    double par = n.parallelism;
    for (std::uint32_t i = 0; i < n.parallelism; ++i) {
      operator_info op;
      op.name = instance_name(n, i);
      op.source_rate = a.source_rate / par;
      op.cost = a.cost;
      op.selectivity = a.selectivity;
      op.bytes_in = a.bytes_in;
      op.bytes_out = a.bytes_out;
      if (a.measured_input_rate) op.measured_input_rate = *a.measured_input_rate / par;
      if (a.measured_load) op.measured_load = *a.measured_load / par;
      for (const auto& e : n.inputs) {
        const auto& from = g.node(e.from);
        bool pairwise = e.part == partitioning::forward && from.parallelism == n.parallelism;
        double share = e.part == partitioning::broadcast ? 1.0 : 1.0 / par;
        for (std::uint32_t j = 0; j < from.parallelism; ++j)
          if (!pairwise || j == i) op.inputs.push_back({first[e.from] + j, pairwise ? 1.0 : share});
      }
      m.primary.push_back(
          a.hosts.empty() ? 0 : find_host(m.hosts, a.hosts[i], "operator '" + op.name + "'"));
      m.operators.push_back(std::move(op));
    }
  }
  for (auto id : order) {
    const auto& n = g.node(id);
    if (n.kind != node_kind::sink) continue;
    std::vector<op_index> sinks;
    for (std::uint32_t i = 0; i < n.parallelism; ++i) sinks.push_back(first[id] + i);
    m.queries.push_back(upstream_query(m.operators, sinks, n.name));
  }
  if (placed != 0 && placed != g.nodes().size())
    throw model_error("some operators name their hosts and others do not: place all or none");
  if (m.hosts.empty()) throw model_error("the model has no hosts: add at least one");
  apply_load_model(m);
  if (placed == 0) place_primaries(m);
  if (auto problem = validate(m)) throw model_error(*problem);
  return m;
}

live_model model_from_live(const logical_graph& g, const live_measurement& m,
                           std::vector<host_info> hosts) {
  auto annotations = measured_annotations(m.before, m.after, m.seconds);
  // the node of each operator instance, by the model's instance name
  std::map<std::string, std::string> node_of_instance;
  for (const auto& inst : m.after) {
    if (inst.stage >= m.node_of.size() || inst.instance >= m.node_of[inst.stage].size()) continue;
    for (const auto& om : inst.operators) {
      const auto& nodes = g.nodes();
      auto n = std::find_if(nodes.begin(), nodes.end(),
                            [&](const logical_node& x) { return x.name == om.name; });
      if (n == nodes.end())
        throw model_error("the live metrics name operator '" + om.name +
                          "', which the job's graph does not have");
      node_of_instance[instance_name(*n, om.instance)] = m.node_of[inst.stage][inst.instance];
    }
  }
  bool on_hosts = !g.nodes().empty();
  for (const auto& n : g.nodes())
    for (std::uint32_t i = 0; i < n.parallelism; ++i) {
      auto it = node_of_instance.find(instance_name(n, i));
      on_hosts = on_hosts && it != node_of_instance.end() &&
                 std::any_of(hosts.begin(), hosts.end(),
                             [&](const host_info& h) { return h.name == it->second; });
    }
  if (on_hosts)
    for (const auto& n : g.nodes()) {
      auto& a = annotations[n.name];
      for (std::uint32_t i = 0; i < n.parallelism; ++i)
        a.hosts.push_back(node_of_instance[instance_name(n, i)]);
    }
  live_model result{model_from_graph(g, annotations, std::move(hosts)), {}, on_hosts};
  for (const auto& op : result.model.operators) {
    auto it = node_of_instance.find(op.name);
    result.measured_on.push_back(it == node_of_instance.end() ? "" : it->second);
  }
  return result;
}

replication_model model_from_plan(const logical_graph& g, const physical_plan& p,
                                  const std::vector<double>& instance_load,
                                  std::vector<host_info> hosts,
                                  const std::vector<host_index>& primary) {
  std::vector<op_index> first;  // flat index of each stage's first instance
  std::size_t instances = 0;
  for (const auto& st : p.stages) {
    first.push_back(static_cast<op_index>(instances));
    instances += st.parallelism;
  }
  if (instance_load.size() != instances || primary.size() != instances)
    throw model_error("the plan has " + std::to_string(instances) + " stage instances, given " +
                      std::to_string(instance_load.size()) + " loads and " +
                      std::to_string(primary.size()) + " primary hosts");
  replication_model m;
  m.hosts = std::move(hosts);
  m.primary = primary;
  for (std::uint32_t s = 0; s < p.stages.size(); ++s) {
    const auto& st = p.stages[s];
    const auto& head = g.node(st.ops.front().node);
    bool replicable = true;
    for (const auto& op : st.ops) {
      const auto kind = g.node(op.node).kind;
      replicable = replicable && kind != node_kind::source && kind != node_kind::sink;
    }
    for (std::uint32_t i = 0; i < st.parallelism; ++i) {
      operator_info op;
      op.name = st.parallelism == 1 ? head.name : head.name + "[" + std::to_string(i) + "]";
      op.measured_load = instance_load[first[s] + i];
      op.replicable = replicable;
      for (const auto& e : p.edges) {
        if (e.to != s) continue;
        const auto senders = p.stages[e.from].parallelism;
        const bool paired = pointwise(e, p);
        const double share = e.part == partitioning::broadcast ? 1.0 : 1.0 / st.parallelism;
        for (std::uint32_t j = 0; j < senders; ++j)
          if (!paired || j == i) op.inputs.push_back({first[e.from] + j, paired ? 1.0 : share});
      }
      m.operators.push_back(std::move(op));
    }
  }
  for (std::uint32_t s = 0; s < p.stages.size(); ++s)
    for (const auto& op : p.stages[s].ops) {
      const auto& n = g.node(op.node);
      if (n.kind != node_kind::sink) continue;
      std::vector<op_index> sinks;
      for (std::uint32_t i = 0; i < p.stages[s].parallelism; ++i) sinks.push_back(first[s] + i);
      m.queries.push_back(upstream_query(m.operators, sinks, n.name));
    }
  apply_load_model(m);
  if (auto problem = validate(m)) throw model_error(*problem);
  return m;
}

namespace {

using nlohmann::json;

// Reads the fields of one JSON object, rejecting fields it was not asked for.
class fields {
 public:
  fields(const json& j, std::string where) : j_(j), where_(std::move(where)) {
    if (!j.is_object()) fail("must be a JSON object");
  }
  /// Names the object in later messages, once it is known (e.g. after reading "name").
  void rename(std::string where) { where_ = std::move(where); }
  [[noreturn]] void fail(const std::string& what) const { throw model_error(where_ + " " + what); }

  std::optional<double> number(const char* key) {
    seen_.push_back(key);
    if (!j_.contains(key)) return std::nullopt;
    const auto& v = j_[key];
    if (!v.is_number()) fail(std::string{"field '"} + key + "' must be a number");
    return v.get<double>();
  }
  std::optional<std::string> text(const char* key) {
    seen_.push_back(key);
    if (!j_.contains(key)) return std::nullopt;
    const auto& v = j_[key];
    if (!v.is_string()) fail(std::string{"field '"} + key + "' must be a string");
    return v.get<std::string>();
  }
  const json* any(const char* key) {
    seen_.push_back(key);
    return j_.contains(key) ? &j_[key] : nullptr;
  }
  void done() const {
    for (const auto& [key, v] : j_.items())
      if (std::find(seen_.begin(), seen_.end(), key) == seen_.end())
        fail("has unknown field '" + key + "'");
  }

 private:
  const json& j_;
  std::string where_;
  std::vector<std::string> seen_;
};

std::vector<host_info> parse_hosts(const json& j, const std::string& origin) {
  std::vector<host_info> hosts;
  auto one = [](fields& f, host_info h) {
    h.cpu_capacity = f.number("cpu").value_or(h.cpu_capacity);
    h.net_capacity = f.number("network").value_or(h.net_capacity);
    return h;
  };
  if (j.is_object()) {
    fields f{j, origin + ": 'hosts'"};
    auto count = f.number("count");
    if (!count || *count < 1 || *count != static_cast<std::uint32_t>(*count))
      f.fail("needs 'count', a whole number >= 1");
    host_info h = one(f, {});
    f.done();
    for (std::uint32_t i = 0; i < static_cast<std::uint32_t>(*count); ++i) {
      h.name = "h" + std::to_string(i);
      hosts.push_back(h);
    }
    return hosts;
  }
  if (!j.is_array()) throw model_error(origin + ": 'hosts' must be an array or an object");
  for (std::size_t i = 0; i < j.size(); ++i) {
    fields f{j[i], origin + ": host #" + std::to_string(i)};
    host_info h;
    h.name = f.text("name").value_or("h" + std::to_string(i));
    h = one(f, h);
    f.done();
    hosts.push_back(h);
  }
  return hosts;
}

partitioning parse_partitioning(const std::string& s, fields& f) {
  for (auto p : {partitioning::forward, partitioning::rebalance, partitioning::key_hash,
                 partitioning::broadcast})
    if (s == to_string(p)) return p;
  f.fail("has unknown partitioning '" + s + "': use forward, rebalance, key_hash or broadcast");
}

}  // namespace

replication_model model_from_json(const std::string& text, const std::string& origin) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    throw model_error(origin + ": not valid JSON (" + e.what() + ")");
  }
  fields top{doc, origin + ":"};
  const json* hosts_j = top.any("hosts");
  const json* ops_j = top.any("operators");
  top.done();
  if (!hosts_j) top.fail("needs 'hosts'");
  if (!ops_j || !ops_j->is_array() || ops_j->empty())
    top.fail("needs 'operators', a non-empty array");
  auto hosts = parse_hosts(*hosts_j, origin);

  logical_graph g;
  std::map<std::string, node_id> ids;
  std::vector<std::vector<std::pair<std::string, partitioning>>> inputs;
  std::vector<std::optional<std::string>> kinds;
  std::map<std::string, operator_annotation> annotations;
  for (std::size_t k = 0; k < ops_j->size(); ++k) {
    const auto& oj = (*ops_j)[k];
    std::string where = origin + ": operator #" + std::to_string(k);
    fields named{oj, where};
    auto name = named.text("name");
    if (!name || name->empty()) named.fail("needs a non-empty 'name'");
    where += " ('" + *name + "')";
    named.rename(where);
    if (ids.count(*name)) named.fail("repeats the name of an earlier operator");
    logical_node n;
    n.name = *name;
    n.op = named.text("op").value_or("");
    kinds.push_back(named.text("kind"));
    auto par = named.number("parallelism").value_or(1);
    if (par < 1 || par != static_cast<std::uint32_t>(par))
      named.fail("field 'parallelism' must be a whole number >= 1");
    n.parallelism = static_cast<std::uint32_t>(par);
    operator_annotation a;
    a.source_rate = named.number("rate").value_or(0);
    a.cost = named.number("cost").value_or(0);
    a.selectivity = named.number("selectivity").value_or(1);
    a.bytes_in = named.number("bytes_in").value_or(0);
    a.bytes_out = named.number("bytes_out").value_or(0);
    a.measured_input_rate = named.number("input_rate");
    a.measured_load = named.number("load");
    for (auto [key, v] : {std::pair{"rate", a.source_rate},
                          {"cost", a.cost},
                          {"selectivity", a.selectivity},
                          {"bytes_in", a.bytes_in},
                          {"bytes_out", a.bytes_out},
                          {"input_rate", a.measured_input_rate.value_or(0)},
                          {"load", a.measured_load.value_or(0)}})
      if (!(v >= 0)) named.fail(std::string{"field '"} + key + "' must be >= 0");
    std::vector<std::pair<std::string, partitioning>> ins;
    if (const json* in = named.any("inputs")) {
      if (!in->is_array()) named.fail("field 'inputs' must be an array");
      for (const auto& e : *in) {
        if (e.is_string()) {
          ins.emplace_back(e.get<std::string>(), partitioning::forward);
          continue;
        }
        fields ef{e, where + " input"};
        auto from = ef.text("from");
        if (!from) ef.fail("needs 'from', the name of an operator");
        auto part = parse_partitioning(ef.text("partitioning").value_or("forward"), ef);
        ef.done();
        ins.emplace_back(*from, part);
      }
    }
    if (const json* hs = named.any("hosts")) {
      if (!hs->is_array()) named.fail("field 'hosts' must be an array of host names");
      for (const auto& h : *hs) {
        if (!h.is_string()) named.fail("field 'hosts' must be an array of host names");
        a.hosts.push_back(h.get<std::string>());
      }
    }
    named.done();
    ids[*name] = g.add(std::move(n));
    inputs.push_back(std::move(ins));
    annotations[*name] = std::move(a);
  }
  // Inputs may name operators listed later; kinds default to the node's place in the graph.
  for (node_id id = 0; id < g.nodes().size(); ++id)
    for (const auto& [from, part] : inputs[id]) {
      auto it = ids.find(from);
      if (it == ids.end())
        throw model_error(origin + ": operator '" + g.node(id).name +
                          "' reads from unknown operator '" + from + "'");
      g.node(id).inputs.push_back({it->second, part});
    }
  for (node_id id = 0; id < g.nodes().size(); ++id) {
    auto& n = g.node(id);
    const auto& kind = kinds[id];
    if (!kind)
      n.kind = n.inputs.empty()          ? node_kind::source
               : g.consumers(id).empty() ? node_kind::sink
                                         : node_kind::transform;
    else if (*kind == "source")
      n.kind = node_kind::source;
    else if (*kind == "sink")
      n.kind = node_kind::sink;
    else if (*kind == "transform")
      n.kind = node_kind::transform;
    else
      throw model_error(origin + ": operator '" + n.name + "' has unknown kind '" + *kind +
                        "': use source, transform or sink");
  }
  try {
    return model_from_graph(g, annotations, std::move(hosts));
  } catch (const model_error& e) {
    throw model_error(origin + ": " + e.what());
  }
}

}  // namespace tidemark::replication
