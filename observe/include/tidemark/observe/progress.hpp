// The progress line of `tidemark run` on a terminal: one line redrawn in place with the elapsed
// time, the sources' events per second, events so far, the sinks' watermark and late events.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "tidemark/runtime/live.hpp"

namespace tidemark::observe {

/// The text of the progress line for `now`, e.g.
/// `elapsed 12.3 s | 10.0k events/s | 123k events | watermark 1970-01-01 00:00:12.345 | late 0`.
/// Events per second are the sources' output since `before` ("-" without an earlier snapshot);
/// the watermark is the lowest over the sink stages' instances, as UTC time of event-time
/// milliseconds ("-" before the first, "end" once the input ended).
std::string progress_line(const live_snapshot& now, const live_snapshot* before);

/// Redraws progress_line in place (`\r`, clear to the end of line) on `out` every `period` from
/// a background thread while the job runs; stop() or the destructor erases the line, so what the
/// program prints afterwards starts on a clean line.
class progress_printer {
 public:
  progress_printer(std::shared_ptr<const live_view> view, std::FILE* out,
                   std::chrono::milliseconds period = std::chrono::milliseconds{500});
  ~progress_printer();
  progress_printer(const progress_printer&) = delete;
  progress_printer& operator=(const progress_printer&) = delete;

  /// Stops redrawing and erases the line; later calls do nothing.
  void stop();

 private:
  void loop();

  std::shared_ptr<const live_view> view_;
  std::FILE* out_;
  std::chrono::milliseconds period_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool drawn_ = false;
  std::thread thread_;
};

}  // namespace tidemark::observe
