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
  /// Draw each line at the chart's resolution (reduce_to_columns over 2 x width columns of the
  /// x range): the same picture, a fraction of the points when lines are denser than pixels.
  /// false draws every point.
  bool pixel_resolution = true;
};

/// M4 (Jugel et al., "M4: A Visualization-Oriented Time Series Data Aggregation", VLDB 2014):
/// cuts [x_lo, x_hi] into `columns` equal columns and, of each run of consecutive points in one
/// column, keeps the first, the last, the lowest and the highest, in their order. The line
/// through the kept points spans, in every column, the same heights as the line through all of
/// them, so with columns narrower than a pixel it lights the same pixels. x outside the range
/// falls into the first or last column.
plot_series reduce_to_columns(const plot_series& s, double x_lo, double x_hi, std::size_t columns);

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
