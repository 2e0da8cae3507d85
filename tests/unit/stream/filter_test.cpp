// filter_logic without actors: the event time and key hash columns keep matching the elements the
// filter keeps (it compacts them in the same pass as the values), under both error policies.
#define BOOST_TEST_MODULE filter
#include <boost/test/unit_test.hpp>

#include <stdexcept>

#include "../event_time/harness.hpp"
#include "tidemark/core/operators.hpp"

using namespace tidemark;
using tidemark::test::make_batch;
using tidemark::test::recording_emitter;

namespace {

/// Keeps even values; throws on 7.
auto even = [](const int& x) {
  if (x == 7) throw std::runtime_error("seven");
  return x % 2 == 0;
};

const batch_base& only_batch(const recording_emitter& out) {
  BOOST_REQUIRE(out.log.size() == 1u);
  return *out.log.front().b;
}

}  // namespace

BOOST_AUTO_TEST_CASE(kept_elements_keep_their_event_times_and_key_hashes) {
  ops::filter_logic<int, decltype(even)> op{even};
  recording_emitter out;
  op.process(0, make_batch<int>({1, 2, 3, 4, 6}, {10, 20, 30, 40, 60}, {1, 2, 3, 4, 6}), out);
  BOOST_TEST(out.values<int>(0) == (std::vector<int>{2, 4, 6}));
  BOOST_TEST(only_batch(out).times == (std::vector<event_time>{20, 40, 60}));
  BOOST_TEST(only_batch(out).hashes == (std::vector<std::uint64_t>{2, 4, 6}));
  // a stream without columns stays without
  out.log.clear();
  op.process(0, make_batch<int>({5, 8}), out);
  BOOST_TEST(out.values<int>(0) == (std::vector<int>{8}));
  BOOST_TEST(only_batch(out).times.empty());
  BOOST_TEST(only_batch(out).hashes.empty());
}

BOOST_AUTO_TEST_CASE(a_skipped_element_leaves_its_columns_too) {
  ops::filter_logic<int, decltype(even)> op{even};
  op.on_error = error_policy::skip;
  recording_emitter out;
  op.process(0, make_batch<int>({7, 2, 7, 4}, {70, 20, 71, 40}), out);
  BOOST_TEST(out.values<int>(0) == (std::vector<int>{2, 4}));
  BOOST_TEST(only_batch(out).times == (std::vector<event_time>{20, 40}));
  BOOST_TEST(op.skipped == 2u);
  // nothing kept: nothing emitted
  out.log.clear();
  op.process(0, make_batch<int>({1, 3}, {1, 3}), out);
  BOOST_TEST(out.log.empty());
}
