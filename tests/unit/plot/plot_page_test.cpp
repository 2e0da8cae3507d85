// draw_page from many threads at once: PLplot's state is global, so without the one lock pages
// would be drawn into each other's streams; every page must come out whole, at its own size, in
// its own format.
#define BOOST_TEST_MODULE plot_page
#include <boost/test/unit_test.hpp>

#include <plplot/plplot.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tidemark/plot/plplot_page.hpp"

namespace {

std::uint32_t big_endian_u32(const std::string& s, std::size_t at) {
  std::uint32_t x = 0;
  for (std::size_t i = 0; i < 4; ++i) x = (x << 8) | static_cast<unsigned char>(s[at + i]);
  return x;
}

// One page with a sine line of `points` points; its bytes, or the abort message prefixed "abort: ".
std::string page_bytes(const char* device, int width, int height, int points) {
  char* buffer = nullptr;
  std::size_t length = 0;
  FILE* out = open_memstream(&buffer, &length);
  if (!out) return "abort: open_memstream failed";
  std::vector<PLFLT> x, y;
  for (int i = 0; i < points; ++i) {
    x.push_back(i);
    y.push_back(static_cast<PLFLT>(i % 17));
  }
  auto aborted = tidemark::plot::draw_page(out, {device, width, height, {{200, 30, 30}}}, [&] {
    plcol0(1);
    plenv(0, points, 0, 17, 0, 0);
    plcol0(2);
    plline(points, x.data(), y.data());
  });
  std::string bytes{buffer, length};
  std::free(buffer);  // NOLINT: open_memstream's buffer is malloc'ed
  return aborted.empty() ? bytes : "abort: " + aborted;
}

}  // namespace

BOOST_AUTO_TEST_CASE(pages_drawn_from_many_threads_come_out_whole) {
  constexpr int threads = 6;
  constexpr int pages = 4;
  std::vector<std::vector<std::string>> out(threads, std::vector<std::string>(pages));
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      for (int p = 0; p < pages; ++p)
        out[t][p] = page_bytes(t % 2 ? "svg" : "pngcairo", 300 + 10 * t, 200 + 10 * p, 50 + t);
    });
  for (auto& w : workers) w.join();
  for (int t = 0; t < threads; ++t)
    for (int p = 0; p < pages; ++p) {
      const auto& bytes = out[t][p];
      BOOST_TEST_CONTEXT("thread " << t << " page " << p) {
        BOOST_REQUIRE(bytes.rfind("abort: ", 0) != 0);
        if (t % 2) {
          BOOST_TEST(bytes.find("<svg") != std::string::npos);
          BOOST_TEST(bytes.find("</svg>") != std::string::npos);
          BOOST_TEST(bytes.find("width=\"" + std::to_string(300 + 10 * t) + "pt\"") !=
                     std::string::npos);
          BOOST_TEST(bytes.find("height=\"" + std::to_string(200 + 10 * p) + "pt\"") !=
                     std::string::npos);
          BOOST_TEST(bytes.find("stroke=\"#C81E1E\"") != std::string::npos);  // colour 2 as set
        } else {
          BOOST_REQUIRE(bytes.size() > 24u);
          BOOST_TEST(bytes.substr(0, 8) == std::string("\x89PNG\r\n\x1a\n", 8));
          BOOST_TEST(big_endian_u32(bytes, 16) == static_cast<std::uint32_t>(300 + 10 * t));
          BOOST_TEST(big_endian_u32(bytes, 20) == static_cast<std::uint32_t>(200 + 10 * p));
        }
      }
    }
}
