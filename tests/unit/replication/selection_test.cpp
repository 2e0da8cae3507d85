// Operator selection: breadth-first levels, direct levels, the knapsack approximation and the
// query-level variants, all within the budget.
#define BOOST_TEST_MODULE replication_selection
#include <boost/test/unit_test.hpp>

#include "model_builder.hpp"
#include "tidemark/replication/planner.hpp"

using namespace tidemark::replication;
namespace tt = boost::test_tools;
using levels = std::vector<std::uint32_t>;

namespace {

// Four independent single-operator queries with loads 0.4, 0.3, 0.2, 0.1.
replication_model four() {
  test::model_builder b;
  b.host("h0");
  for (double load : {0.4, 0.3, 0.2, 0.1}) b.op("o" + std::to_string(load), load, 0);
  return b.build();
}

const std::vector<double> falling{0.9, 0.8, 0.7, 0.6};

levels select(const replication_model& m, const std::vector<double>& imp, selection_strategy s,
              double budget, std::uint32_t max_level = 1, bool query_level = false) {
  selection_options o;
  o.strategy = s;
  o.query_level = query_level;
  o.max_level = max_level;
  o.budget = budget;
  return select_replicas(m, imp, o);
}

}  // namespace

BOOST_AUTO_TEST_CASE(importance_order_skips_what_no_longer_fits) {
  // 0.4 fits (0.25 left), 0.3 does not, 0.2 does (0.05 left), 0.1 does not.
  BOOST_TEST(select(four(), falling, selection_strategy::breadth_first, 0.65) ==
                 (levels{1, 0, 1, 0}),
             tt::per_element());
}

BOOST_AUTO_TEST_CASE(breadth_first_replicates_every_operator_once_before_raising_levels) {
  // Level 1 for all takes 1.0; of the 0.2 left only the 0.2 operator gets a second replica.
  BOOST_TEST(select(four(), falling, selection_strategy::breadth_first, 1.2, 2) ==
                 (levels{1, 1, 2, 1}),
             tt::per_element());
  BOOST_TEST(select(four(), falling, selection_strategy::breadth_first, 1.0, 2) ==
                 (levels{1, 1, 1, 1}),
             tt::per_element());
}

BOOST_AUTO_TEST_CASE(direct_levels_give_important_operators_their_level_at_once) {
  // Targets ceil(imp * 2): 2, 1, 1, 1. The first takes 0.8 of 1.0, so two others miss out.
  BOOST_TEST(select(four(), {1.0, 0.5, 0.4, 0.3}, selection_strategy::direct_levels, 1.0, 2) ==
                 (levels{2, 0, 1, 0}),
             tt::per_element());
}

BOOST_AUTO_TEST_CASE(knapsack_goes_by_importance_per_load) {
  // Value per weight 2.25, 2.67, 3.5, 6: the light operators first.
  BOOST_TEST(select(four(), falling, selection_strategy::knapsack, 0.65) == (levels{0, 1, 1, 1}),
             tt::per_element());
}

BOOST_AUTO_TEST_CASE(query_level_replicates_whole_queries_first) {
  test::model_builder b;
  b.host("h0");
  auto sa = b.op("sA", 0.1, 0);
  b.op("dA", 0.2, 0, {sa});
  auto sb = b.op("sB", 0.15, 0);
  b.op("dB", 0.15, 0, {sb});
  auto m = b.build();
  std::vector<double> imp{0.9, 0.1, 0.6, 0.55};  // query means: A 0.5, B 0.575
  // Operator level: sA, sB, then neither dB nor dA fits; both queries stay half replicated.
  BOOST_TEST(select(m, imp, selection_strategy::breadth_first, 0.35) == (levels{1, 0, 1, 0}),
             tt::per_element());
  // Query level: all of B; A (0.3) does not fit what is left.
  BOOST_TEST(select(m, imp, selection_strategy::breadth_first, 0.35, 1, true) ==
                 (levels{0, 0, 1, 1}),
             tt::per_element());
  // With 0.1 more, single operators fill the rest once no whole query fits.
  BOOST_TEST(select(m, imp, selection_strategy::breadth_first, 0.4, 1, true) ==
                 (levels{1, 0, 1, 1}),
             tt::per_element());
}

BOOST_AUTO_TEST_CASE(shared_operators_are_paid_for_once) {
  test::model_builder b;
  b.host("h0");
  auto s = b.op("S", 0.3, 0);
  b.op("D1", 0.1, 0, {s});
  b.op("D2", 0.1, 0, {s});
  auto m = b.build();
  // Query D1 costs 0.4; then query D2 costs only its own 0.1.
  BOOST_TEST(select(m, {0.5, 0.5, 0.5}, selection_strategy::knapsack, 0.5, 1, true) ==
                 (levels{1, 1, 1}),
             tt::per_element());
}

BOOST_AUTO_TEST_CASE(no_strategy_ever_exceeds_the_budget) {
  test::model_builder b;
  b.host("h0");
  for (int i = 0; i < 40; ++i) {
    std::vector<op_index> in;
    if (i % 4) in.push_back(static_cast<op_index>(i - 1));
    b.op("o" + std::to_string(i), 0.01 + 0.013 * ((i * 7) % 11), 0, in);
  }
  auto m = b.build();
  for (auto h : {heuristic::random, heuristic::low_utilization, heuristic::product})
    for (auto s : {selection_strategy::breadth_first, selection_strategy::direct_levels,
                   selection_strategy::knapsack})
      for (bool q : {false, true})
        for (double budget : {0.0, 0.05, 0.3, 1.1, 2.5})
          for (std::uint32_t max_level : {1u, 3u}) {
            auto lv = select(m, operator_importance(m, h, 3), s, budget, max_level, q);
            double used = 0;
            for (std::size_t i = 0; i < lv.size(); ++i) {
              used += lv[i] * m.operators[i].load;
              BOOST_TEST(lv[i] <= max_level);
            }
            BOOST_TEST(used <= budget + 1e-9);
          }
}

BOOST_AUTO_TEST_CASE(budget_of_replicas_without_a_host_goes_to_the_next_operators) {
  test::model_builder b;
  b.host("h0", 1.0).host("h1", 0.5);
  b.op("a", 0.4, 0);
  b.op("b", 0.3, 1);
  b.op("c", 0.1, 0);
  auto m = b.build();
  std::vector<double> imp{0.9, 0.8, 0.7};
  BOOST_TEST(select(m, imp, selection_strategy::breadth_first, 1.0) == (levels{1, 1, 1}),
             tt::per_element());
  // a's replica (0.4) fits only h1, which has 0.2 left: skipped; b's goes to h0, c's to h1.
  replica_packer packer{m, {}};
  selection_options o;
  o.budget = 1.0;
  o.packer = &packer;
  BOOST_TEST(select_replicas(m, imp, o) == (levels{0, 1, 1}), tt::per_element());
  BOOST_TEST(packer.rejected() == 1u);
  auto r = packer.replicas();
  BOOST_TEST(r[1] == (std::vector<host_index>{0}), tt::per_element());
  BOOST_TEST(r[2] == (std::vector<host_index>{1}), tt::per_element());
}

BOOST_AUTO_TEST_CASE(existing_replicas_are_kept_and_not_paid_for_again) {
  auto m = four();
  selection_options o;
  o.budget = 0.3;
  o.current = {1, 0, 0, 0};
  // o0 already has its replica; the budget goes to o1 (0.3), then nothing else fits.
  BOOST_TEST(select_replicas(m, falling, o) == (levels{1, 1, 0, 0}), tt::per_element());
}
