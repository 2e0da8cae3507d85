// The synchronizer patent's figure 1 on three tidemark-node processes (loopback), issue 18
// point 4: every operator a stage of its own, placed round robin (equal estimated loads), so the
// table lookup, the two gates of the join's timezone and the join run on different nodes and talk
// to the synchronizer in the coordinator by control frames. Seeded runs with random lookup latencies: every run's
// pairs equal the serial result (figure1::serial_result, one reading at a time), and every node
// received data. Without synchronizers (a debug option the Deploy frame carries to the nodes)
// the same runs pair mismatched readings, so the check can fail. Figure 4c likewise: the same
// lookup and pairing inside a loop (issue 18 point 5), its feedback edge and probes crossing
// nodes.
#define BOOST_TEST_MODULE figure1_cluster
#include <boost/test/unit_test.hpp>

#include <algorithm>

#include "../../support/environment.hpp"
#include "../../support/lines.hpp"
#include "../../support/temp_dir.hpp"
#include "tidemark/chaos/local_cluster.hpp"
#include "tidemark/examples/figure1.hpp"

using namespace tidemark;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t elements = 60;
/// Seeded runs: the issue asks 50; with the negative control they take 8-13 s on this machine, so
/// CI runs them all.
constexpr std::uint64_t seeds = 50;

struct fixture {
  chaos::local_cluster nodes{[] {
    chaos::local_cluster_options o;
    o.node_binary = test::node_binary();
    o.nodes = 3;
    return o;
  }()};
  job_registry registry;
  test::temp_dir dir{"figure1-cluster"};

  fixture() {
    figure1::register_jobs(registry);
    // every node opens and fills its table while it deploys: slow on a loaded machine
    nodes.cluster.connect_timeout = 30s;
  }

  /// The pairs of one run of `job` on the cluster, sorted.
  std::vector<std::string> run(const std::string& job, std::uint64_t seed, bool synchronizers = true) {
    const auto& spec = registry.find(job);
    const auto out = dir.path() / (job + "-" + std::to_string(seed) + ".txt");
    auto o = spec.make_options();
    o.set("elements", std::to_string(elements));
    o.set("seed", std::to_string(seed));
    o.set("max-delay-us", "1500");
    o.set("out", out.string());
    run_options ro;
    ro.fuse = false;  // every operator a stage: equal estimated loads, round robin over the nodes
    ro.linger = 1ms;
    ro.synchronizers.enabled = synchronizers;
    run_on_cluster(spec, o, nodes.cluster, ro);
    return test::sorted_lines(out);
  }
};

/// figure4c's default: each reading goes around three times.
constexpr std::uint32_t laps = 3;

/// What `job` computes one reading at a time, as its sorted lines.
std::vector<std::string> serial_lines(const std::string& job) {
  std::vector<std::string> lines;
  if (job == "figure1")
    for (const auto& x : figure1::serial_result(elements)) lines.push_back(figure1::to_line(x));
  else
    for (const auto& x : figure1::serial_loop_result(elements, laps))
      lines.push_back(figure1::loop_line(x));
  std::sort(lines.begin(), lines.end());
  return lines;
}

void every_seeded_run_equals_the_serial_result(fixture& f, const std::string& job) {
  const auto expected = serial_lines(job);
  std::vector<std::uint64_t> before;
  for (std::size_t i = 0; i < f.nodes.size(); ++i) before.push_back(f.nodes.status(i).data_bytes_in);
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
    auto got = f.run(job, seed);
    BOOST_TEST_REQUIRE((got == expected), "seed " << seed << ": " << got.size() << " pairs");
  }
  for (std::size_t i = 0; i < f.nodes.size(); ++i)
    BOOST_TEST(f.nodes.status(i).data_bytes_in > before[i],
               "node " << f.nodes.cluster.nodes[i].id << " received no data");
}

void without_synchronizers_pairs_mismatch(fixture& f, const std::string& job) {
  const auto expected = serial_lines(job);
  std::size_t differing = 0;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    auto got = f.run(job, seed, false);
    BOOST_TEST(got.size() == expected.size());
    differing += got == expected ? 0 : 1;
  }
  BOOST_TEST(differing > 0u);
}

}  // namespace

BOOST_FIXTURE_TEST_CASE(every_seeded_run_on_three_nodes_equals_the_serial_result, fixture) {
  every_seeded_run_equals_the_serial_result(*this, "figure1");
}

BOOST_FIXTURE_TEST_CASE(without_synchronizers_the_cluster_pairs_mismatch, fixture) {
  without_synchronizers_pairs_mismatch(*this, "figure1");
}

BOOST_FIXTURE_TEST_CASE(figure4c_every_seeded_run_on_three_nodes_equals_the_serial_result, fixture) {
  every_seeded_run_equals_the_serial_result(*this, "figure4c");
}

BOOST_FIXTURE_TEST_CASE(figure4c_without_synchronizers_the_cluster_pairs_mismatch, fixture) {
  without_synchronizers_pairs_mismatch(*this, "figure4c");
}

// A loop runs without checkpoints on a cluster for now (docs/timezones.md, "Limits"): asked for
// them, the coordinator refuses before it contacts a node.
BOOST_FIXTURE_TEST_CASE(figure4c_with_checkpoints_is_refused_on_a_cluster, fixture) {
  const auto& spec = registry.find("figure4c");
  auto o = spec.make_options();
  o.set("elements", "10");
  run_options ro;
  ro.checkpoints.dir = (dir.path() / "checkpoints").string();
  std::string error;
  try {
    run_on_cluster(spec, o, nodes.cluster, ro);
  } catch (const job_error& e) {
    error = e.what();
  }
  BOOST_TEST(error.find("job 'figure4c' has a loop: on a cluster it runs without checkpoints") !=
                 std::string::npos,
             error);
}
