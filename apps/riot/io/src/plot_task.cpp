// The multi-line plot through PLplot: a fresh PLplot stream per chart on the pngcairo device or
// PLplot's own svg device (text as <text>, five times faster than svgcairo, which writes every
// glyph as a path), writing into an in-memory FILE (open_memstream) instead of a named file.
#include "tidemark/riot/io/plot_task.hpp"

#include <plplot/plplot.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "tidemark/plot/plplot_page.hpp"

namespace tidemark::riot::io {

namespace {

// '#' starts an escape sequence in PLplot text; "##" is a literal '#'.
std::string plplot_text(const std::string& s) {
  std::string out;
  for (char c : s) {
    out += c;
    if (c == '#') out += '#';
  }
  return out;
}

// Series colours (cmap0 indices 2..), readable on white; index 0 is the background, 1 the axes.
const std::vector<std::array<int, 3>> palette = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44},  {214, 39, 40},
                              {148, 103, 189}, {140, 86, 75}, {227, 119, 194}, {127, 127, 127},
                              {188, 189, 34}, {23, 190, 207}};
const int palette_size = static_cast<int>(palette.size());

std::string validate(const std::vector<plot_series>& series) {
  if (series.empty()) return "no series to plot";
  for (const auto& s : series) {
    if (s.x.empty()) return "series '" + s.name + "' has no points";
    if (s.x.size() != s.y.size())
      return "series '" + s.name + "' has " + std::to_string(s.x.size()) + " x values but " +
             std::to_string(s.y.size()) + " y values";
    auto finite = [](double v) { return std::isfinite(v); };
    if (!std::all_of(s.x.begin(), s.x.end(), finite) || !std::all_of(s.y.begin(), s.y.end(), finite))
      return "series '" + s.name + "' has a value that is not finite";
  }
  return {};
}

// [lo, hi] over all series' values, widened so that it is never empty and has a 5 % margin.
std::pair<double, double> bounds(const std::vector<plot_series>& series, bool of_x, double margin) {
  double lo = HUGE_VAL;
  double hi = -HUGE_VAL;
  for (const auto& s : series)
    for (double v : of_x ? s.x : s.y) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  if (hi - lo < 1e-12) {
    double pad = std::max(1.0, std::abs(lo) * 0.05);
    return {lo - pad, hi + pad};
  }
  return {lo - (hi - lo) * margin, hi + (hi - lo) * margin};
}

}  // namespace

plot_series reduce_to_columns(const plot_series& s, double x_lo, double x_hi, std::size_t columns) {
  plot_series out{s.name, {}, {}};
  columns = std::max<std::size_t>(columns, 1);
  const double scale = x_hi > x_lo ? static_cast<double>(columns) / (x_hi - x_lo) : 0.0;
  auto column = [&](double x) {
    return static_cast<std::size_t>(
        std::clamp((x - x_lo) * scale, 0.0, static_cast<double>(columns - 1)));
  };
  const std::size_t n = std::min(s.x.size(), s.y.size());
  for (std::size_t first = 0; first < n;) {
    const auto c = column(s.x[first]);
    std::size_t last = first;
    std::size_t lowest = first;
    std::size_t highest = first;
    while (last + 1 < n && column(s.x[last + 1]) == c) {
      ++last;
      if (s.y[last] < s.y[lowest]) lowest = last;
      if (s.y[last] > s.y[highest]) highest = last;
    }
    std::array<std::size_t, 4> keep{first, lowest, highest, last};
    std::sort(keep.begin(), keep.end());
    for (std::size_t k = 0; k < keep.size(); ++k) {
      if (k > 0 && keep[k] == keep[k - 1]) continue;
      out.x.push_back(s.x[keep[k]]);
      out.y.push_back(s.y[keep[k]]);
    }
    first = last + 1;
  }
  return out;
}

multi_line_plot::multi_line_plot(plot_config config) : config_(std::move(config)) {
  if (config_.width <= 0 || config_.height <= 0)
    throw std::invalid_argument("multi_line_plot: width and height must be > 0");
}

const char* multi_line_plot::extension() const noexcept {
  return config_.format == plot_format::png ? ".png" : ".svg";
}

std::optional<std::string> multi_line_plot::process(const std::string& title,
                                                    const std::vector<plot_series>& series) {
  if (auto problem = validate(series); !problem.empty()) {
    errors_.report({"multi_line_plot '" + title + "': " + problem});
    return std::nullopt;
  }
  const auto x_range = bounds(series, true, 0.0);
  std::vector<plot_series> reduced;
  if (config_.pixel_resolution)
    for (const auto& s : series)
      reduced.push_back(reduce_to_columns(s, x_range.first, x_range.second,
                                          2 * static_cast<std::size_t>(config_.width)));
  const auto& drawn = config_.pixel_resolution ? reduced : series;
  char* buffer = nullptr;
  std::size_t length = 0;
  FILE* out = open_memstream(&buffer, &length);
  if (!out) {
    errors_.report({"multi_line_plot '" + title + "': cannot open an in-memory output"});
    return std::nullopt;
  }
  plot::page page{config_.format == plot_format::png ? "pngcairo" : "svg", config_.width,
                  config_.height, palette};
  const auto abort_message = plot::draw_page(out, page, [&] {
    auto [ymin, ymax] = bounds(series, false, 0.05);
    plcol0(1);
    plenv(x_range.first, x_range.second, ymin, ymax, 0, 0);
    pllab(plplot_text(config_.x_label).c_str(), plplot_text(config_.y_label).c_str(),
          plplot_text(title).c_str());

    const auto n = static_cast<PLINT>(drawn.size());
    std::vector<PLINT> opts(n, PL_LEGEND_LINE), text_colors(n, 1), line_colors(n), line_styles(n, 1);
    std::vector<PLFLT> line_widths(n, 2.0);
    std::vector<std::string> names;
    std::vector<const char*> texts;
    for (PLINT i = 0; i < n; ++i) {
      const auto& s = drawn[i];
      line_colors[i] = 2 + i % palette_size;
      plcol0(line_colors[i]);
      plwidth(2.0);
      plline(static_cast<PLINT>(s.x.size()), s.x.data(), s.y.data());
      names.push_back(plplot_text(s.name));
    }
    for (const auto& name : names) texts.push_back(name.c_str());
    PLFLT legend_width = 0;
    PLFLT legend_height = 0;
    plwidth(1.0);
    pllegend(&legend_width, &legend_height, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX,
             PL_POSITION_RIGHT | PL_POSITION_TOP | PL_POSITION_INSIDE, 0.02, 0.02, 0.06, 0, 1, 1, 0, 0,
             n, opts.data(), 1.0, 0.8, 2.0, 0.0, text_colors.data(), texts.data(), nullptr, nullptr,
             nullptr, nullptr, line_colors.data(), line_styles.data(), line_widths.data(), nullptr,
             nullptr, nullptr, nullptr);
  });
  std::string bytes{buffer, length};
  std::free(buffer);  // NOLINT: open_memstream's buffer is malloc'ed
  if (!abort_message.empty() || bytes.empty()) {
    errors_.report({"multi_line_plot '" + title + "': PLplot failed" +
                    (abort_message.empty() ? std::string{": no output"} : ": " + abort_message)});
    return std::nullopt;
  }
  ++charts_;
  return bytes;
}

bool multi_line_plot::write(const std::string& path, const std::string& title,
                            const std::vector<plot_series>& series) {
  auto bytes = process(title, series);
  if (!bytes) return false;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  out.close();
  if (!out) {
    errors_.report({"multi_line_plot '" + title + "': cannot write " + path});
    return false;
  }
  return true;
}

}  // namespace tidemark::riot::io
