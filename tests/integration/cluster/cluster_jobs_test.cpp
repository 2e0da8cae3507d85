// Every registered job (the registry's list, read at run time) on three real tidemark-node
// processes — each in a network namespace with its own address when the test can make them,
// on loopback otherwise, and the log says which — with every operator a stage of its own (equal
// estimated loads, so placed round robin), so every node runs part of it: the job's outputs equal the embedded run's with the
// same options, and every node received data from another (its data_bytes_in grew). Jobs with
// timezones (figure1) run too: their synchronizers run in the coordinator. With
// the broker pinned to n2 in the cluster file (issue 18, point 2), riot-etl's broker runs as a
// child of n2's node process and the outputs equal the embedded run's; a broker n2 cannot start
// fails the deployment naming n2.
#define BOOST_TEST_MODULE cluster_jobs
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "../../support/environment.hpp"
#include "../../support/lines.hpp"
#include "../../support/mosquitto_broker.hpp"
#include "../../support/result_rows.hpp"
#include "../../support/wait_until.hpp"
#include "jobs.hpp"
#include "tidemark/chaos/local_cluster.hpp"
#include "tidemark/riot/io/mqtt_tasks.hpp"

using namespace tidemark;
using namespace std::chrono_literals;

namespace {

using tidemark::test::sorted_lines;

// ---- where the nodes run --------------------------------------------------------------------

/// Three network namespaces, each with a veth pair to a bridge in this namespace (where the
/// coordinator and the broker run), as scripts/netns-cluster.sh makes them. `reason` says why
/// they could not be made (then the nodes run on loopback).
struct network_namespaces {
  static constexpr const char* tag = "tmcj";
  static constexpr const char* subnet = "10.213.78";  // only on the bridge and in these namespaces
  bool made = false;
  std::string reason;

  network_namespaces() {
    if (::geteuid() != 0) {
      reason = "creating network namespaces needs root";
      return;
    }
    if (!run("ip -V")) {
      reason = "the ip command (iproute2) is missing";
      return;
    }
    remove();  // left over by a run that was killed
    const std::string t = tag;
    bool ok = run("ip link add " + t + "br type bridge") &&
              run("ip addr add " + bridge_address() + "/24 dev " + t + "br") &&
              run("ip link set " + t + "br up");
    for (int i = 1; ok && i <= 3; ++i) {
      const auto ns = t + "n" + std::to_string(i), veth = t + "v" + std::to_string(i);
      ok = run("ip netns add " + ns) && run("ip link add " + veth + " type veth peer name eth0 netns " + ns) &&
           run("ip link set " + veth + " master " + t + "br up") &&
           run("ip -n " + ns + " addr add " + address(i - 1) + "/24 dev eth0") &&
           run("ip -n " + ns + " link set eth0 up") && run("ip -n " + ns + " link set lo up");
    }
    if (!ok) {
      reason = "cannot create network namespaces or a bridge here";
      remove();
      return;
    }
    made = true;
  }
  ~network_namespaces() {
    if (made) remove();
  }
  network_namespaces(const network_namespaces&) = delete;
  network_namespaces& operator=(const network_namespaces&) = delete;

  static std::string address(std::size_t i) { return std::string{subnet} + "." + std::to_string(i + 1); }
  static std::string bridge_address() { return std::string{subnet} + ".254"; }
  static std::string name(std::size_t i) { return std::string{tag} + "n" + std::to_string(i + 1); }

 private:
  static bool run(const std::string& command) {
    return std::system((command + " >/dev/null 2>&1").c_str()) == 0;  // NOLINT(concurrency-mt-unsafe)
  }
  static void remove() {
    for (int i = 0; i < 3; ++i) run("ip netns del " + name(static_cast<std::size_t>(i)));
    run(std::string{"ip link del "} + tag + "br");
  }
};

chaos::local_cluster_options node_options(const network_namespaces& ns) {
  chaos::local_cluster_options o;
  o.node_binary = tidemark::test::node_binary();
  o.nodes = 3;
  if (ns.made) {
    o.host = [](std::size_t i) { return network_namespaces::address(i); };
    o.launcher = [](std::size_t i) {
      return std::vector<std::string>{"ip", "netns", "exec", network_namespaces::name(i)};
    };
  }
  return o;
}

// ---- what a job wrote -------------------------------------------------------------------------

/// A job's outputs, by name: lines sorted where their order is not defined.
using outputs = std::map<std::string, std::vector<std::string>>;

/// Every file of `dir` (recursively) whose name starts with `prefix`: name and sorted lines.
void add_files(outputs& out, const std::filesystem::path& dir, const std::string& prefix = "") {
  if (!std::filesystem::exists(dir)) return;
  for (const auto& f : std::filesystem::recursive_directory_iterator(dir))
    if (f.is_regular_file() && f.path().filename().string().rfind(prefix, 0) == 0)
      out["file " + std::filesystem::relative(f.path(), dir).string()] = sorted_lines(f.path());
}

void add_table(outputs& out, const std::string& dir, const std::string& table) {
  auto& lines = out["table " + table];
  for (const auto& [k, v] : test::table_rows(dir, table)) lines.push_back(k + " = " + v);
}

/// The figures of a RIoTBench report that do not depend on timing: messages in and out per output.
void add_riot_report(outputs& out, const std::filesystem::path& dir) {
  auto report = nlohmann::json::parse(std::ifstream{dir / "report.json"});
  auto& lines = out["report.json counts"];
  lines.push_back("messages_in " + report["messages_in"].dump());
  for (const auto& [name, o] : report["outputs"].items())
    lines.push_back("output " + name + " " + o["messages"].dump());
}

/// Collects what arrives on an MQTT topic while a job runs.
class topic_recorder {
 public:
  topic_recorder(const riot::io::local_mosquitto& broker, const std::string& host, const std::string& topic)
      : topic_(topic) {
    riot::io::mqtt_broker b;
    b.host = host;
    b.port = broker.port();
    sub_ = std::make_unique<riot::io::mqtt_subscribe>(riot::io::mqtt_subscribe_config{b, topic, 0, 1000000});
  }
  /// The payloads, sorted, after at least `n` arrived (or 10 s passed) and nothing more came.
  void add_to(outputs& out, std::uint64_t n) {
    std::vector<std::string> got;
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (got.size() < n && std::chrono::steady_clock::now() < deadline)
      if (auto m = sub_->poll(50ms)) got.push_back(m->payload);
    while (auto m = sub_->poll(200ms)) got.push_back(m->payload);
    std::sort(got.begin(), got.end());
    out["mqtt " + topic_] = std::move(got);
  }

 private:
  std::string topic_;
  std::unique_ptr<riot::io::mqtt_subscribe> sub_;
};

// ---- the jobs ---------------------------------------------------------------------------------

/// Counts of a job whose windows fire revisions on processing time (Aion's late triggers) that
/// depend on timing: a window's output and everything downstream of it ("NAME in", "NAME out"),
/// except what passes a `_final` filter — the final result of each window does not.
std::set<std::string> revision_counts(const job& j) {
  const auto& g = j.graph();
  auto final_filter = [](const logical_node& n) {
    return n.op == "filter" && n.name.size() > 6 && n.name.compare(n.name.size() - 6, 6, "_final") == 0;
  };
  std::set<node_id> revised;  // nodes that receive revisions (ids follow their inputs)
  std::set<std::string> keys;
  for (const auto& n : g.nodes()) {
    if (n.op == "window") keys.insert(n.name + " out");
    for (const auto& e : n.inputs) {
      const auto& from = g.node(e.from);
      if (from.op == "window" || (revised.count(from.id) && !final_filter(from))) revised.insert(n.id);
    }
    if (!revised.count(n.id)) continue;
    keys.insert(n.name + " in");
    if (!final_filter(n)) keys.insert(n.name + " out");
  }
  return keys;
}

/// How the test runs one job: small options (`{dir}` stands for the run's own folder), the topics
/// it publishes to, what else it writes, and the operator counts ("NAME in", "NAME out") that
/// depend on timing.
struct job_case {
  std::vector<std::string> args;
  std::vector<std::string> topics;  ///< needs a broker (--broker is added) and records these
  std::function<void(outputs&, const std::filesystem::path& dir)> written;
  std::function<std::set<std::string>(const job&)> timing_dependent_counts;
  /// Why some output is compared only in part (logged).
  std::string note;
};

const std::string fast = "1e9";  // riot --speed: the recorded timing compressed to nothing

std::map<std::string, job_case> cases() {
  std::map<std::string, job_case> c;
  c["example-window-count"] = {
      {"--events", "20000", "--keys", "37", "--window-ms", "500", "--parallelism", "2", "--gather", "true",
       "--out", "{dir}/results.txt"},
      {},
      [](outputs& o, const auto& dir) { add_files(o, dir, "results"); },
      {},
      ""};
  c["example-queries"] = {
      {"--events", "20000", "--out-dir", "{dir}/queries"},
      {},
      [](outputs& o, const auto& dir) { add_files(o, dir, "q"); },
      {},
      ""};
  c["example-late-windows"] = {
      {"--events", "20000", "--keys", "50", "--parallelism", "2", "--table", "{dir}/table"},
      {},
      [](outputs& o, const auto& dir) { add_table(o, (dir / "table").string(), "results"); },
      {},
      ""};
  // the synchronizer keeps the pairs serial whatever the lookups' timing
  c["figure1"] = {{"--elements", "200", "--out", "{dir}/pairs.txt"},
                  {},
                  [](outputs& o, const auto& dir) { add_files(o, dir, "pairs"); },
                  {},
                  ""};
  // and inside a loop, whose feedback edge and probes cross nodes
  c["figure4c"] = {{"--elements", "100", "--out", "{dir}/pairs.txt"},
                   {},
                   [](outputs& o, const auto& dir) { add_files(o, dir, "pairs"); },
                   {},
                   ""};
  for (const char* aion : {"aion-average", "aion-bigrams", "aion-linear-road", "aion-stock"})
    c[aion] = {{"--events", "20000", "--out", "{dir}/aion"},
               {},
               [](outputs& o, const auto& dir) { add_files(o, dir, "aion-"); },
               revision_counts,
               "final results compared line for line; the revisions before them fire on processing "
               "time (--late-trigger every-ms:1000), so the counts of what carries revisions are not"};
  c["riot-etl"] = {{"--dataset", "city", "--speed", fast, "--out", "{dir}"},
                   {"citydata"},
                   [](outputs& o, const auto& dir) {
                     add_table(o, (dir / "store").string(), "archive");
                     add_riot_report(o, dir);
                   },
                   {},
                   ""};
  c["riot-stats"] = {{"--dataset", "city", "--speed", fast, "--out", "{dir}"},
                     {},
                     [](outputs& o, const auto& dir) {
                       auto& blobs = o["blob count"];
                       std::size_t n = 0;
                       for ([[maybe_unused]] const auto& f : std::filesystem::directory_iterator(dir / "blobs")) ++n;
                       blobs.push_back(std::to_string(n));
                       add_riot_report(o, dir);
                     },
                     {},
                     "the accumulated windows interleave three streams in arrival order, so the "
                     "plots and zips differ run to run: their number and every count are compared"};
  c["riot-train"] = {{"--dataset", "city", "--runs", "2", "--interval-ms", "100", "--out", "{dir}"},
                     {"models/CITY"},
                     [](outputs& o, const auto& dir) {
                       add_files(o, dir / "models");
                       add_riot_report(o, dir);
                     },
                     {},
                     ""};
  c["riot-pred"] = {{"--dataset", "city", "--speed", fast, "--out", "{dir}"},
                    {"citypred"},
                    [](outputs& o, const auto& dir) { add_riot_report(o, dir); },
                    {},
                    ""};
  return c;
}

std::vector<std::string> with_dir(std::vector<std::string> args, const std::filesystem::path& dir) {
  for (auto& a : args)
    if (auto at = a.find("{dir}"); at != std::string::npos) a.replace(at, 5, dir.string());
  return args;
}

/// The first lines only one of two sorted outputs has, for the failure message.
std::string difference(const std::vector<std::string>& cluster, const std::vector<std::string>& embedded) {
  std::vector<std::string> only_cluster, only_embedded;
  std::set_difference(cluster.begin(), cluster.end(), embedded.begin(), embedded.end(),
                      std::back_inserter(only_cluster));
  std::set_difference(embedded.begin(), embedded.end(), cluster.begin(), cluster.end(),
                      std::back_inserter(only_embedded));
  std::ostringstream s;
  for (const auto& [what, lines] : {std::pair{"cluster only: ", &only_cluster}, {"embedded only: ", &only_embedded}}) {
    s << what;
    for (std::size_t i = 0; i < std::min<std::size_t>(lines->size(), 5); ++i) s << "[" << (*lines)[i] << "] ";
  }
  return s.str();
}

/// Checks that a cluster run wrote what the embedded run wrote; returns the lines compared.
std::size_t check_equal(const outputs& distributed, const outputs& embedded) {
  std::size_t lines = 0;
  for (const auto& [name, want] : embedded) {
    lines += want.size();
    BOOST_TEST_CONTEXT("output '" << name << "'") {
      auto got = distributed.find(name);
      BOOST_REQUIRE(got != distributed.end());
      BOOST_TEST(got->second.size() == want.size());
      BOOST_TEST((got->second == want), "differ: " << difference(got->second, want));
    }
  }
  BOOST_TEST(distributed.size() == embedded.size());
  return lines;
}

/// The processes whose parent is `parent` and whose command is `name`, from /proc.
std::set<pid_t> children_named(pid_t parent, const std::string& name) {
  std::set<pid_t> found;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    std::ifstream stat{e.path() / "stat"};
    std::string line;
    if (!std::getline(stat, line)) continue;  // not a process, or it ended meanwhile
    // "PID (COMMAND) STATE PPID ...": the command may hold spaces and parentheses
    const auto open = line.find('('), close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    std::istringstream rest{line.substr(close + 1)};
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent && line.substr(open + 1, close - open - 1) == name)
      found.insert(static_cast<pid_t>(std::stol(line.substr(0, open))));
  }
  return found;
}

std::map<std::string, operator_metrics> by_name(const job_result& r) {
  std::map<std::string, operator_metrics> m;
  for (auto& o : r.per_operator()) m[o.name] = o;
  return m;
}

/// A RIoTBench report of a cluster run covers every node: its own counts, latencies, CPU and
/// memory, and every delivery of the primary output has a latency (its emit time came from the
/// source's node).
void check_cluster_report(const std::filesystem::path& path) {
  auto report = nlohmann::json::parse(std::ifstream{path});
  BOOST_TEST_CONTEXT(path.string()) {
    BOOST_TEST(report["messages_in"].get<std::uint64_t>() > 0u);
    const auto primary = report["primary_output"].get<std::string>();
    const auto& out = report["outputs"][primary];
    BOOST_TEST(out["messages"].get<std::uint64_t>() > 0u);
    BOOST_TEST(out["latency_ms"]["count"] == out["messages"]);
    BOOST_REQUIRE(report["nodes"].size() == 3u);
    std::uint64_t in = 0, delivered = 0;
    for (const auto& n : report["nodes"]) {
      in += n["messages_in"].get<std::uint64_t>();
      if (n["outputs"].contains(primary)) delivered += n["outputs"][primary]["messages"].get<std::uint64_t>();
      BOOST_TEST(!n["resources"].empty(), "node " << n["node"] << " sent no CPU/memory samples");
      BOOST_TEST(n["rss_mb_max"].get<double>() > 0.0);
    }
    BOOST_TEST(in == report["messages_in"].get<std::uint64_t>());
    BOOST_TEST(delivered == out["messages"].get<std::uint64_t>());
  }
}

struct fixture {
  network_namespaces ns;
  chaos::local_cluster nodes{node_options(ns)};
  job_registry registry;
  std::string broker_host = ns.made ? network_namespaces::bridge_address() : "127.0.0.1";

  fixture() {
    register_all_jobs(registry);
    // nodes open WiredTiger stores, fill lookup tables and start the pinned broker while they
    // deploy: on a loaded 2-core machine that took n2 more than the local clusters' 3 s
    nodes.cluster.connect_timeout = 30s;
    if (ns.made)
      std::printf("cluster_jobs: 3 nodes in network namespaces at %s.1-3, coordinator and broker at %s\n",
                  network_namespaces::subnet, broker_host.c_str());
    else
      std::printf("cluster_jobs: 3 nodes on loopback: %s\n", ns.reason.c_str());
    std::fflush(stdout);
  }

  struct run {
    job_result result;
    outputs out;
  };

  /// Runs `spec` with `c`'s options in `dir`, on `cluster` (the nodes as they are configured
  /// there) or embedded (null), recording its outputs.
  run run_job(const job_spec& spec, const job_case& c, const std::filesystem::path& dir,
              const cluster_config* cluster) {
    std::filesystem::create_directories(dir);
    auto args = with_dir(c.args, dir);
    std::optional<riot::io::local_mosquitto> broker;
    std::vector<std::unique_ptr<topic_recorder>> topics;
    if (!c.topics.empty()) {
      broker.emplace(broker_host);
      args.insert(args.end(), {"--broker", broker->address()});
      for (const auto& t : c.topics) topics.push_back(std::make_unique<topic_recorder>(*broker, broker_host, t));
    }
    auto options = parse_job_arguments(spec, args);
    run_options ro;
    ro.linger = 1ms;
    ro.fuse = false;  // every operator a stage: equal estimates, round robin, work on every node
    run r;
    r.result =
        cluster ? run_on_cluster(spec, options, *cluster, ro) : run_registered(spec, options, ro);
    auto ops = by_name(r.result);
    for (std::size_t t = 0; t < topics.size(); ++t) {
      std::uint64_t published = 0;  // what the job's MQTT sinks took in
      for (const auto& [name, m] : ops)
        if (m.op == "mqtt_publish") published += m.events_in;
      topics[t]->add_to(r.out, published);
    }
    if (c.written) c.written(r.out, dir);
    const auto skip = c.timing_dependent_counts ? c.timing_dependent_counts(spec.build(options))
                                                : std::set<std::string>{};
    for (const auto& [name, m] : ops)
      for (const auto& [what, n] : {std::pair{" in", m.events_in}, {" out", m.events_out}})
        if (!skip.count(name + what)) r.out["counts"].push_back(name + what + " " + std::to_string(n));
    return r;
  }
};

}  // namespace

BOOST_FIXTURE_TEST_CASE(every_registered_job_on_three_nodes_gives_the_embedded_results, fixture) {
  const auto known = cases();
  test::temp_dir dir{"cluster-jobs"};
  for (const auto* spec : registry.all()) {
    BOOST_TEST_CONTEXT("job '" << spec->name << "'") {
      const auto started = std::chrono::steady_clock::now();
      job_case c;
      if (auto k = known.find(spec->name); k != known.end()) {
        c = k->second;
      } else {  // a new job: run with its defaults, compare what every job has, say so
        c.note = "no case in cluster_jobs_test.cpp: default options, operator counts only";
      }
      std::vector<node_status> before;
      for (std::size_t i = 0; i < nodes.size(); ++i) before.push_back(nodes.status(i));
      const auto cluster_dir = dir.path() / spec->name / "cluster";
      auto distributed = run_job(*spec, c, cluster_dir, &nodes.cluster);
      for (std::size_t i = 0; i < nodes.size(); ++i) {
        auto s = nodes.status(i);
        BOOST_TEST(s.data_bytes_in > before[i].data_bytes_in,
                   "node " << nodes.cluster.nodes[i].id << " received no data");
        BOOST_TEST(s.bad_frames == before[i].bad_frames);
      }
      auto embedded = run_job(*spec, c, dir.path() / spec->name / "embedded", nullptr);
      if (std::filesystem::exists(cluster_dir / "report.json")) check_cluster_report(cluster_dir / "report.json");
      const auto lines = check_equal(distributed.out, embedded.out);
      std::printf("%-20s %zu outputs, %zu lines equal to the embedded run's (%.1f s)%s%s\n",
                  spec->name.c_str(), embedded.out.size(), lines,
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
                  c.note.empty() ? "" : "; ", c.note.c_str());
      std::fflush(stdout);
    }
  }
}

// The cluster file pins the broker to n2 (`broker: {node: n2, port: P}`): n2 starts mosquitto on
// its own address when riot-etl is deployed — a child of n2's node process while the job runs —
// and stops it with the deployment. The outputs equal the embedded run's (which starts its own
// broker), and the MQTT sink published everything without an error, so it reached n2's broker.
BOOST_FIXTURE_TEST_CASE(riot_etl_with_the_broker_pinned_to_n2, fixture) {
  const auto& spec = registry.find("riot-etl");
  auto c = cases().at("riot-etl");
  c.topics.clear();  // no --broker: the cluster file's
  auto pinned = nodes.cluster;
  pinned.broker = {"n2", riot::io::free_loopback_port()};  // n2's namespace has no listener yet
  const auto n2 = nodes.index_of("n2");
  const auto address = pinned.broker_address();
  const auto host = address.substr(0, address.rfind(':'));

  std::atomic<bool> running{true};
  std::set<pid_t> brokers;  // mosquitto processes n2's node process started while the job ran
  std::thread watch{[&] {
    while (running) {
      for (auto p : children_named(nodes.pid(n2), "mosquitto")) brokers.insert(p);
      std::this_thread::sleep_for(2ms);
    }
  }};
  test::temp_dir dir{"cluster-jobs-broker"};
  std::optional<fixture::run> distributed;
  try {
    distributed = run_job(spec, c, dir.path() / "cluster", &pinned);
  } catch (...) {
    running = false;
    watch.join();
    throw;
  }
  running = false;
  watch.join();
  BOOST_TEST(brokers.size() == 1u,
             brokers.size() << " mosquitto processes were children of n2's node process");
  test::wait_until([&] { return !riot::io::accepts_connections(pinned.broker.port, host); }, 10s,
                   "n2 stops the broker at " + address + " when the job ended");
  for (const auto& o : distributed->result.per_operator())
    if (o.op == "mqtt_publish") {
      BOOST_TEST(o.events_in > 0u);
      BOOST_TEST(o.extra.at("task_errors") == 0.0,
                 "the MQTT sink could not publish to " << address);
    }
  auto embedded = run_job(spec, c, dir.path() / "embedded", nullptr);
  const auto lines = check_equal(distributed->out, embedded.out);
  std::printf("riot-etl with the broker on n2 at %s (mosquitto pid %d): %zu lines equal to the "
              "embedded run's\n",
              address.c_str(), brokers.empty() ? 0 : *brokers.begin(), lines);
}

// A broker that n2 cannot start (its port is taken: by n2's own control socket) fails the
// deployment with an error that names n2 and the address.
BOOST_FIXTURE_TEST_CASE(a_pinned_broker_that_cannot_start_fails_the_deploy_naming_n2, fixture) {
  const auto& spec = registry.find("riot-etl");
  auto pinned = nodes.cluster;
  const auto& endpoint = nodes.cluster.nodes[nodes.index_of("n2")].endpoint;
  pinned.broker = {"n2", std::stoi(endpoint.substr(endpoint.rfind(':') + 1))};
  test::temp_dir dir{"cluster-jobs-broker-taken"};
  auto options = parse_job_arguments(
      spec, {"--dataset", "city", "--speed", fast, "--out", dir.path().string()});
  try {
    run_on_cluster(spec, options, pinned);
    BOOST_ERROR("the job ran with its broker's port taken");
  } catch (const job_error& e) {
    const std::string what = e.what();
    BOOST_TEST(what.find("node 'n2' could not deploy job 'riot-etl'") != std::string::npos, what);
    BOOST_TEST(what.find(pinned.broker_address() + ": the port is taken") != std::string::npos,
               what);
  }
}
