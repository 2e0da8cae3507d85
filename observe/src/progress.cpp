// The progress line of `tidemark run`: the text from two snapshots, and the thread that redraws it.
#include "tidemark/observe/progress.hpp"

#include <cinttypes>
#include <ctime>

#include <sys/ioctl.h>
#include <unistd.h>

#include "live_totals.hpp"

namespace tidemark::observe {

namespace {

std::string format_elapsed(double seconds) {
  char buf[32];
  if (seconds < 60) {
    std::snprintf(buf, sizeof buf, "%.1f s", seconds);
    return buf;
  }
  auto s = static_cast<long long>(seconds);
  if (s < 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  return buf;
}

/// Three significant digits with an SI suffix above 1000 (12.3k, 4.56M).
std::string format_count(double n) {
  static constexpr const char* suffixes[] = {"k", "M", "G", "T"};
  char buf[32];
  if (n < 999.5) {
    std::snprintf(buf, sizeof buf, "%.0f", n);
    return buf;
  }
  int k = -1;
  while (n >= 999.5 && k < 3) {
    n /= 1000;
    ++k;
  }
  std::snprintf(buf, sizeof buf,
                n < 9.995   ? "%.2f%s"
                : n < 99.95 ? "%.1f%s"
                            : "%.0f%s",
                n, suffixes[k]);
  return buf;
}

std::string format_watermark(event_time wm) {
  if (wm == start_of_time) return "-";
  if (wm == end_of_time) return "end";
  // floor division, so that times before 1970 keep a positive millisecond part
  auto secs = wm / 1000 - (wm % 1000 < 0 ? 1 : 0);
  auto ms = wm - secs * 1000;
  std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S", &tm);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%s.%03" PRId64, date, ms);
  return buf;
}

}  // namespace

std::string progress_line(const live_snapshot& now, const live_snapshot* before) {
  const auto events = detail::source_events(now);
  std::string rate = "-";
  if (before && now.seconds > before->seconds) {
    auto earlier = detail::source_events(*before);
    auto delta = events > earlier ? static_cast<double>(events - earlier) : 0.0;
    rate = format_count(delta / (now.seconds - before->seconds));
  }
  std::string watermark = "-";
  if (now.plan)
    watermark = format_watermark(detail::lowest_watermark(now, detail::sink_stages(*now.plan)));
  return "elapsed " + format_elapsed(now.seconds) + " | " + rate + " events/s | " +
         format_count(static_cast<double>(events)) + " events | watermark " + watermark +
         " | late " + std::to_string(detail::late_events(now));
}

progress_printer::progress_printer(std::shared_ptr<const live_view> view, std::FILE* out,
                                   std::chrono::milliseconds period)
    : view_(std::move(view)), out_(out), period_(period), thread_([this] { loop(); }) {}

progress_printer::~progress_printer() {
  stop();
}

void progress_printer::stop() {
  {
    std::lock_guard<std::mutex> guard{mutex_};
    if (stopping_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  if (drawn_) {
    std::fputs("\r\033[K", out_);
    std::fflush(out_);
  }
}

void progress_printer::loop() {
  std::shared_ptr<const live_snapshot> last;
  std::shared_ptr<const live_snapshot> before;
  std::unique_lock<std::mutex> lock{mutex_};
  while (!wake_.wait_for(lock, period_, [this] { return stopping_; })) {
    auto latest = view_->latest();
    if (!latest) continue;
    // rates over the interval between the two newest snapshots
    if (latest != last) {
      before = std::move(last);
      last = latest;
    }
    auto text = progress_line(*last, before.get());
    // a line wider than the terminal would wrap, and \r would redraw only its last part
    winsize size{};
    if (::ioctl(::fileno(out_), TIOCGWINSZ, &size) == 0 && size.ws_col > 1 &&
        text.size() >= size.ws_col)
      text.resize(size.ws_col - 1u);
    auto line = "\r" + text + "\033[K";
    std::fputs(line.c_str(), out_);
    std::fflush(out_);
    drawn_ = true;
  }
}

}  // namespace tidemark::observe
