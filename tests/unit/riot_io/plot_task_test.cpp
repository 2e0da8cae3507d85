// The multi-line plot renders CITY temperature and humidity to real PNG and SVG files: right
// signature, right size, non-trivial content; bad series are counted errors.
#define BOOST_TEST_MODULE riot_plot_task
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
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
  multi_line_plot plot{{plot_format::svg, 800, 600}};
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
