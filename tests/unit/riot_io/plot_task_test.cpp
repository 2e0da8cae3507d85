// The multi-line plot renders CITY temperature and humidity to real PNG and SVG files: right
// signature, right size, non-trivial content; bad series are counted errors.
#define BOOST_TEST_MODULE riot_plot_task
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "../../support/temp_dir.hpp"
#include "sample_data.hpp"
#include "tidemark/riot/io/plot_task.hpp"

using namespace tidemark::riot::io;
using tidemark::test::temp_dir;

namespace {

// Temperature and humidity of the first 200 CITY events against time since the first event.
std::vector<plot_series> city_series() {
  auto events = tidemark::test::city_events(200);
  plot_series temperature{"temperature", {}, {}};
  plot_series humidity{"humidity", {}, {}};
  for (const auto& e : events) {
    double x = static_cast<double>(e.ts - events.front().ts);
    temperature.x.push_back(x);
    temperature.y.push_back(std::stod(e.temperature));
    humidity.x.push_back(x);
    humidity.y.push_back(std::stod(e.humidity));
  }
  return {temperature, humidity};
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

std::uint32_t big_endian_u32(const std::string& s, std::size_t at) {
  std::uint32_t x = 0;
  for (std::size_t i = 0; i < 4; ++i) x = (x << 8) | static_cast<unsigned char>(s[at + i]);
  return x;
}

// The "x,y" points of every polyline drawn in `colour` (the driver splits long lines).
std::vector<std::string> points_in(const std::string& svg, const std::string& colour) {
  std::vector<std::string> points;
  for (auto at = svg.find("<polyline"); at != std::string::npos;
       at = svg.find("<polyline", at + 1)) {
    const auto end = svg.find("/>", at);
    const auto element = svg.substr(at, end - at);
    if (element.find("stroke=\"" + colour + "\"") == std::string::npos) continue;
    const auto from = element.find("points=\"") + 8;
    std::istringstream list(element.substr(from, element.find('"', from) - from));
    for (std::string p; list >> p;) points.push_back(p);
  }
  return points;
}

}  // namespace

BOOST_AUTO_TEST_CASE(png_charts_have_the_png_signature_and_configured_size) {
  multi_line_plot plot{{plot_format::png, 800, 600}};
  BOOST_TEST(plot.extension() == std::string{".png"});
  auto png = plot.process("CITY sensors", city_series());
  BOOST_REQUIRE(png.has_value());
  BOOST_TEST(png->substr(0, 8) == std::string("\x89PNG\r\n\x1a\n", 8));
  BOOST_TEST(png->substr(12, 4) == "IHDR");
  BOOST_TEST(big_endian_u32(*png, 16) == 800u);
  BOOST_TEST(big_endian_u32(*png, 20) == 600u);
  BOOST_TEST(png->size() > 10000u);  // two lines of 200 points, axes, labels and a legend
  BOOST_TEST(plot.charts() == 1u);
}

BOOST_AUTO_TEST_CASE(svg_charts_are_svg_documents_with_the_series_drawn) {
  temp_dir dir;
  plot_config every_point{plot_format::svg, 800, 600};
  every_point.pixel_resolution = false;
  multi_line_plot plot{every_point};
  const auto path = dir / "chart1422748800000-0.svg";
  BOOST_REQUIRE(plot.write(path, "CITY #1 sensors", city_series()));
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  auto svg = text.str();
  BOOST_TEST(svg.rfind("<?xml", 0) == 0u);
  auto root = svg.find("<svg");
  BOOST_REQUIRE(root != std::string::npos);
  BOOST_TEST(svg.find("width=\"800pt\"", root) != std::string::npos);
  BOOST_TEST(svg.find("height=\"600pt\"", root) != std::string::npos);
  BOOST_TEST(svg.find("</svg>") != std::string::npos);
  BOOST_TEST(svg.size() > 10000u);
  // Each series is one polyline of all its 200 points in its palette colour, plus a legend line.
  for (const char* colour : {"stroke=\"#1F77B4\"", "stroke=\"#FF7F0E\""}) {
    BOOST_TEST(count(svg, colour) == 2u);
    auto line = svg.find(colour);
    auto points = svg.find("points=\"", line);
    auto end = svg.find('"', points + 8);
    BOOST_TEST(count(svg.substr(points, end - points), ",") == 200u);
  }
  BOOST_TEST(plot.errors().count() == 0u);
}

BOOST_AUTO_TEST_CASE(bad_series_are_counted_errors) {
  multi_line_plot plot{{}};
  BOOST_TEST(!plot.process("empty", {}).has_value());
  BOOST_TEST(plot.errors().last() == "multi_line_plot 'empty': no series to plot");
  BOOST_TEST(!plot.process("t", {{"dust", {1, 2}, {3}}}).has_value());
  BOOST_TEST(plot.errors().last() == "multi_line_plot 't': series 'dust' has 2 x values but 1 y values");
  BOOST_TEST(!plot.process("t", {{"light", {1}, {std::nan("")}}}).has_value());
  BOOST_TEST(plot.errors().count() == 3u);
  BOOST_TEST(plot.charts() == 0u);
  // A single point (flat ranges) still renders.
  BOOST_TEST(plot.process("one", {{"light", {0}, {5}}}).has_value());
}

BOOST_AUTO_TEST_CASE(reduce_to_columns_keeps_first_lowest_highest_and_last_of_each_run) {
  // [0, 30] in 3 columns of 10: indices 0-4 share column 0, 5-6 column 1, 7 column 2.
  auto r =
      reduce_to_columns({"t", {0, 1, 2, 3, 4, 10, 11, 25}, {5, 9, 1, 7, 6, 3, 4, 2}}, 0, 30, 3);
  BOOST_TEST(r.name == "t");
  BOOST_TEST(r.x == (std::vector<double>{0, 1, 2, 4, 10, 11, 25}),
             boost::test_tools::per_element());
  BOOST_TEST(r.y == (std::vector<double>{5, 9, 1, 6, 3, 4, 2}), boost::test_tools::per_element());
  // A line that comes back into a column starts a new run there: each run keeps its own ends.
  r = reduce_to_columns(
      {"u", {0, 1, 2, 3, 4, 15, 0, 1, 2, 3, 4}, {1, 2, 3, 4, 5, 0, 5, 4, 3, 2, 1}}, 0, 30, 3);
  BOOST_TEST(r.x == (std::vector<double>{0, 4, 15, 0, 4}), boost::test_tools::per_element());
  BOOST_TEST(r.y == (std::vector<double>{1, 5, 0, 5, 1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(dense_lines_are_drawn_at_the_charts_resolution_with_the_same_extremes) {
  // 100,000 points over 1,000 x units: ~60 per column of an 800-wide chart's 1,600 columns.
  plot_series dense{"dense", {}, {}};
  for (int i = 0; i < 100000; ++i) {
    dense.x.push_back(i * 0.01);
    dense.y.push_back(std::sin(i * 0.37) * (1 + i % 7));
  }
  multi_line_plot reduced{{plot_format::svg, 800, 600}};
  plot_config every_point{plot_format::svg, 800, 600};
  every_point.pixel_resolution = false;
  multi_line_plot full{every_point};
  const auto few = reduced.process("dense", {dense});
  const auto all = full.process("dense", {dense});
  BOOST_REQUIRE(few && all);
  const auto kept = points_in(*few, "#1F77B4");
  const auto drawn = points_in(*all, "#1F77B4");
  // every point (the driver repeats one where it splits a line) and the legend's line
  BOOST_TEST(drawn.size() >= 100002u);
  BOOST_TEST(kept.size() < 7000u);  // at most 4 in each of 1,600 columns, the repeats, the legend
  BOOST_TEST(kept.size() >= 1600u);
  // Every kept point is one the full chart draws, and the lowest, highest, first and last are kept.
  const std::set<std::string> all_points(drawn.begin(), drawn.end());
  BOOST_TEST(std::all_of(kept.begin(), kept.end(),
                         [&](const auto& p) { return all_points.count(p) == 1; }));
  auto extremes = [](const std::vector<std::string>& ps) {
    std::vector<double> ys;
    for (const auto& p : ps) ys.push_back(std::stod(p.substr(p.find(',') + 1)));
    return std::make_pair(*std::min_element(ys.begin(), ys.end()),
                          *std::max_element(ys.begin(), ys.end()));
  };
  BOOST_TEST(extremes(kept).first == extremes(drawn).first);
  BOOST_TEST(extremes(kept).second == extremes(drawn).second);
  BOOST_TEST(kept.front() == drawn.front());
  BOOST_TEST(kept[kept.size() - 3] ==
             drawn[drawn.size() - 3]);  // the line's last point, before the legend's
}
