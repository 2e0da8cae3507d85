// A real Prometheus server (Debian's `prometheus`) scrapes a running job's /metrics every second;
// its query API then returns the job's operator series with the job's own labels. Prometheus
// missing fails the test (scripts/dev setup installs it).
#define BOOST_TEST_MODULE prometheus scrape
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <fstream>
#include <future>
#include <set>

#include <nlohmann/json.hpp>

#include "../../support/temp_dir.hpp"
#include "scrape.hpp"
#include "tidemark/observe/prometheus.hpp"

extern char** environ;

using namespace tidemark;
using namespace std::chrono_literals;

namespace {

/// A prometheus process scraping `target` every second, stopped (SIGTERM) at the end.
class prometheus_server {
 public:
  prometheus_server(const test::temp_dir& dir, const std::string& target)
      : port_(test::free_port()), log_(dir / "prometheus.log") {
    const auto config = dir / "prometheus.yml";
    // honor_labels keeps the exposition's `job` label instead of renaming it exported_job
    std::ofstream{config} << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                             "scrape_configs:\n  - job_name: tidemark\n    honor_labels: true\n"
                             "    static_configs:\n      - targets: ['"
                          << target << "']\n";
    std::vector<std::string> args{"prometheus", "--config.file=" + config,
                                  "--storage.tsdb.path=" + (dir / "data"),
                                  "--web.listen-address=127.0.0.1:" + std::to_string(port_)};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, 1, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&files, 1, 2);
    const int failed = posix_spawnp(&pid_, "prometheus", &files, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&files);
    BOOST_REQUIRE_MESSAGE(failed == 0,
                          "cannot start prometheus: `scripts/dev setup` installs "
                          "Debian's prometheus package");
  }

  ~prometheus_server() {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }

  /// The `result` array of an instant query; empty while Prometheus is not up yet.
  nlohmann::json query(const std::string& promql) const {
    httplib::Client client{"127.0.0.1", port_};
    client.set_read_timeout(2, 0);
    auto res = client.Get(("/api/v1/query?query=" + promql).c_str());
    if (!res || res->status != 200) return nlohmann::json::array();
    return nlohmann::json::parse(res->body).at("data").at("result");
  }

  /// Its targets page and the end of its log, for a failure message.
  std::string diagnosis() const {
    httplib::Client client{"127.0.0.1", port_};
    auto res = client.Get("/api/v1/targets");
    std::ifstream in{log_};
    std::string log{std::istreambuf_iterator<char>{in}, {}};
    if (log.size() > 2000) log = log.substr(log.size() - 2000);
    return "targets: " + (res ? res->body : std::string{"(no answer)"}) + "\nlog: " + log;
  }

 private:
  std::uint16_t port_;
  std::string log_;
  pid_t pid_ = 0;
};

}  // namespace

BOOST_AUTO_TEST_CASE(prometheus_scrapes_the_operator_series_of_a_running_job) {
  test::temp_dir dir{"tidemark-prometheus"};
  std::atomic<bool> stop{false};
  run_options ro;
  ro.batch_size = 16;
  ro.live = std::make_shared<live_view>();
  ro.live_period = 100ms;
  auto endpoint = observe::serve_metrics("127.0.0.1:0", ro.live);
  auto running = std::async(std::launch::async, [&] { return run(test::endless_job(stop), ro); });
  test::stop_at_exit stopper{stop};
  std::set<std::string> seen;
  {
    prometheus_server prometheus{dir, "127.0.0.1:" + std::to_string(endpoint->port())};
    const auto deadline = std::chrono::steady_clock::now() + 40s;
    while (seen.size() < 4 && std::chrono::steady_clock::now() < deadline) {
      seen.clear();
      for (const auto& series : prometheus.query("tidemark_operator_events_out_total")) {
        const auto& labels = series.at("metric");
        if (labels.value("job", "") == "metrics-endless" && labels.value("node", "") == "local")
          seen.insert(labels.value("operator", ""));
      }
      if (seen.size() < 4) std::this_thread::sleep_for(200ms);
    }
    BOOST_TEST((seen == std::set<std::string>{"ticks", "stamped", "copied", "counted"}),
               prometheus.diagnosis());
    // a counter Prometheus stored is a number that grew from zero
    auto ticks = prometheus.query("tidemark_operator_events_out_total{operator=\"ticks\"}");
    BOOST_REQUIRE_EQUAL(ticks.size(), 1u);
    BOOST_TEST(std::stod(ticks[0].at("value").at(1).get<std::string>()) > 0);
  }
  BOOST_TEST((running.wait_for(0s) != std::future_status::ready),
             "the job ran while it was scraped");
  stop = true;
  running.get();
}
