// RIoTBench prediction tasks: quartile labels reproduce the sample's labels, decision-tree accuracy
// on the sample training sets, OLS equal to the normal-equations solution, sliding regression,
// and the model codec's round trip and corrupt-input errors.
#define BOOST_TEST_MODULE riot_prediction
#include <boost/test/unit_test.hpp>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

#include "sample_data.hpp"
#include "tidemark/riot/model_codec.hpp"
#include "tidemark/riot/prediction.hpp"

using namespace tidemark::riot;

namespace {

// Accuracy on the rows where is_test(i) of a tree trained on the others.
template <class IsTest>
double holdout_accuracy(const labelled_rows& all, IsTest is_test, decision_tree_model* trained = nullptr) {
  labelled_rows train{all.attributes, all.classes, {}, {}}, test = train;
  for (std::size_t i = 0; i < all.rows.size(); ++i) {
    auto& part = is_test(i) ? test : train;
    part.rows.push_back(all.rows[i]);
    part.labels.push_back(all.labels[i]);
  }
  auto model = train_decision_tree(train);
  std::size_t right = 0;
  for (std::size_t i = 0; i < test.rows.size(); ++i) right += model.classify(test.rows[i].data()) == test.labels[i];
  if (trained) *trained = model;
  return static_cast<double>(right) / static_cast<double>(test.rows.size());
}

// The first 1560 rows of filename-DTC-sample.txt: the file is that block three times over.
labelled_rows taxi_dtc_rows() {
  auto all = read_labelled_csv(riot_test::data_path("filename-DTC-sample.txt"),
                               {"trip_time_in_secs", "trip_distance", "fare_amount"});
  all.rows.resize(1560);
  all.labels.resize(1560);
  return all;
}

}  // namespace

BOOST_AUTO_TEST_CASE(quartile_labels_reproduce_the_sample_training_labels) {
  auto data = taxi_dtc_rows();
  std::vector<double> fares;
  for (auto& r : data.rows) fares.push_back(r[2]);
  auto q = quartile_labels::of(fares);
  BOOST_TEST(q.p50 == 9.5);
  BOOST_TEST(q.p75 == 16.5);
  BOOST_TEST(q.p100 == 126.0);
  std::size_t same = 0;
  std::vector<std::size_t> per_class(4);
  for (std::size_t i = 0; i < data.rows.size(); ++i) {
    auto label = quartile_labels::classes()[q.label(fares[i])];
    same += label == data.classes[data.labels[i]];
    ++per_class[q.label(fares[i])];
  }
  BOOST_TEST(same == 1560u);
  BOOST_TEST(per_class == (std::vector<std::size_t>{739, 410, 410, 1}));
}

BOOST_AUTO_TEST_CASE(percentile_follows_the_commons_math_estimate) {
  std::vector<double> xs{1, 2, 3, 4};
  BOOST_TEST(percentile(xs, 50) == 2.5);   // position 2.5
  BOOST_TEST(percentile(xs, 75) == 3.75);  // position 3.75
  BOOST_TEST(percentile(xs, 10) == 1.0);   // position 0.5 < 1
  BOOST_TEST(percentile(xs, 100) == 4.0);
}

BOOST_AUTO_TEST_CASE(decision_tree_accuracy_on_the_sys_arff) {
  auto data = arff_data::read(riot_test::data_path("DecisionTreeClassify-SYS.arff")).to_labelled();
  BOOST_REQUIRE_EQUAL(data.rows.size(), 800u);
  BOOST_TEST(data.classes == (std::vector<std::string>{"Good", "Bad"}));
  // The file repeats 20 distinct attribute rows 40 times each, every one with both labels (560 Bad,
  // 240 Good): no classifier can beat 72.5 % (the majority label per distinct row), and always
  // answering Bad scores 70 %. 10-fold cross-validation over blocks of 20 consecutive rows.
  double sum = 0;
  for (std::size_t k = 0; k < 10; ++k) sum += holdout_accuracy(data, [k](std::size_t i) { return (i / 20) % 10 == k; });
  auto accuracy = sum / 10;
  auto model = train_decision_tree(data);
  std::size_t right = 0;
  for (std::size_t i = 0; i < data.rows.size(); ++i) right += model.classify(data.rows[i].data()) == data.labels[i];
  auto training = static_cast<double>(right) / 800;
  BOOST_TEST_MESSAGE("DecisionTreeClassify-SYS.arff: 10-fold accuracy " << accuracy << ", training accuracy "
                                                                        << training << ", " << model.leaf_count()
                                                                        << " leaves");
  BOOST_TEST(accuracy >= 0.72);
  BOOST_TEST(training >= 0.70);
  BOOST_TEST(training <= 0.725);
}

BOOST_AUTO_TEST_CASE(decision_tree_accuracy_on_the_taxi_training_sample) {
  auto data = taxi_dtc_rows();
  // Classify from trip time and distance only: the fare defines the class.
  for (auto& r : data.rows) r.pop_back();
  data.attributes.pop_back();
  decision_tree_model model;
  auto accuracy = holdout_accuracy(data, [](std::size_t i) { return i % 5 == 0; }, &model);
  BOOST_TEST_MESSAGE("filename-DTC-sample.txt: holdout accuracy " << accuracy << " with " << model.leaf_count()
                                                                  << " leaves");
  BOOST_TEST(accuracy >= 0.92);
}

BOOST_AUTO_TEST_CASE(a_decision_tree_does_not_depend_on_the_order_of_its_rows) {
  // The TAXI rows are the sample's 1000 trips and the first 560 again, so most values repeat. Rows
  // of equal value may be visited in any order; thresholds fall only between distinct values, where
  // the counts on either side are the same whatever that order. A builder that split between equal
  // values, or whose class counts depended on the order of ties, gives a different tree here.
  auto data = taxi_dtc_rows();
  for (auto& r : data.rows) r.pop_back();  // classify from trip time and distance
  data.attributes.pop_back();
  auto tree = train_decision_tree(data);
  BOOST_REQUIRE(tree.nodes.size() > 1u);
  std::vector<std::size_t> order(data.rows.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937 random(7);
  for (int round = 0; round < 3; ++round) {
    std::shuffle(order.begin(), order.end(), random);
    labelled_rows shuffled{data.attributes, data.classes, {}, {}};
    for (auto i : order) {
      shuffled.rows.push_back(data.rows[i]);
      shuffled.labels.push_back(data.labels[i]);
    }
    auto again = train_decision_tree(shuffled);
    BOOST_TEST_REQUIRE(again.nodes.size() == tree.nodes.size());
    for (std::size_t n = 0; n < tree.nodes.size(); ++n) {
      const auto &a = tree.nodes[n], &b = again.nodes[n];
      BOOST_TEST((a.leaf == b.leaf && a.index == b.index && a.threshold == b.threshold &&
                  a.left == b.left && a.right == b.right),
                 "node " << n << " differs after shuffle " << round);
    }
  }
}

BOOST_AUTO_TEST_CASE(decision_tree_tasks_train_on_a_csv_batch_and_classify_rows) {
  std::string batch;
  std::size_t n = 0;
  for (auto& l : riot_test::lines("filename.txt"))
    if (n++ < 1000) batch += l + "\n";
  decision_tree_train dtt(decision_tree_config::for_dataset(dataset::taxi));
  auto bytes = dtt.process(batch);
  BOOST_REQUIRE_MESSAGE(bytes, riot_test::why(bytes));
  auto model = model_codec::decode_decision_tree(*bytes);
  BOOST_REQUIRE_MESSAGE(model, riot_test::why(model));
  BOOST_TEST(model->classes == quartile_labels::classes());
  decision_tree_classify dtc(decision_tree_config::for_dataset(dataset::taxi), *model);
  auto label = dtc.process("2460,12.5,39.5");  // a long trip
  BOOST_REQUIRE(label);
  double x[2] = {2460, 12.5};
  BOOST_TEST(*label == model->classes[model->classify(x)]);
  BOOST_TEST(dtc.process("2460").error().message ==
             "decision_tree_classify: row: has 1 columns, column 1 is needed");
  BOOST_TEST(dtc.process("fast,1.0").error().message ==
             "decision_tree_classify: row: column 0 is not a number: \"fast\"");
  BOOST_TEST(dtc.errors().count() == 2u);
  BOOST_TEST(dtt.process("660,1.76,9.50\n480,x,6.50\n").error().message ==
             "decision_tree_train: line 2: column 1 is not a number: \"x\"");
  BOOST_TEST(dtt.process("\n\n").error().message == "decision_tree_train: the batch has no rows");
  BOOST_TEST(dtt.errors().count() == 2u);
  // A rejected model update keeps the old model.
  BOOST_TEST(!dtc.update_model("garbage"));
  BOOST_TEST(*dtc.process("2460,12.5,39.5") == *label);
  BOOST_TEST(dtc.update_model(*bytes).has_value());
}

namespace {

// Solves the normal equations (X'X) b = X'y by Gauss-Jordan elimination with partial pivoting in
// long double: the closed-form least-squares solution, independent of the library's QR.
std::vector<long double> normal_equations(const std::vector<std::vector<double>>& x, const std::vector<double>& y) {
  auto p = x.front().size() + 1;
  std::vector<std::vector<long double>> a(p, std::vector<long double>(p + 1, 0));
  for (std::size_t r = 0; r < x.size(); ++r) {
    std::vector<long double> row{1};
    row.insert(row.end(), x[r].begin(), x[r].end());
    for (std::size_t i = 0; i < p; ++i) {
      for (std::size_t j = 0; j < p; ++j) a[i][j] += row[i] * row[j];
      a[i][p] += row[i] * y[r];
    }
  }
  for (std::size_t c = 0; c < p; ++c) {
    auto pivot = c;
    for (std::size_t r = c + 1; r < p; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[pivot][c])) pivot = r;
    std::swap(a[c], a[pivot]);
    for (std::size_t r = 0; r < p; ++r)
      if (r != c) {
        auto f = a[r][c] / a[c][c];
        for (std::size_t k = c; k <= p; ++k) a[r][k] -= f * a[c][k];
      }
  }
  std::vector<long double> b(p);
  for (std::size_t i = 0; i < p; ++i) b[i] = a[i][p] / a[i][i];
  return b;
}

}  // namespace

BOOST_AUTO_TEST_CASE(linear_regression_equals_the_closed_form_solution_on_the_sample_arff) {
  auto arff = arff_data::read(riot_test::data_path("linearregression.arff"));
  BOOST_REQUIRE_EQUAL(arff.rows.size(), 160u);
  BOOST_REQUIRE_EQUAL(arff.attributes.size(), 7u);
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (auto& r : arff.rows) {
    x.emplace_back(r.begin(), r.end() - 1);  // the last attribute (airquality) is the target
    y.push_back(r.back());
  }
  auto model = train_linear_regression(x, y);
  auto expected = normal_equations(x, y);
  BOOST_TEST(model.intercept == static_cast<double>(expected[0]), boost::test_tools::tolerance(1e-6));
  for (std::size_t j = 0; j < model.coefficients.size(); ++j) {
    BOOST_TEST_MESSAGE("coefficient " << arff.attributes[j].name << " = " << model.coefficients[j]);
    BOOST_TEST(model.coefficients[j] == static_cast<double>(expected[j + 1]), boost::test_tools::tolerance(1e-6));
  }
}

BOOST_AUTO_TEST_CASE(linear_regression_tasks_train_on_taxi_and_predict_doubles) {
  std::string batch;
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (auto& l : riot_test::lines("filename.txt")) {
    batch += l + "\n";
    double t = 0, d = 0, f = 0;
    std::sscanf(l.c_str(), "%lf,%lf,%lf", &t, &d, &f);
    x.push_back({t, d});
    y.push_back(f);
  }
  linear_regression_train mlt(linear_regression_config::for_dataset(dataset::taxi));
  auto bytes = mlt.process(batch);
  BOOST_REQUIRE_MESSAGE(bytes, riot_test::why(bytes));
  auto model = model_codec::decode_linear_regression(*bytes);
  BOOST_REQUIRE_MESSAGE(model, riot_test::why(model));
  auto expected = normal_equations(x, y);
  BOOST_TEST(model->intercept == static_cast<double>(expected[0]), boost::test_tools::tolerance(1e-6));
  BOOST_TEST(model->coefficients[1] == static_cast<double>(expected[2]), boost::test_tools::tolerance(1e-6));
  BOOST_TEST(model->attributes == (std::vector<std::string>{"trip_time_in_secs", "trip_distance"}));
  linear_regression_predict mlr(linear_regression_config::for_dataset(dataset::taxi), *model);
  auto fare = mlr.process("660,1.76,9.50");
  BOOST_REQUIRE(fare);
  BOOST_TEST(*fare == model->intercept + model->coefficients[0] * 660 + model->coefficients[1] * 1.76);
  BOOST_TEST(*fare != std::floor(*fare));  // a double, not the original's int
  BOOST_TEST(mlr.process("660").error().message == "linear_regression_predict: row: has 1 columns, column 1 is needed");
  BOOST_TEST(mlt.process("1,2,3\n4,5\n").error().message ==
             "linear_regression_train: line 2: has 2 columns, column 2 is needed");
}

BOOST_AUTO_TEST_CASE(sliding_regression_predicts_a_linear_series_exactly) {
  sliding_regression slr(sliding_regression_config::for_dataset(dataset::city));
  sliding_regression::state s;
  for (int n = 1; n <= 10; ++n) BOOST_TEST(slr.step(s, 2.0 * n + 1).empty());
  for (int n = 11; n <= 30; ++n) {
    auto p = slr.step(s, 2.0 * n + 1);
    BOOST_REQUIRE_EQUAL(p.size(), 10u);
    for (int k = 1; k <= 10; ++k) BOOST_TEST(p[k - 1] == 2.0 * (n + k) + 1, boost::test_tools::tolerance(1e-9));
  }
  // GRID predicts 2 ahead; the keyed form joins them with '#'.
  sliding_regression grid(sliding_regression_config::for_dataset(dataset::grid));
  observation o;
  o.sensor_id = "m1";
  o.obs_type = "energyconsumed";
  o.numeric = true;
  std::optional<observation> out;
  for (int n = 1; n <= 11; ++n) {
    o.value = 5;
    out = grid.process(o);
  }
  BOOST_REQUIRE(out);
  BOOST_TEST(out->obs_type == "SLR");
  BOOST_TEST(out->text == "5#5");
  BOOST_TEST(out->value == 5.0);
}

BOOST_AUTO_TEST_CASE(model_codec_round_trips_and_rejects_corrupt_bytes_clearly) {
  auto data = taxi_dtc_rows();
  auto tree = train_decision_tree(data);
  auto bytes = model_codec::encode(tree);
  auto back = model_codec::decode_decision_tree(bytes);
  BOOST_REQUIRE_MESSAGE(back, riot_test::why(back));
  BOOST_TEST(back->nodes.size() == tree.nodes.size());
  for (auto& r : data.rows) BOOST_TEST_REQUIRE(back->classify(r.data()) == tree.classify(r.data()));

  auto error_of = [](std::string b) { return model_codec::decode_decision_tree(b).error().message; };
  BOOST_TEST(error_of("TMRM") == "model_codec: too short for a model (4 bytes, the header alone is 23)");
  BOOST_TEST(error_of(std::string(30, 'x')) == "model_codec: not a Tidemark model (bad magic)");
  auto flipped = bytes;
  flipped[40] ^= 1;
  BOOST_TEST(error_of(flipped) == "model_codec: checksum mismatch: the model bytes are corrupt");
  BOOST_TEST(error_of(bytes.substr(0, bytes.size() - 1)).find("payload is") != std::string::npos);
  auto newer = bytes;
  newer[4] = 9;
  BOOST_TEST(error_of(newer) == "model_codec: format version 9 is not supported (this build reads 2)");
  auto lr = model_codec::encode(linear_regression_model{{"a"}, 1.0, {2.0}});
  BOOST_TEST(error_of(lr) == "model_codec: the bytes hold a linear_regression model, expected decision_tree");
  // A structurally bad tree with a valid checksum: a child pointing back at its parent.
  decision_tree_model cyclic{{"a"}, {"c"}, {{false, 0, 1.0, 0, 1}, {true, 0, 0, 0, 0}}};
  BOOST_TEST(error_of(model_codec::encode(cyclic)).find("node 0: child index out of range") != std::string::npos);
}

namespace {

// Replaces the payload of model bytes and writes a matching size and checksum into the header
// (magic 4, version 2, kind 1, then u64 size at byte 7 and u64 XXH64 at byte 15), so only the
// payload's structure is wrong.
std::string reseal(std::string bytes, std::string payload) {
  bytes.resize(23);
  std::uint64_t size = payload.size(), sum = XXH64(payload.data(), payload.size(), 0);
  std::memcpy(&bytes[7], &size, 8);
  std::memcpy(&bytes[15], &sum, 8);
  return bytes + payload;
}

}  // namespace

BOOST_AUTO_TEST_CASE(model_codec_rejects_a_malformed_payload_with_a_valid_checksum) {
  auto bytes = model_codec::encode(linear_regression_model{{"a"}, 1.0, {2.0}});
  BOOST_REQUIRE(model_codec::decode_linear_regression(bytes).has_value());
  auto payload = bytes.substr(23);
  // attribute count (4) + "a" (4 + 1) + intercept (8) + coefficient count (4): the count says one
  // coefficient, none is left.
  auto cut = model_codec::decode_linear_regression(reseal(bytes, payload.substr(0, payload.size() - 8)));
  BOOST_REQUIRE(!cut.has_value());
  BOOST_TEST(cut.error().message == "model_codec: length 1 exceeds the 0 bytes left (payload byte 21)");
  auto longer = model_codec::decode_linear_regression(reseal(bytes, payload + "x"));
  BOOST_REQUIRE(!longer.has_value());
  BOOST_TEST(longer.error().message == "model_codec: unexpected bytes after the model");
  auto garbage = model_codec::decode_decision_tree(reseal(model_codec::encode(train_decision_tree(taxi_dtc_rows())),
                                                          std::string(64, '\xff')));
  BOOST_REQUIRE(!garbage.has_value());
  BOOST_TEST(garbage.error().message.find("model_codec: ") == 0u);
  BOOST_TEST(garbage.error().message.find("(payload byte 4)") != std::string::npos);
}
