// The PNG timeline of a chaos report through PLplot's pngcairo device (as the RIoT plot task
// does): results per second on top, the commit gap and the latency below, every fault a shaded
// band on each.
#include <plplot/plplot.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "tidemark/chaos/checker.hpp"
#include "tidemark/plot/plplot_page.hpp"

namespace tidemark::chaos {

namespace {

// One line of a panel: its points and its cmap0 colour.
struct line {
  std::vector<PLFLT> x, y;
  int colour = 2;
};

// cmap0: 0 background, 1 axes, 2 results line, 3 gap line, 4 band fill, 5 band text,
// 6 latency p50 line, 7 latency p99 line
void panel(const report& r, const std::vector<line>& lines, double xmax, const char* ylabel,
           const char* title) {
  // room above the lines for three rows of fault labels
  double ymax = 1;
  for (const auto& l : lines)
    for (auto v : l.y) ymax = std::max(ymax, v * 1.35);
  plcol0(1);
  plenv(0, xmax, 0, ymax, 0, 0);
  auto seconds = [&](std::int64_t ms) {
    return static_cast<double>(ms - r.run.started_ms) / 1000.0;
  };
  for (const auto& f : r.faults) {
    const double from = seconds(f.fault.started_ms);
    const double to =
        std::max(f.fault.healed_ms > 0 ? seconds(f.fault.healed_ms) : xmax, from + 0.1);
    PLFLT bx[4] = {from, to, to, from};
    PLFLT by[4] = {0, 0, ymax, ymax};
    plcol0(4);
    plfill(4, bx, by);
  }
  // over the bands: a label goes into the first row where it does not run into the previous
  // label; with faults too close for any row it is left out (report.json lists every fault)
  constexpr int rows = 3;
  const double char_width = xmax * 0.0085;  // of the 1200-pixel page at PLplot's default size
  double row_free_from[rows] = {-1e300, -1e300, -1e300};
  plcol0(5);
  for (const auto& f : r.faults) {
    std::string label{to_string(f.fault.planned.kind)};
    for (const auto& t : f.fault.planned.targets) label += " " + t;
    const double x = seconds(f.fault.started_ms) + xmax * 0.003;
    for (int row = 0; row < rows; ++row) {
      if (x < row_free_from[row]) continue;
      plptex(x, ymax * (0.94 - 0.075 * row), 1, 0, 0, label.c_str());
      row_free_from[row] = x + char_width * (static_cast<double>(label.size()) + 1);
      break;
    }
  }
  plcol0(1);
  plbox("bcnst", 0, 0, "bcnstv", 0, 0);
  pllab("seconds since the start of the run", ylabel, title);
  for (const auto& l : lines) {
    if (l.x.empty()) continue;
    plcol0(l.colour);
    plwidth(2.0);
    plline(static_cast<PLINT>(l.x.size()), l.x.data(), l.y.data());
    plwidth(1.0);
  }
}

}  // namespace

void write_timeline_png(const report& r, const std::string& path) {
  line results{{}, {}, 2}, gaps{{}, {}, 3}, p50{{}, {}, 6}, p99{{}, {}, 7};
  for (const auto& p : r.timeline) {
    results.x.push_back(p.t_s);
    results.y.push_back(p.results);
    gaps.x.push_back(p.t_s);
    gaps.y.push_back(p.commit_gap_s);
    if (p.results == 0) continue;  // no latency in a second without results
    p50.x.push_back(p.t_s);
    p50.y.push_back(p.latency_p50_s);
    p99.x.push_back(p.t_s);
    p99.y.push_back(p.latency_p99_s);
  }
  double xmax = std::max(1.0, static_cast<double>(r.run.ended_ms - r.run.started_ms) / 1000.0);
  if (!results.x.empty()) xmax = std::max(xmax, results.x.back() + 1);
  FILE* out = std::fopen(path.c_str(), "wb");
  if (!out) throw std::runtime_error("timeline '" + path + "': cannot be written");
  plot::page page{"pngcairo", 1200, 1100, {}, 3};  // colours as listed above panel()
  page.colours = {{31, 119, 180}, {214, 39, 40}, {255, 221, 170}, {120, 60, 0}, {44, 160, 44},
                  {148, 103, 189}};
  const auto abort_message = plot::draw_page(out, page, [&] {
    const std::string title = std::string{"chaos run: "} + (r.passed() ? "passed" : "FAILED") +
                              ", " + std::to_string(r.violation_count()) + " violations";
    panel(r, {results}, xmax, "results committed per second", title.c_str());
    panel(r, {gaps}, xmax, "longest wait between commits (s)", "");
    panel(r, {p50, p99}, xmax, "latency (s): p50 green, p99 purple",
          "emission-to-commit latency of the results committed each second");
  });
  if (!abort_message.empty())
    throw std::runtime_error("timeline '" + path + "': PLplot failed: " + abort_message);
}

}  // namespace tidemark::chaos
