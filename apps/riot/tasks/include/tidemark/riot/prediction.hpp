// RIoTBench prediction tasks: decision-tree training (DTT, C4.5 on numeric attributes with class
// labels from quartiles, as AnnotateDTClass did) and classification (DTC), multivariate linear
// regression training (MLT) and prediction (MLR), and sliding-window linear regression (SLR).
// Trained models travel as bytes (model_codec.hpp) from TRAIN to PRED.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tidemark/core/codec.hpp"
#include "tidemark/core/error.hpp"
#include "tidemark/riot/dataset.hpp"
#include "tidemark/riot/detail/keyed_states.hpp"
#include "tidemark/riot/observation.hpp"
#include "tidemark/riot/rejecting_task.hpp"

namespace tidemark::riot {

// ---- training data ------------------------------------------------------------------------------

/// Rows of numeric attributes with a class label each.
struct labelled_rows {
  std::vector<std::string> attributes;
  std::vector<std::string> classes;
  std::vector<std::vector<double>> rows;
  std::vector<std::uint32_t> labels;  ///< index into classes, one per row
};

/// A Weka ARFF file: numeric attributes; nominal attributes are stored as their label's index.
struct arff_data {
  std::string relation;
  struct attribute {
    std::string name;
    std::vector<std::string> labels;  ///< empty for a numeric attribute
  };
  std::vector<attribute> attributes;
  std::vector<std::vector<double>> rows;

  /// Parses ARFF text; throws std::runtime_error naming `origin` and the line when malformed.
  static arff_data parse(std::string_view text, const std::string& origin);
  static arff_data read(const std::string& path);
  /// The rows with the last attribute (nominal) as the class; throws std::invalid_argument if it
  /// is numeric.
  labelled_rows to_labelled() const;
};

/// Reads CSV rows of numbers ending in a class label (like filename-DTC-sample.txt); throws
/// std::runtime_error naming the line when a row is malformed.
labelled_rows read_labelled_csv(const std::string& path, std::vector<std::string> attributes);

/// Quartile labels as RIoTBench's AnnotateDTClass: with p50, p75, p100 of one column (commons-math
/// percentile estimate), a value < p50 is BAD, < p75 GOOD, < p100 VERYGOOD and the maximum EXCELLENT.
struct quartile_labels {
  double p50 = 0, p75 = 0, p100 = 0;
  static const std::vector<std::string>& classes();  ///< BAD, GOOD, VERYGOOD, EXCELLENT
  static quartile_labels of(std::vector<double> values);
  std::uint32_t label(double x) const noexcept;
};

/// Percentile p (0 < p <= 100) of `sorted` by the commons-math/Weka estimate: position p (n + 1) /
/// 100, linearly interpolated.
double percentile(const std::vector<double>& sorted, double p);

// ---- decision tree ------------------------------------------------------------------------------

/// A trained tree: nodes[0] is the root; a split sends x[attribute] <= threshold left.
struct decision_tree_model {
  struct node {
    bool leaf = true;
    std::uint32_t index = 0;  ///< attribute (split) or class (leaf)
    double threshold = 0;
    std::uint32_t left = 0, right = 0;
    TIDEMARK_FIELDS(leaf, index, threshold, left, right)
  };
  std::vector<std::string> attributes;
  std::vector<std::string> classes;
  std::vector<node> nodes;
  TIDEMARK_FIELDS(attributes, classes, nodes)

  /// The class index for one row of attribute values (at least attributes.size() of them).
  std::uint32_t classify(const double* x) const noexcept;
  std::size_t leaf_count() const noexcept;
};

struct decision_tree_config {
  /// Columns of a training/classified CSV row used as attributes.
  std::vector<std::size_t> feature_columns;
  /// Column labelled by quartiles for training (AnnotateDTClass's ANNOTATE_MSG_USE_FIELD).
  std::size_t label_column = 0;
  /// C4.5 (J48) defaults: at least 2 rows per branch, pruning confidence 0.25.
  std::size_t min_leaf = 2;
  double confidence = 0.25;
  /// Names for the feature columns (used in the model).
  std::vector<std::string> attribute_names;

  /// TAXI: trip_time, distance -> fare quartile; CITY: temperature, humidity, light, dust ->
  /// airquality quartile; FIT: 9 accelerometer axes -> ecg_lead_1 quartile. GRID has one column
  /// only and throws std::invalid_argument.
  static decision_tree_config for_dataset(dataset d);
};

/// C4.5 on numeric attributes: binary splits at midpoints chosen by gain ratio among splits with at
/// least average gain (gain penalized by log2(candidates) / n, as C4.5 does for numeric splits),
/// then pessimistic-error subtree replacement. Deterministic.
decision_tree_model train_decision_tree(const labelled_rows& data, std::size_t min_leaf = 2,
                                        double confidence = 0.25);

/// DTT: one newline-separated CSV batch (a table range query's rows) -> encoded model.
class decision_tree_train : public rejecting_task {
 public:
  explicit decision_tree_train(decision_tree_config config);
  /// Labels the batch by quartiles, trains, returns model_codec bytes; an error names the bad line.
  expected<std::string> process(std::string_view csv_batch);

 private:
  decision_tree_config config_;
};

/// DTC: classifies CSV rows with the current model, which can be replaced at run time.
class decision_tree_classify : public rejecting_task {
 public:
  decision_tree_classify(decision_tree_config config, decision_tree_model model);
  /// Swaps in an encoded model; on error the old model stays.
  expected<bool> update_model(std::string_view bytes);
  /// The class label, or an error naming the column that is missing or not numeric.
  expected<std::string> process(std::string_view csv_row);
  const decision_tree_model& model() const noexcept { return model_; }

 private:
  decision_tree_config config_;
  decision_tree_model model_;
  std::vector<double> x_;                // scratch: the row's features
  std::vector<std::string_view> cells_;  // scratch: the row's columns
};

// ---- linear regression ---------------------------------------------------------------------------

struct linear_regression_model {
  std::vector<std::string> attributes;
  double intercept = 0;
  std::vector<double> coefficients;  ///< one per attribute
  TIDEMARK_FIELDS(attributes, intercept, coefficients)
  double predict(const double* x) const noexcept;
};

struct linear_regression_config {
  std::vector<std::size_t> feature_columns;
  std::size_t target_column = 0;
  std::vector<std::string> attribute_names;
  /// TAXI: trip_time, distance -> fare; CITY: temperature, humidity, light, dust -> airquality;
  /// FIT: 9 accelerometer axes -> ecg_lead_1. GRID throws std::invalid_argument.
  static linear_regression_config for_dataset(dataset d);
};

/// Ordinary least squares with intercept (column-pivoting Householder QR, so rank-deficient data
/// still yields a least-squares solution). Throws std::invalid_argument on empty or ragged input.
linear_regression_model train_linear_regression(const std::vector<std::vector<double>>& x,
                                                const std::vector<double>& y,
                                                std::vector<std::string> attributes = {});

/// MLT: one CSV batch -> encoded model.
class linear_regression_train : public rejecting_task {
 public:
  explicit linear_regression_train(linear_regression_config config);
  expected<std::string> process(std::string_view csv_batch);

 private:
  linear_regression_config config_;
};

/// MLR: predicts the target of CSV rows (the prediction is a double; the original cast it to int).
class linear_regression_predict : public rejecting_task {
 public:
  linear_regression_predict(linear_regression_config config, linear_regression_model model);
  expected<bool> update_model(std::string_view bytes);
  expected<double> process(std::string_view csv_row);
  const linear_regression_model& model() const noexcept { return model_; }

 private:
  linear_regression_config config_;
  linear_regression_model model_;
  std::vector<double> x_;                // scratch: the row's features
  std::vector<std::string_view> cells_;  // scratch: the row's columns
};

// ---- sliding-window linear regression --------------------------------------------------------

struct sliding_regression_config {
  /// PREDICT.SIMPLE_LINEAR_REGRESSION.WINDOW_SIZE_TRAIN (10) and WINDOW_SIZE_PREDICT (10; GRID 2).
  std::size_t train_window = 10;
  std::size_t predict_window = 10;
  std::vector<std::string> fields;
  static sliding_regression_config for_dataset(dataset d);
};

/// Per key, fits y = a + b x by least squares over the last `train_window` inputs (x = the input's
/// 1-based arrival number) and, once more than `train_window` inputs have arrived, predicts
/// x = n+1 ... n+predict_window.
class sliding_regression {
 public:
  /// The last `train_window` inputs in a ring indexed by arrival; a vector, not a deque, for the
  /// reason interpolation::state gives.
  struct state {
    std::vector<double> window;
    std::uint64_t n = 0;  // inputs so far
  };

  explicit sliding_regression(sliding_regression_config config);

  state initial() const { return {}; }
  /// Adds `y`; returns the predictions (empty while the window is filling).
  std::vector<double> step(state& s, double y) const;
  bool accepts(const observation& o) const;
  /// Once the window is full: obs_type "SLR", text the '#'-joined predictions, value their mean,
  /// meta "<meta>,<field>"; made from `o` itself (a caller that is done with it moves it in).
  std::optional<observation> process(state& s, observation o) const;
  /// The same, keyed by sensor id + field.
  std::optional<observation> process(const observation& o);

 private:
  /// The least-squares line through the window; prediction k is at(n + k).
  struct fitted_line {
    double x_mean, y_mean, slope;
    double at(std::uint64_t x) const noexcept {
      return y_mean + slope * (static_cast<double>(x) - x_mean);
    }
  };
  /// Adds `y`; the line once the window is full.
  std::optional<fitted_line> fit(state& s, double y) const;

  sliding_regression_config config_;
  detail::keyed_states<state> states_;
};

}  // namespace tidemark::riot
