// Non-template parts of windows.hpp: argument checks of assigners and triggers, and the built-in
// late-trigger policies.
#include "tidemark/core/windows.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "tidemark/core/state.hpp"

namespace tidemark {

namespace {

void require_positive(std::int64_t x, const char* what) {
  if (x <= 0)
    throw std::invalid_argument(std::string{what} + " must be > 0, got " + std::to_string(x));
}

class every_events_policy final : public late_policy {
 public:
  explicit every_events_policy(std::uint64_t n) : n_(n) {}
  bool on_late_event(const fire_state& s, std::int64_t) const override { return s.pending >= n_; }

 private:
  std::uint64_t n_;
};

class every_ms_policy final : public late_policy {
 public:
  explicit every_ms_policy(std::int64_t ms) : ms_(ms) {}
  bool on_late_event(const fire_state&, std::int64_t) const override { return false; }
  bool on_tick(fire_state& s, std::int64_t now_ms) const override {
    return now_ms - s.last_fire_ms >= ms_;
  }
  std::int64_t tick_ms() const override { return ms_; }
  std::optional<std::int64_t> next_fire_ms(const fire_state& s) const override {
    return s.last_fire_ms + ms_;
  }

 private:
  std::int64_t ms_;
};

class offsets_policy final : public planned_late_policy {
 public:
  explicit offsets_policy(std::vector<std::int64_t> offsets)
      : planned_late_policy(smallest_step(offsets)), offsets_(std::move(offsets)) {
    std::sort(offsets_.begin(), offsets_.end());
  }

 protected:
  const std::vector<std::int64_t>& offsets(const expiry_context&) const override { return offsets_; }

 private:
  // Tick at the resolution of the schedule's smallest step (at least 1 ms).
  static std::int64_t smallest_step(std::vector<std::int64_t> offsets) {
    std::sort(offsets.begin(), offsets.end());
    std::int64_t step = offsets.empty() ? 1 : std::max<std::int64_t>(1, offsets.front());
    for (std::size_t i = 1; i < offsets.size(); ++i)
      if (offsets[i] > offsets[i - 1]) step = std::min(step, offsets[i] - offsets[i - 1]);
    return step;
  }

  std::vector<std::int64_t> offsets_;
};

}  // namespace

const char* to_string(pane_timing t) noexcept {
  switch (t) {
    case pane_timing::early: return "early";
    case pane_timing::on_time: return "on_time";
    case pane_timing::late: return "late";
    case pane_timing::retracted: return "retracted";
  }
  return "?";
}

tumbling::tumbling(event_time size, event_time offset) : size(size), offset(offset) {
  require_positive(size, "tumbling(size): size");
}

sliding::sliding(event_time size, event_time slide, event_time offset)
    : size(size), slide(slide), offset(offset) {
  require_positive(size, "sliding(size, slide): size");
  require_positive(slide, "sliding(size, slide): slide");
}

session::session(event_time gap) : gap(gap) { require_positive(gap, "session(gap): gap"); }

count_window::count_window(std::uint64_t size, std::uint64_t slide) : size(size), slide(slide) {
  require_positive(static_cast<std::int64_t>(size), "count window size");
  require_positive(static_cast<std::int64_t>(slide), "count window slide");
}

trigger trigger::on_count(std::uint64_t n) {
  require_positive(static_cast<std::int64_t>(n), "trigger::on_count(n): n");
  return {kind::count, n, 0};
}

trigger trigger::on_processing_time(std::int64_t ms) {
  require_positive(ms, "trigger::on_processing_time(ms): ms");
  return {kind::processing_time, 0, ms};
}

void planned_late_policy::on_expire(fire_state& s, const expiry_context& c) const {
  s.plan.clear();
  for (auto d : offsets(c)) s.plan.push_back(c.now_ms + d);
}

bool late_policy::on_tick(fire_state& s, std::int64_t now_ms) const {
  bool due = false;
  while (!s.plan.empty() && s.plan.front() <= now_ms) {
    s.plan.erase(s.plan.begin());
    due = true;
  }
  return due;
}

void late_schedule_cache::snapshot(state_writer& out) const {
  out.write(generation_);
  out.write(entries_);
}

void late_schedule_cache::restore(state_reader& in) {
  in.read(generation_);
  in.read(entries_);
}

late_trigger late_trigger::every_event() {
  return late_trigger{std::make_shared<every_events_policy>(1)};
}

late_trigger late_trigger::every_events(std::uint64_t n) {
  require_positive(static_cast<std::int64_t>(n), "late_trigger::every_events(n): n");
  return late_trigger{std::make_shared<every_events_policy>(n)};
}

late_trigger late_trigger::every_ms(std::int64_t ms) {
  require_positive(ms, "late_trigger::every_ms(ms): ms");
  return late_trigger{std::make_shared<every_ms_policy>(ms)};
}

late_trigger late_trigger::at_offsets(std::vector<std::int64_t> offsets_ms) {
  for (auto d : offsets_ms)
    if (d < 0)
      throw std::invalid_argument("late_trigger::at_offsets: offsets must be >= 0, got " +
                                  std::to_string(d));
  return late_trigger{std::make_shared<offsets_policy>(std::move(offsets_ms))};
}

}  // namespace tidemark
