// RIoTBench's multi-line plot (the STATS visualization): one chart per call with one line per
// series, rendered by PLplot to SVG (its svg device) or PNG (its pngcairo device) bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tidemark/core/error.hpp"

namespace tidemark::riot::io {

enum class plot_format { png, svg };

/// One line of the chart; x and y have the same length.
struct plot_series {
  std::string name;
  std::vector<double> x;
  std::vector<double> y;
};

struct plot_config {
  plot_format format = plot_format::svg;  ///< the originals wrote SVG
  int width = 800;                        ///< pixels (SVG: user units)
  int height = 600;
  std::string x_label = "time since first event (ms)";
  std::string y_label = "value";
};

/// Renders multi-line charts. Use an instance from one thread at a time; instances on different
/// threads may render at once (PLplot keeps global state, so renders are serialized inside).
class multi_line_plot {
 public:
  explicit multi_line_plot(plot_config config);

  /// The chart's file bytes, or nullopt (counted in errors()) when there is no series, a
  /// series has no points, x and y differ in length, or a value is not finite.
  std::optional<std::string> process(const std::string& title, const std::vector<plot_series>& series);
  /// Renders and writes the chart to `path`; false (counted) on bad input or a write failure.
  bool write(const std::string& path, const std::string& title, const std::vector<plot_series>& series);

  /// ".png" or ".svg".
  const char* extension() const noexcept;
  std::uint64_t charts() const noexcept { return charts_; }
  const error_sink& errors() const noexcept { return errors_; }

 private:
  plot_config config_;
  std::uint64_t charts_ = 0;
  error_sink errors_;
};

}  // namespace tidemark::riot::io
