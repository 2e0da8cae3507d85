// Issue 16's `deterministic_merge`: a primary and a replica of a two-input operator must emit
// byte-identical output whatever the timing of their inputs. Each run plays one copy: real stage
// actors (tidemark::run) fed by two sources whose pacing, batch sizes and the run's batching are
// drawn from the run's seed; the operator numbers what it sees in the order it sees it. With
// run_options::deterministic_merge every run's output equals run 0's byte for byte; without it
// the same runs differ, which shows the test can fail.
#define BOOST_TEST_MODULE deterministic_merge
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "tidemark/tidemark.hpp"

using namespace tidemark;

namespace {

constexpr int elements = 2000;  // per source

/// Emits `elements` integers (`base + i`) with a watermark after every `every` of them (event time
/// `i * step`), in chunks of random size after random pauses: the content is fixed, the timing
/// and the batch boundaries depend on `seed`.
class paced_source final : public source_logic {
 public:
  paced_source(int base, int every, event_time step, unsigned seed)
      : base_(base), every_(every), step_(step), rng_(seed) {}

  bool pull(std::size_t max, emitter& out) override {
    if (next_ == elements) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(rng_() % 300));
    auto n =
        std::min<std::size_t>({max, 1 + rng_() % 40, static_cast<std::size_t>(elements - next_)});
    auto b = std::make_unique<batch<int>>();
    for (std::size_t k = 0; k < n; ++k) {
      b->values.push_back(base_ + next_);
      // a watermark after every `every` elements, wherever the chunk boundaries fall
      if (++next_ % every_ == 0) {
        out.emit(std::move(b));
        out.emit_watermark(next_ * step_);
        b = std::make_unique<batch<int>>();
      }
    }
    if (!b->values.empty()) out.emit(std::move(b));
    return true;
  }

 private:
  int base_;
  int every_;
  event_time step_;
  int next_ = 0;
  std::mt19937 rng_;
};

/// An order-sensitive two-input operator: one line per element and per watermark, numbered in
/// the order it sees them ("7 b:1003" is the eighth thing seen, element 1003 of input 1).
class numbering final : public operator_logic {
 public:
  void process(std::size_t input, batch_ptr in, emitter& out) override {
    auto lines = std::make_unique<batch<std::string>>();
    for (int x : static_cast<batch<int>&>(*in).values)
      lines->values.push_back(std::to_string(seen_++) + (input == 0 ? " a:" : " b:") +
                              std::to_string(x));
    out.emit(std::move(lines));
  }
  void on_watermark(event_time wm, emitter& out) override {
    auto line = std::make_unique<batch<std::string>>();
    line->values.push_back(std::to_string(seen_++) + " watermark " + std::to_string(wm));
    out.emit(std::move(line));
    out.emit_watermark(wm);
  }

 private:
  std::uint64_t seen_ = 0;
};

/// One copy of the operator under the timing of `seed`: its output as bytes.
std::string run_copy(unsigned seed, bool deterministic) {
  std::mt19937 rng(seed);
  const unsigned seed_a = rng(), seed_b = rng();
  job j("deterministic_merge");
  auto a = j.from_source<int>(
      [=](const instance_info&) { return std::make_unique<paced_source>(0, 50, 10, seed_a); }, "a");
  auto b = j.from_source<int>(
      [=](const instance_info&) { return std::make_unique<paced_source>(100000, 70, 9, seed_b); },
      "b");
  auto out = a.transform_with<std::string>(
                  b, "numbering",
                  [](const instance_info&) { return std::make_unique<numbering>(); }, "number")
                 .collect();
  run_options opts;
  opts.batch_size = 1 + rng() % 64;
  opts.linger = std::chrono::milliseconds(1 + rng() % 3);
  opts.credit = 2 + rng() % 7;
  opts.deterministic_merge = deterministic;
  run(j, opts);
  std::string bytes;
  for (const auto& line : out.values()) bytes += line + '\n';
  return bytes;
}

}  // namespace

/// Checks what any order must give: lines numbered 0, 1, ...; each input's elements once and in
/// the order sent; watermarks rising to the end of time.
void check_content(const std::string& bytes) {
  std::istringstream in(bytes);
  std::string line;
  std::uint64_t number = 0;
  int next[2] = {0, 100000};
  event_time last_wm = start_of_time;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::uint64_t n;
    std::string what;
    fields >> n >> what;
    BOOST_REQUIRE(n == number++);
    if (what == "watermark") {
      event_time wm;
      fields >> wm;
      BOOST_REQUIRE(wm > last_wm);
      last_wm = wm;
    } else {
      auto& expected = next[what[0] == 'a' ? 0 : 1];
      BOOST_REQUIRE(std::stoi(what.substr(2)) == expected++);
    }
  }
  BOOST_TEST(next[0] == elements);
  BOOST_TEST(next[1] == 100000 + elements);
  BOOST_TEST(last_wm == end_of_time);
}

BOOST_AUTO_TEST_CASE(copies_of_a_two_input_operator_emit_identical_bytes_under_any_timing) {
  const auto reference = run_copy(0, true);
  check_content(reference);
  for (unsigned seed = 1; seed < 20; ++seed) {
    const auto bytes = run_copy(seed, true);
    BOOST_TEST((bytes == reference), "run " << seed << " differs from run 0");
  }
}

BOOST_AUTO_TEST_CASE(without_the_merge_the_same_timing_changes_the_output) {
  // negative control: arrival order shows through when the merge is off
  const auto reference = run_copy(0, false);
  int differing = 0;
  for (unsigned seed = 1; seed < 20; ++seed) differing += run_copy(seed, false) != reference;
  BOOST_TEST_MESSAGE(differing << " of 19 runs differ from run 0 without the merge");
  BOOST_TEST(differing > 0);
}
