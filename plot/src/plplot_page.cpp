// draw_page: PLplot's per-stream setup, serialized by the process-wide lock (see plplot_page.hpp).
#include "tidemark/plot/plplot_page.hpp"

#include <plplot/plplot.h>

#include <mutex>

namespace tidemark::plot {

namespace {

std::mutex plplot_mutex;
std::string abort_message;  // guarded by plplot_mutex

void on_abort(const char* message) { abort_message = message; }

}  // namespace

std::string draw_page(std::FILE* out, const page& p, const std::function<void()>& draw) {
  std::lock_guard<std::mutex> lock{plplot_mutex};
  abort_message.clear();
  plsabort(&on_abort);
  PLINT stream = 0;
  plmkstrm(&stream);
  plsdev(p.device);
  plsfile(out);
  plspage(0, 0, p.width, p.height, 0, 0);
  plscolbg(255, 255, 255);
  plscol0(1, 0, 0, 0);
  for (std::size_t i = 0; i < p.colours.size(); ++i)
    plscol0(static_cast<PLINT>(2 + i), p.colours[i][0], p.colours[i][1], p.colours[i][2]);
  if (p.rows > 1) plssub(1, p.rows);
  plinit();
  draw();
  plend1();  // writes the page, closes `out` and frees this stream
  plsabort(nullptr);
  return abort_message;
}

}  // namespace tidemark::plot
