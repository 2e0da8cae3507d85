// Unaligned checkpoints through a real run (issue 15): a sink that takes no input until a
// checkpoint completed holds the whole job under backpressure, its inbox and its sender's output
// full. An aligned barrier would wait behind those batches for ever; the unaligned one overtakes
// them, so the checkpoint completes and stores them. The run then fails, and a resume from that
// checkpoint delivers every number exactly once: the batches in flight came back from the piece.
// Step-by-step cases are in stage_core_test.
#define BOOST_TEST_MODULE unaligned checkpoints
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "../../support/temp_dir.hpp"
#include "tidemark/runtime/runtime.hpp"

using namespace tidemark;
using namespace std::chrono_literals;

namespace {

constexpr int numbers = 20000;

struct totals {
  std::atomic<long> sum{0};
  std::atomic<long> count{0};
};

/// Sums what it gets. Closed after its first 1000 elements until a checkpoint completes
/// (saturated: the stage takes nothing more). With `crash`, the first batch after that
/// completion fails the run.
class gated_sum final : public operator_logic {
 public:
  gated_sum(std::shared_ptr<totals> out, bool crash) : out_(std::move(out)), crash_(crash) {}
  void process(std::size_t, batch_ptr in, emitter&) override {
    if (crash_ && open_) throw std::runtime_error("crash after the checkpoint");
    for (int x : static_cast<batch<int>&>(*in).values) sum_ += x;
    count_ += static_cast<long>(in->size());
  }
  bool saturated() const override { return count_ >= 1000 && !open_; }
  void on_checkpoint_complete(std::uint64_t) override { open_ = true; }
  void snapshot(state_writer& w) override {
    w.write(sum_);
    w.write(count_);
  }
  void restore(state_reader& r) override {
    r.read(sum_);
    r.read(count_);
    open_ = true;  // a restore follows a completed checkpoint
  }
  void finish(emitter&) override {
    out_->sum = sum_;
    out_->count = count_;
  }

 private:
  std::shared_ptr<totals> out_;
  bool crash_;
  bool open_ = false;
  long sum_ = 0;
  long count_ = 0;
};

job_result run_gated(const run_options& opts, std::shared_ptr<totals> out, bool crash) {
  job j{"gated"};
  std::vector<int> xs(numbers);
  std::iota(xs.begin(), xs.end(), 0);
  j.from_container(xs, "numbers").rebalance().sink(
      "gated_sum", [out, crash](const instance_info&) { return std::make_unique<gated_sum>(out, crash); },
      "sum");
  return run(j, opts);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_checkpoint_completes_under_backpressure_and_restores_what_was_in_flight) {
  test::temp_dir dir{"unaligned"};
  run_options opts;
  opts.print_summary = false;
  opts.batch_size = 64;
  opts.credit = 8;
  opts.checkpoints.dir = dir / "checkpoints";
  opts.checkpoints.interval = 20ms;
  opts.checkpoints.unaligned = true;

  auto first = std::make_shared<totals>();
  BOOST_CHECK_EXCEPTION(run_gated(opts, first, true), job_error, [](const job_error& e) {
    return std::string{e.what()}.find("crash after the checkpoint") != std::string::npos;
  });

  opts.checkpoints.resume = true;
  auto resumed = std::make_shared<totals>();
  const auto r = run_gated(opts, resumed, false);
  BOOST_TEST(r.restored_from >= 1u);
  BOOST_TEST(resumed->count.load() == numbers);
  BOOST_TEST(resumed->sum.load() == long{numbers} * (numbers - 1) / 2);
}

BOOST_AUTO_TEST_CASE(unaligned_checkpoints_are_refused_with_the_deterministic_merge) {
  test::temp_dir dir{"unaligned-merge"};
  run_options opts;
  opts.print_summary = false;
  opts.deterministic_merge = true;
  opts.checkpoints.dir = dir / "checkpoints";
  opts.checkpoints.unaligned = true;
  job j{"merged"};
  auto a = j.from_container(std::vector<int>{1, 2}, "a");
  a.merge(j.from_container(std::vector<int>{3}, "b")).rebalance().collect();
  BOOST_CHECK_EXCEPTION(run(j, opts), job_error, [](const job_error& e) {
    return std::string{e.what()}.find("unaligned checkpoints do not work with replicas or the "
                                      "deterministic merge") != std::string::npos;
  });
}
