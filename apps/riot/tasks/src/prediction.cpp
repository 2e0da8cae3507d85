// Decision tree (C4.5), linear regression (Eigen) and sliding regression tasks (see prediction.hpp).
#include "tidemark/riot/prediction.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>

#include "text.hpp"
#include "tidemark/riot/model_codec.hpp"
#include "tidemark/riot/statistics.hpp"

namespace tidemark::riot {

namespace {

// Parses the numeric columns `cols` of one CSV row into `out`; the error names the column.
std::optional<std::string> parse_columns(std::string_view row, const std::vector<std::size_t>& cols,
                                         std::vector<std::string_view>& cells, std::vector<double>& out) {
  split_fields(trim(row), ',', cells);
  out.clear();
  for (auto c : cols) {
    if (c >= cells.size())
      return "has " + std::to_string(cells.size()) + " columns, column " + std::to_string(c) + " is needed";
    auto x = detail::parse_double(cells[c]);
    if (!x) return "column " + std::to_string(c) + " is not a number: \"" + std::string(cells[c]) + "\"";
    out.push_back(*x);
  }
  return std::nullopt;
}

}  // namespace

// ---- training data ------------------------------------------------------------------------------

arff_data arff_data::parse(std::string_view text, const std::string& origin) {
  arff_data d;
  bool in_data = false;
  std::vector<std::string_view> cells;
  auto err = for_each_line(text, [&](std::size_t, std::string_view line) -> std::optional<std::string> {
    if (line.front() == '%') return std::nullopt;
    if (!in_data) {
      auto lower = std::string(line.substr(0, std::min<std::size_t>(line.size(), 10)));
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
      if (lower.rfind("@relation", 0) == 0) {
        d.relation = std::string(trim(line.substr(9)));
      } else if (lower.rfind("@attribute", 0) == 0) {
        auto rest = trim(line.substr(10));
        auto space = rest.find_first_of(" \t");
        if (space == std::string_view::npos) return std::string("@attribute without a type");
        attribute a{std::string(rest.substr(0, space)), {}};
        auto type = trim(rest.substr(space));
        if (type.front() == '{') {
          auto close = type.find('}');
          if (close == std::string_view::npos) return std::string("nominal type without '}'");
          split_fields(type.substr(1, close - 1), ',', cells);
          for (auto c : cells) a.labels.emplace_back(trim(c));
        } else {
          std::string t(type);
          std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
          if (t != "numeric" && t != "real" && t != "integer")
            return "attribute '" + a.name + "' has unsupported type '" + std::string(type) + "'";
        }
        d.attributes.push_back(std::move(a));
      } else if (lower.rfind("@data", 0) == 0) {
        in_data = true;
      } else {
        return "unexpected header line '" + std::string(line) + "'";
      }
      return std::nullopt;
    }
    split_fields(line, ',', cells);
    if (cells.size() != d.attributes.size())
      return "expected " + std::to_string(d.attributes.size()) + " values, got " + std::to_string(cells.size());
    auto& row = d.rows.emplace_back();
    for (std::size_t i = 0; i < cells.size(); ++i) {
      auto cell = trim(cells[i]);
      auto& labels = d.attributes[i].labels;
      if (labels.empty()) {
        auto x = detail::parse_double(cell);
        if (!x) return "value " + std::to_string(i + 1) + " is not a number: \"" + std::string(cell) + "\"";
        row.push_back(*x);
      } else {
        auto it = std::find(labels.begin(), labels.end(), cell);
        if (it == labels.end()) return "value " + std::to_string(i + 1) + " '" + std::string(cell) + "' is not a declared label";
        row.push_back(static_cast<double>(it - labels.begin()));
      }
    }
    return std::nullopt;
  });
  if (err) throw std::runtime_error("ARFF '" + origin + "', " + *err);
  if (!in_data) throw std::runtime_error("ARFF '" + origin + "': no @data section");
  return d;
}

arff_data arff_data::read(const std::string& path) {
  return parse(text_file(path).text(), path);
}

labelled_rows arff_data::to_labelled() const {
  if (attributes.empty() || attributes.back().labels.empty())
    throw std::invalid_argument("ARFF '" + relation + "': the last attribute must be the nominal class");
  labelled_rows out;
  for (std::size_t i = 0; i + 1 < attributes.size(); ++i) out.attributes.push_back(attributes[i].name);
  out.classes = attributes.back().labels;
  for (auto& r : rows) {
    out.rows.emplace_back(r.begin(), r.end() - 1);
    out.labels.push_back(static_cast<std::uint32_t>(r.back()));
  }
  return out;
}

labelled_rows read_labelled_csv(const std::string& path, std::vector<std::string> attributes) {
  labelled_rows out;
  out.attributes = std::move(attributes);
  std::vector<std::string_view> cells;
  text_file(path).for_each_line([&](std::size_t, std::string_view line) -> std::optional<std::string> {
    split_fields(line, ',', cells);
    if (cells.size() != out.attributes.size() + 1)
      return "expected " + std::to_string(out.attributes.size() + 1) + " columns";
    auto& row = out.rows.emplace_back();
    for (std::size_t c = 0; c + 1 < cells.size(); ++c) {
      auto x = detail::parse_double(cells[c]);
      if (!x) return "column " + std::to_string(c + 1) + ": not a number";
      row.push_back(*x);
    }
    std::string label(trim(cells.back()));
    auto it = std::find(out.classes.begin(), out.classes.end(), label);
    if (it == out.classes.end()) it = out.classes.insert(out.classes.end(), label);
    out.labels.push_back(static_cast<std::uint32_t>(it - out.classes.begin()));
    return std::nullopt;
  });
  return out;
}

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) throw std::invalid_argument("percentile of no values");
  auto n = static_cast<double>(sorted.size());
  auto pos = p * (n + 1) / 100;
  if (pos < 1) return sorted.front();
  if (pos >= n) return sorted.back();
  auto lower = std::floor(pos);
  auto d = pos - lower;
  auto lo = sorted[static_cast<std::size_t>(lower) - 1];
  auto hi = sorted[static_cast<std::size_t>(lower)];
  return lo + d * (hi - lo);
}

const std::vector<std::string>& quartile_labels::classes() {
  static const std::vector<std::string> names{"BAD", "GOOD", "VERYGOOD", "EXCELLENT"};
  return names;
}

quartile_labels quartile_labels::of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return {percentile(values, 50), percentile(values, 75), percentile(values, 100)};
}

std::uint32_t quartile_labels::label(double x) const noexcept {
  if (x >= p100) return 3;
  if (x >= p75) return 2;
  if (x >= p50) return 1;
  return 0;
}

// ---- decision tree ------------------------------------------------------------------------------

std::uint32_t decision_tree_model::classify(const double* x) const noexcept {
  std::uint32_t i = 0;
  while (!nodes[i].leaf) i = x[nodes[i].index] <= nodes[i].threshold ? nodes[i].left : nodes[i].right;
  return nodes[i].index;
}

std::size_t decision_tree_model::leaf_count() const noexcept {
  return static_cast<std::size_t>(std::count_if(nodes.begin(), nodes.end(), [](const node& n) { return n.leaf; }));
}

namespace {

double entropy_bits(const std::vector<double>& counts, double n) {
  if (n <= 0) return 0;
  double h = 0;
  for (auto c : counts)
    if (c > 0) h -= c * std::log2(c / n);
  return h / n;
}

// Upper confidence bound on errors beyond the observed `e` of `n` (Quinlan's pessimistic estimate,
// as Weka's Stats.addErrs).
double added_errors(double n, double e, double z, double cf) {
  if (e < 1) {
    auto base = n * (1 - std::pow(cf, 1 / n));
    if (e == 0) return base;
    return base + e * (added_errors(n, 1, z, cf) - base);
  }
  if (e + 0.5 >= n) return std::max(n - e, 0.0);
  auto f = (e + 0.5) / n;
  auto r = (f + z * z / (2 * n) + z * std::sqrt(f / n - f * f / n + z * z / (4 * n * n))) / (1 + z * z / n);
  return r * n - e;
}

// z with P(Z > z) = cf, by bisection on the normal tail.
double normal_upper_quantile(double cf) {
  double lo = -10, hi = 10;
  for (int i = 0; i < 200; ++i) {
    auto mid = (lo + hi) / 2;
    (0.5 * std::erfc(mid / std::sqrt(2.0)) > cf ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

// Builds the tree from rows sorted once per attribute (as SLIQ does): a node holds, for every
// attribute, its rows in that attribute's order, and a split divides each list in order, so no node
// sorts. Rows of equal value may sit in any order: thresholds fall only between distinct values,
// where the class counts on either side do not depend on it.
class tree_builder {
 public:
  using sorted_rows = std::vector<std::vector<std::uint32_t>>;  // per attribute, ascending by value

  tree_builder(const labelled_rows& data, std::size_t min_leaf, double cf)
      : labels_(data.labels),
        classes_(data.classes.size()),
        min_leaf_(min_leaf),
        cf_(cf),
        z_(normal_upper_quantile(cf)),
        goes_left_(data.rows.size()) {
    columns_.assign(data.attributes.size(), std::vector<double>(data.rows.size()));
    for (std::size_t r = 0; r < data.rows.size(); ++r)
      for (std::size_t a = 0; a < columns_.size(); ++a) columns_[a][r] = data.rows[r][a];
  }

  // Every row, sorted by each attribute.
  sorted_rows all_rows() const {
    sorted_rows sorted(columns_.size());
    std::vector<std::pair<double, std::uint32_t>> by_value(labels_.size());
    for (std::size_t a = 0; a < columns_.size(); ++a) {
      for (std::uint32_t r = 0; r < by_value.size(); ++r) by_value[r] = {columns_[a][r], r};
      std::sort(by_value.begin(), by_value.end());
      sorted[a].reserve(by_value.size());
      for (auto& v : by_value) sorted[a].push_back(v.second);
    }
    return sorted;
  }

  // Builds the subtree of `rows` at the end of `nodes`; returns its pruned estimated errors.
  double build(sorted_rows& rows, std::vector<decision_tree_model::node>& nodes) {
    auto self = nodes.size();
    nodes.emplace_back();
    std::vector<double> counts(classes_, 0);
    for (auto r : rows.front()) ++counts[labels_[r]];
    auto majority = static_cast<std::uint32_t>(std::max_element(counts.begin(), counts.end()) - counts.begin());
    auto n = static_cast<double>(rows.front().size());
    auto errors = n - counts[majority];
    auto leaf_estimate = errors + added_errors(n, errors, z_, cf_);
    nodes[self].index = majority;

    auto split = best_split(rows, counts);
    if (!split) return leaf_estimate;
    const auto& column = columns_[split->attribute];
    std::size_t left_n = 0;
    for (auto r : rows.front()) left_n += goes_left_[r] = column[r] <= split->threshold;
    sorted_rows left(rows.size()), right(rows.size());
    for (std::size_t a = 0; a < rows.size(); ++a) {
      left[a].reserve(left_n);
      right[a].reserve(rows[a].size() - left_n);
      for (auto r : rows[a]) (goes_left_[r] ? left[a] : right[a]).push_back(r);
    }
    rows.clear();
    rows.shrink_to_fit();
    nodes[self].leaf = false;
    nodes[self].index = split->attribute;
    nodes[self].threshold = split->threshold;
    nodes[self].left = static_cast<std::uint32_t>(nodes.size());
    auto subtree = build(left, nodes);
    nodes[self].right = static_cast<std::uint32_t>(nodes.size());
    subtree += build(right, nodes);
    if (leaf_estimate <= subtree + 0.1) {  // subtree replacement; the subtree is contiguous after self
      nodes.resize(self + 1);
      nodes[self] = decision_tree_model::node{true, majority, 0, 0, 0};
      return leaf_estimate;
    }
    return subtree;
  }

 private:
  struct candidate {
    std::uint32_t attribute;
    double threshold;
    double gain;
    double ratio;
  };

  std::optional<candidate> best_split(const sorted_rows& rows,
                                      const std::vector<double>& counts) const {
    const auto size = rows.front().size();
    auto n = static_cast<double>(size);
    if (size < 2 * min_leaf_) return std::nullopt;
    if (std::count_if(counts.begin(), counts.end(), [](double c) { return c > 0; }) < 2) return std::nullopt;
    // C4.5's minimum branch size: 10 % of the average class size, within [min_leaf, 25].
    auto min_branch = std::clamp(0.1 * n / static_cast<double>(classes_), static_cast<double>(min_leaf_), 25.0);
    auto parent = entropy_bits(counts, n);
    std::vector<candidate> found;
    std::vector<double> left(classes_), right(classes_);
    for (std::uint32_t a = 0; a < columns_.size(); ++a) {
      const auto& column = columns_[a];
      const auto& sorted = rows[a];
      std::fill(left.begin(), left.end(), 0);
      right = counts;
      double best_gain = -1, best_threshold = 0, best_left_n = 0;
      std::size_t candidates = 0;
      for (std::size_t i = 0; i + 1 < size; ++i) {
        auto label = labels_[sorted[i]];
        ++left[label];
        --right[label];
        auto value = column[sorted[i]], next = column[sorted[i + 1]];
        if (value == next) continue;
        auto nl = static_cast<double>(i + 1), nr = n - nl;
        if (nl < min_branch || nr < min_branch) continue;
        ++candidates;
        auto gain = parent - (nl * entropy_bits(left, nl) + nr * entropy_bits(right, nr)) / n;
        if (gain > best_gain) {
          best_gain = gain;
          best_threshold = (value + next) / 2;
          best_left_n = nl;
        }
      }
      if (candidates == 0) continue;
      auto gain = best_gain - std::log2(static_cast<double>(candidates)) / n;
      if (gain <= 0) continue;
      auto pl = best_left_n / n, pr = 1 - pl;
      auto split_info = -(pl * std::log2(pl) + pr * std::log2(pr));
      found.push_back({a, best_threshold, gain, gain / split_info});
    }
    if (found.empty()) return std::nullopt;
    double average = 0;
    for (auto& c : found) average += c.gain;
    average /= static_cast<double>(found.size());
    std::optional<candidate> best;
    for (auto& c : found)
      if (c.gain >= average - 1e-3 && (!best || c.ratio > best->ratio)) best = c;
    return best;
  }

  const std::vector<std::uint32_t>& labels_;
  std::vector<std::vector<double>> columns_;  // columns_[attribute][row]
  std::size_t classes_;
  std::size_t min_leaf_;
  double cf_;
  double z_;
  std::vector<char> goes_left_;  // per row: the side of the split being made
};

}  // namespace

decision_tree_model train_decision_tree(const labelled_rows& data, std::size_t min_leaf, double confidence) {
  if (data.rows.empty() || data.rows.size() != data.labels.size())
    throw std::invalid_argument("decision tree: need one label per row and at least one row");
  if (data.classes.empty()) throw std::invalid_argument("decision tree: no classes");
  if (data.attributes.empty()) throw std::invalid_argument("decision tree: no attributes");
  for (auto& r : data.rows)
    if (r.size() != data.attributes.size())
      throw std::invalid_argument("decision tree: a row has " + std::to_string(r.size()) + " values for " +
                                  std::to_string(data.attributes.size()) + " attributes");
  if (!(confidence > 0 && confidence < 0.5) || min_leaf == 0)
    throw std::invalid_argument("decision tree: need min_leaf >= 1 and 0 < confidence < 0.5");
  decision_tree_model m;
  m.attributes = data.attributes;
  m.classes = data.classes;
  tree_builder builder(data, min_leaf, confidence);
  auto rows = builder.all_rows();
  builder.build(rows, m.nodes);
  return m;
}

decision_tree_config decision_tree_config::for_dataset(dataset d) {
  switch (d) {
    case dataset::taxi: return {{0, 1}, 2, 2, 0.25, {"trip_time_in_secs", "trip_distance"}};
    case dataset::city: return {{0, 1, 2, 3}, 4, 2, 0.25, {"temperature", "humidity", "light", "dust"}};
    case dataset::fit:
      return {{0, 1, 2, 3, 4, 5, 6, 7, 8},
              9,
              2,
              0.25,
              {"acc_ankle_x", "acc_ankle_y", "acc_ankle_z", "acc_arm_x", "acc_arm_y", "acc_arm_z",
               "acc_chest_x", "acc_chest_y", "acc_chest_z"}};
    case dataset::grid: break;
  }
  throw std::invalid_argument("decision tree: GRID batches have a single column; there is nothing to classify");
}

decision_tree_train::decision_tree_train(decision_tree_config config) : config_(std::move(config)) {
  if (config_.attribute_names.size() != config_.feature_columns.size())
    throw std::invalid_argument("decision_tree_train: one attribute name per feature column is needed");
}

expected<std::string> decision_tree_train::process(std::string_view csv_batch) {
  labelled_rows data;
  data.attributes = config_.attribute_names;
  data.classes = quartile_labels::classes();
  std::vector<double> label_values;
  std::vector<std::string_view> cells;
  auto cols = config_.feature_columns;
  cols.push_back(config_.label_column);
  std::vector<double> parsed;
  auto err = for_each_line(csv_batch, [&](std::size_t, std::string_view line) {
    auto e = parse_columns(line, cols, cells, parsed);
    if (!e) {
      label_values.push_back(parsed.back());
      parsed.pop_back();
      data.rows.push_back(parsed);
    }
    return e;
  });
  if (err) return fail("decision_tree_train", *err);
  if (data.rows.empty()) return fail("decision_tree_train", "the batch has no rows");
  auto quartiles = quartile_labels::of(label_values);
  for (auto v : label_values) data.labels.push_back(quartiles.label(v));
  return model_codec::encode(train_decision_tree(data, config_.min_leaf, config_.confidence));
}

decision_tree_classify::decision_tree_classify(decision_tree_config config, decision_tree_model model)
    : config_(std::move(config)), model_(std::move(model)) {
  if (model_.attributes.size() != config_.feature_columns.size() || model_.nodes.empty())
    throw std::invalid_argument("decision_tree_classify: the model's attributes do not match the feature columns");
}

expected<bool> decision_tree_classify::update_model(std::string_view bytes) {
  auto m = model_codec::decode_decision_tree(bytes);
  if (!m) return fail("decision_tree_classify", "model update rejected: " + m.error().message);
  if (m->attributes.size() != config_.feature_columns.size())
    return fail("decision_tree_classify", "model update rejected: it has " + std::to_string(m->attributes.size()) +
                                              " attributes, the task has " +
                                              std::to_string(config_.feature_columns.size()) + " feature columns");
  model_ = std::move(*m);
  return true;
}

expected<std::string> decision_tree_classify::process(std::string_view csv_row) {
  if (auto e = parse_columns(csv_row, config_.feature_columns, cells_, x_))
    return fail("decision_tree_classify", "row: " + *e);
  return model_.classes[model_.classify(x_.data())];
}

// ---- linear regression ---------------------------------------------------------------------------

double linear_regression_model::predict(const double* x) const noexcept {
  auto y = intercept;
  for (std::size_t i = 0; i < coefficients.size(); ++i) y += coefficients[i] * x[i];
  return y;
}

linear_regression_config linear_regression_config::for_dataset(dataset d) {
  auto dt = decision_tree_config::for_dataset(d);  // same columns: features and the labelled target
  return {dt.feature_columns, dt.label_column, dt.attribute_names};
}

linear_regression_model train_linear_regression(const std::vector<std::vector<double>>& x,
                                                const std::vector<double>& y,
                                                std::vector<std::string> attributes) {
  if (x.empty() || x.size() != y.size())
    throw std::invalid_argument("linear regression: need one target per row and at least one row");
  auto p = x.front().size();
  Eigen::MatrixXd a(x.size(), p + 1);
  Eigen::VectorXd b(y.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (x[i].size() != p) throw std::invalid_argument("linear regression: rows have different lengths");
    a(static_cast<Eigen::Index>(i), 0) = 1;
    for (std::size_t j = 0; j < p; ++j) a(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j + 1)) = x[i][j];
    b(static_cast<Eigen::Index>(i)) = y[i];
  }
  Eigen::VectorXd beta = a.colPivHouseholderQr().solve(b);
  linear_regression_model m;
  m.attributes = attributes.empty() ? std::vector<std::string>(p) : std::move(attributes);
  m.intercept = beta(0);
  for (std::size_t j = 0; j < p; ++j) m.coefficients.push_back(beta(static_cast<Eigen::Index>(j + 1)));
  return m;
}

linear_regression_train::linear_regression_train(linear_regression_config config) : config_(std::move(config)) {}

expected<std::string> linear_regression_train::process(std::string_view csv_batch) {
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  std::vector<std::string_view> cells;
  auto cols = config_.feature_columns;
  cols.push_back(config_.target_column);
  std::vector<double> parsed;
  auto err = for_each_line(csv_batch, [&](std::size_t, std::string_view line) {
    auto e = parse_columns(line, cols, cells, parsed);
    if (!e) {
      y.push_back(parsed.back());
      parsed.pop_back();
      x.push_back(parsed);
    }
    return e;
  });
  if (err) return fail("linear_regression_train", *err);
  if (x.empty()) return fail("linear_regression_train", "the batch has no rows");
  return model_codec::encode(train_linear_regression(x, y, config_.attribute_names));
}

linear_regression_predict::linear_regression_predict(linear_regression_config config, linear_regression_model model)
    : config_(std::move(config)), model_(std::move(model)) {
  if (model_.coefficients.size() != config_.feature_columns.size())
    throw std::invalid_argument("linear_regression_predict: the model's attributes do not match the feature columns");
}

expected<bool> linear_regression_predict::update_model(std::string_view bytes) {
  auto m = model_codec::decode_linear_regression(bytes);
  if (!m) return fail("linear_regression_predict", "model update rejected: " + m.error().message);
  if (m->coefficients.size() != config_.feature_columns.size())
    return fail("linear_regression_predict", "model update rejected: it has " + std::to_string(m->coefficients.size()) +
                                                 " coefficients, the task has " +
                                                 std::to_string(config_.feature_columns.size()) + " feature columns");
  model_ = std::move(*m);
  return true;
}

expected<double> linear_regression_predict::process(std::string_view csv_row) {
  if (auto e = parse_columns(csv_row, config_.feature_columns, cells_, x_))
    return fail("linear_regression_predict", "row: " + *e);
  return model_.predict(x_.data());
}

// ---- sliding-window linear regression --------------------------------------------------------

sliding_regression_config sliding_regression_config::for_dataset(dataset d) {
  return {10, d == dataset::grid ? std::size_t{2} : std::size_t{10}, statistics_fields(d)};
}

sliding_regression::sliding_regression(sliding_regression_config config) : config_(std::move(config)) {
  if (config_.train_window < 2 || config_.predict_window == 0)
    throw std::invalid_argument("sliding_regression: need train_window >= 2 and predict_window >= 1");
}

std::vector<double> sliding_regression::step(state& s, double y) const {
  std::vector<double> out;
  if (auto line = fit(s, y)) {
    out.reserve(config_.predict_window);
    for (std::size_t k = 1; k <= config_.predict_window; ++k) out.push_back(line->at(s.n + k));
  }
  return out;
}

std::optional<sliding_regression::fitted_line> sliding_regression::fit(state& s, double y) const {
  const auto cap = config_.train_window;
  // a ring indexed by arrival: input k (0-based) sits at k mod cap
  if (s.window.size() < cap) {
    s.window.push_back(y);
  } else {
    s.window[s.n % cap] = y;
  }
  ++s.n;
  if (s.n <= cap) return std::nullopt;
  // the i-th oldest of the window's inputs n-cap+1 ... n (1-based) sits at (n + i) mod cap
  auto at = [&](std::size_t i) { return s.window[(s.n + i) % cap]; };
  // x of the window's values: n-w+1 ... n. Fit around the window's centre for accuracy.
  auto w = static_cast<double>(cap);
  auto x0 = static_cast<double>(s.n) - w + 1;
  auto x_mean = x0 + (w - 1) / 2;
  double y_sum = 0;
  for (std::size_t i = 0; i < cap; ++i) y_sum += at(i);  // in arrival order, as before the ring
  auto y_mean = y_sum / w;
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < cap; ++i) {
    auto dx = x0 + static_cast<double>(i) - x_mean;
    sxy += dx * (at(i) - y_mean);
    sxx += dx * dx;
  }
  return fitted_line{x_mean, y_mean, sxy / sxx};
}

bool sliding_regression::accepts(const observation& o) const {
  return o.numeric && !o.missing &&
         std::find(config_.fields.begin(), config_.fields.end(), o.obs_type) != config_.fields.end();
}

std::optional<observation> sliding_regression::process(const observation& o) {
  if (!accepts(o)) return std::nullopt;
  return process(states_.get(o, [] { return state{}; }), o);
}

std::optional<observation> sliding_regression::process(state& s, observation o) const {
  if (!accepts(o)) return std::nullopt;
  auto line = fit(s, o.value);
  if (!line) return std::nullopt;
  detail::append_field(o.meta, o.obs_type);
  o.obs_type = "SLR";
  o.text.clear();
  o.text.reserve(config_.predict_window * 25);  // a double's shortest text: at most 24 characters
  double sum = 0;  // the mean of the predictions, summed in their order
  for (std::size_t k = 1; k <= config_.predict_window; ++k) {
    const auto prediction = line->at(s.n + k);
    if (k > 1) o.text.push_back('#');
    detail::append_double(o.text, prediction);
    sum += prediction;
  }
  o.value = sum / static_cast<double>(config_.predict_window);
  return std::optional<observation>{std::move(o)};
}

}  // namespace tidemark::riot
