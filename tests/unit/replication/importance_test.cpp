// Importance heuristics: query out-degree, low utilization, their product, random, query level,
// and the seeded ordering of equal scores.
#define BOOST_TEST_MODULE replication_importance
#include <boost/test/unit_test.hpp>

#include "model_builder.hpp"
#include "tidemark/replication/importance.hpp"

using namespace tidemark::replication;
namespace tt = boost::test_tools;

namespace {

// S (0.4) -> F (0.2) -> D1 (0.1);  F -> A (0.8) -> D2 (0.2);  T (0.2) -> D3 (0.1).
replication_model shared_model() {
  test::model_builder b;
  b.host("h0");
  auto s = b.op("S", 0.4, 0);
  auto f = b.op("F", 0.2, 0, {s});
  b.op("D1", 0.1, 0, {f});
  auto a = b.op("A", 0.8, 0, {f});
  b.op("D2", 0.2, 0, {a});
  auto t = b.op("T", 0.2, 0);
  b.op("D3", 0.1, 0, {t});
  return b.build();
}

}  // namespace

BOOST_AUTO_TEST_CASE(query_out_degree_is_the_share_of_queries_using_an_operator) {
  auto imp = operator_importance(shared_model(), heuristic::query_out_degree, 1);
  std::vector<double> expected{2. / 3, 2. / 3, 1. / 3, 1. / 3, 1. / 3, 1. / 3, 1. / 3};
  BOOST_TEST(imp == expected, tt::tolerance(1e-12) << tt::per_element());
}

BOOST_AUTO_TEST_CASE(low_utilization_prefers_light_operators) {
  auto imp = operator_importance(shared_model(), heuristic::low_utilization, 1);
  std::vector<double> expected{0.5, 0.75, 0.875, 0.0, 0.75, 0.75, 0.875};
  BOOST_TEST(imp == expected, tt::tolerance(1e-12) << tt::per_element());
}

BOOST_AUTO_TEST_CASE(product_multiplies_both) {
  auto imp = operator_importance(shared_model(), heuristic::product, 1);
  std::vector<double> expected{1. / 3, 0.5, 0.875 / 3, 0.0, 0.25, 0.25, 0.875 / 3};
  BOOST_TEST(imp == expected, tt::tolerance(1e-12) << tt::per_element());
}

BOOST_AUTO_TEST_CASE(random_is_uniform_and_reproducible) {
  auto m = shared_model();
  auto a = operator_importance(m, heuristic::random, 7);
  BOOST_TEST(a == operator_importance(m, heuristic::random, 7), tt::per_element());
  BOOST_TEST(a != operator_importance(m, heuristic::random, 8));
  for (auto x : a) BOOST_TEST((x >= 0.0 && x < 1.0));
}

BOOST_AUTO_TEST_CASE(query_importance_is_the_normalized_mean_of_its_operators) {
  auto m = shared_model();
  auto q = query_importance(m, operator_importance(m, heuristic::low_utilization, 1));
  // Means: D1 (0.5+0.75+0.875)/3, D2 (0.5+0.75+0+0.75)/4, D3 (0.75+0.875)/2 = 0.8125 (max).
  std::vector<double> expected{(2.125 / 3) / 0.8125, 0.5 / 0.8125, 1.0};
  BOOST_TEST(q == expected, tt::tolerance(1e-12) << tt::per_element());
}

BOOST_AUTO_TEST_CASE(ties_are_ordered_by_the_seed_not_by_position) {
  std::vector<double> scores{0.1, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.9};
  auto a = by_decreasing(scores, 1);
  BOOST_TEST(a.front() == 7u);
  BOOST_TEST(a.back() == 0u);
  BOOST_TEST(a == by_decreasing(scores, 1), tt::per_element());
  bool some_seed_reorders = false;
  for (std::uint64_t seed = 2; seed < 10; ++seed)
    some_seed_reorders = some_seed_reorders || by_decreasing(scores, seed) != a;
  BOOST_TEST(some_seed_reorders);
}

BOOST_AUTO_TEST_CASE(names_parse_back) {
  for (auto h : {heuristic::random, heuristic::low_utilization, heuristic::query_out_degree,
                 heuristic::product})
    BOOST_TEST((parse_heuristic(to_string(h)) == h));
  BOOST_TEST(!parse_heuristic("importance"));
}
