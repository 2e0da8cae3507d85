// One PLplot page drawn into an open FILE. PLplot keeps its current stream and its abort handler
// in global state, so every chart of a process (RIoT plot tasks, chaos timelines) goes through
// draw_page, which serializes them under one lock.
#pragma once

#include <array>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace tidemark::plot {

/// How the page is set up before PLplot's plinit.
struct page {
  const char* device = "pngcairo";  ///< a PLplot device: "pngcairo", "svg", ...
  int width = 800;                  ///< in pixels
  int height = 600;
  /// cmap0 colours from index 2 on (0 is the white background, 1 black for axes and text).
  std::vector<std::array<int, 3>> colours;
  int rows = 1;  ///< subpages stacked vertically (plssub(1, rows))
};

/// Opens a fresh PLplot stream writing to `out`, sets it up as `p` says, calls plinit, runs `draw`
/// (plain PLplot calls on the current stream) and ends the stream, which writes the page and
/// closes `out`. At most one page is drawn at a time in the process. Returns PLplot's abort
/// message when PLplot gave up (the page is then incomplete), else an empty string.
std::string draw_page(std::FILE* out, const page& p, const std::function<void()>& draw);

}  // namespace tidemark::plot
