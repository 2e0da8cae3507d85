// tc netem for nodes in network namespaces: the --netns argument, the union of the netem faults on
// a node, the tc command lines, the availability check (a kernel without netem fails the schedule
// with that cause; the commands are recorded, nothing is run) and the runner's refusals.
#define BOOST_TEST_MODULE chaos_netem
#include <boost/test/unit_test.hpp>

#include "../../support/temp_dir.hpp"
#include "../../support/thrown.hpp"
#include "tidemark/chaos/netem.hpp"
#include "tidemark/chaos/runner.hpp"

using namespace tidemark;
using namespace tidemark::chaos;
using namespace std::chrono_literals;

namespace {

using argv = std::vector<std::string>;

fault netem(std::vector<std::string> targets, std::chrono::milliseconds delay,
            std::chrono::milliseconds jitter, double loss) {
  fault f;
  f.kind = fault_kind::netem;
  f.targets = std::move(targets);
  f.delay = delay;
  f.jitter = jitter;
  f.probability = loss;
  f.duration = 1000ms;
  f.origin = "faults[0]";
  return f;
}

// Records every command and answers with `answer`.
struct recorder {
  std::vector<argv> commands;
  command_result answer;
  command_runner runner() {
    return [this](const argv& a) {
      commands.push_back(a);
      return answer;
    };
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(netns_arguments_name_a_node_a_namespace_and_a_device) {
  auto [id, d] = parse_netns("n2=tm1n2");
  BOOST_TEST(id == "n2");
  BOOST_TEST(d.ns == "tm1n2");
  BOOST_TEST(d.device == "eth0");
  std::tie(id, d) = parse_netns("n3=blue:veth7");
  BOOST_TEST(id == "n3");
  BOOST_TEST(d.ns == "blue");
  BOOST_TEST(d.device == "veth7");
  for (const char* bad : {"n2", "=ns", "n2=", "n2=ns:", "n2=:eth0"})
    BOOST_CHECK_THROW(parse_netns(bad), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(overlapping_netem_faults_on_a_node_are_combined) {
  const auto a = netem({"n1", "n2"}, 40ms, 10ms, 0);
  const auto b = netem({"n2"}, 20ms, 0ms, 0.05);
  fault drop;
  drop.kind = fault_kind::drop;
  drop.targets = {"n3"};
  drop.probability = 0.5;
  const std::vector<const fault*> active{&a, &b, &drop};
  auto n2 = netem_for("n2", active);
  BOOST_REQUIRE(n2);
  BOOST_TEST(n2->delay.count() == 40);
  BOOST_TEST(n2->jitter.count() == 10);
  BOOST_TEST(n2->loss == 0.05);
  auto n1 = netem_for("n1", active);
  BOOST_REQUIRE(n1);
  BOOST_TEST(n1->loss == 0.0);
  BOOST_TEST(!netem_for("n3", active));  // a drop is no netem
}

BOOST_AUTO_TEST_CASE(tc_command_lines) {
  const netns_device d{"tm7n2", "eth0"};
  netem_settings s;
  s.delay = 40ms;
  s.jitter = 10ms;
  s.loss = 0.02;
  BOOST_TEST(netem_command(d, s) ==
             (argv{"ip", "netns", "exec", "tm7n2", "tc", "qdisc", "replace", "dev", "eth0", "root",
                   "netem", "delay", "40ms", "10ms", "loss", "2%"}));
  s.jitter = 0ms;
  s.loss = 0;
  BOOST_TEST(netem_command(d, s) == (argv{"ip", "netns", "exec", "tm7n2", "tc", "qdisc", "replace",
                                          "dev", "eth0", "root", "netem", "delay", "40ms"}));
  netem_settings loss_only;
  loss_only.loss = 0.125;
  BOOST_TEST(netem_command({"", "veth1"}, loss_only) ==
             (argv{"tc", "qdisc", "replace", "dev", "veth1", "root", "netem", "loss", "12.5%"}));
  BOOST_TEST(netem_command(d, std::nullopt) ==
             (argv{"ip", "netns", "exec", "tm7n2", "tc", "qdisc", "del", "dev", "eth0", "root"}));
}

BOOST_AUTO_TEST_CASE(a_kernel_without_netem_is_named_as_the_cause) {
  const netns_device d{"tm7n2", "eth0"};
  recorder ok;
  BOOST_TEST(!netem_unavailable(d, ok.runner()));
  // a netem that changes nothing, then removed again
  BOOST_REQUIRE_EQUAL(ok.commands.size(), 2u);
  BOOST_TEST(ok.commands[0] == (argv{"ip", "netns", "exec", "tm7n2", "tc", "qdisc", "replace",
                                     "dev", "eth0", "root", "netem"}));
  BOOST_TEST(ok.commands[1] == netem_command(d, std::nullopt));

  // what tc says on this project's CI machine
  recorder missing;
  missing.answer = {2, "Error: Specified qdisc kind is unknown.\n"};
  auto why = netem_unavailable(d, missing.runner());
  BOOST_REQUIRE(why);
  BOOST_TEST(why->rfind("tc netem is not available on this kernel: Error: Specified qdisc kind "
                        "is unknown. (the sch_netem module is missing",
                        0) == 0u,
             *why);
  BOOST_TEST(missing.commands.size() == 1u);  // nothing to remove

  recorder no_namespace;
  no_namespace.answer = {1, "Cannot open network namespace \"tm7n2\": No such file or directory\n"};
  why = netem_unavailable(d, no_namespace.runner());
  BOOST_REQUIRE(why);
  BOOST_TEST(*why ==
                 "tc netem on device eth0 in network namespace tm7n2 failed (exit 1): Cannot "
                 "open network namespace \"tm7n2\": No such file or directory",
             *why);

  // the real runner keeps the output and the exit code
  auto r = run_command({"sh", "-c", "echo out; echo err >&2; exit 3"});
  BOOST_TEST(r.status == 3);
  BOOST_TEST(r.output == "out\nerr\n");
  BOOST_TEST(run_command({"/nonexistent/tc"}).status == 127);
}

BOOST_AUTO_TEST_CASE(netem_faults_are_refused_before_anything_runs) {
  tidemark::test::temp_dir dir{"chaos-netem"};
  job_spec spec{"with-history",
                "",
                {{"events", "10", ""}, {"history", "", ""}},
                nullptr,
                [](const job_options&) -> job { throw std::logic_error("must not build"); },
                nullptr};
  cluster_config cluster;
  for (const char* id : {"n1", "n2"}) cluster.nodes.push_back({id, "tcp://10.0.0.1:1", ""});
  const auto f = netem({"n2"}, 40ms, 10ms, 0.02);
  chaos_options o;
  o.out = dir.path() / "out";
  recorder tc;
  tc.answer = {2, "Error: Specified qdisc kind is unknown.\n"};
  o.run_tc = tc.runner();
  // no namespace for n2
  auto msg = tidemark::test::thrown<std::runtime_error>(
      [&] { run_chaos(spec, spec.make_options(), cluster, {f}, o); });
  BOOST_TEST(msg.find("netem acts on the network device of node 'n2' in its namespace: name it "
                      "(--netns n2=NAMESPACE[:DEVICE]") != std::string::npos,
             msg);
  BOOST_TEST(tc.commands.empty());
  // a kernel without netem: the schedule fails with the cause, netem needs no fault injector
  // and no `faults: allow`
  o.netns["n2"] = {"tm7n2", "eth0"};
  msg = tidemark::test::thrown<std::runtime_error>(
      [&] { run_chaos(spec, spec.make_options(), cluster, {f}, o); });
  BOOST_TEST(msg.find("fault 0s netem n2 loss=0.02 delay=0.04s jitter=0.01s for 1s (faults[0]): "
                      "tc netem is not available on this kernel: Error: Specified qdisc kind is "
                      "unknown.") != std::string::npos,
             msg);
  BOOST_TEST(tc.commands.size() == 1u);
  BOOST_TEST(!std::filesystem::exists(dir.path() / "out"));  // nothing ran, nothing written
}
