// The live view of a running job (see tidemark/runtime/live.hpp) and the poll that refreshes it.
#include "live_poll.hpp"

#include <algorithm>
#include <tuple>

#include <caf/send.hpp>

#include "messages.hpp"

namespace tidemark {

live_plan live_plan::of(const std::string& job, const logical_graph& g, const physical_plan& p,
                        const std::vector<std::string>& node_of,
                        const std::vector<std::vector<std::string>>& replicas_of) {
  live_plan out;
  out.job = job;
  std::size_t flat = 0;
  for (const auto& s : p.stages) {
    auto& st = out.stages.emplace_back();
    for (const auto& op : s.ops) {
      st.operators.push_back(g.node(op.node).name);
      st.kinds.push_back(g.node(op.node).op);
    }
    st.parallelism = s.parallelism;
    for (std::uint32_t i = 0; i < s.parallelism; ++i, ++flat) {
      st.nodes.push_back(flat < node_of.size() ? node_of[flat] : "local");
      st.replicas.push_back(flat < replicas_of.size() ? replicas_of[flat]
                                                      : std::vector<std::string>{});
    }
  }
  for (const auto& e : p.edges) out.edges.push_back({e.from, e.to, to_string(e.part)});
  return out;
}

void live_view::publish(live_snapshot s) {
  auto next = std::make_shared<const live_snapshot>(std::move(s));
  std::lock_guard<std::mutex> guard{mutex_};
  latest_ = std::move(next);
}

std::shared_ptr<const live_snapshot> live_view::latest() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return latest_;
}

namespace detail {

live_poll::live_poll(std::shared_ptr<live_view> view, live_plan plan,
                     std::chrono::milliseconds period)
    : view_(std::move(view)),
      plan_(std::make_shared<const live_plan>(std::move(plan))),
      period_(period),
      started_(clock::now()),
      next_(started_) {}

std::chrono::milliseconds live_poll::ask(const caf::actor& driver,
                                         const std::vector<caf::actor>& stages) {
  auto now = clock::now();
  if (now >= next_) {
    publish(false);
    for (const auto& s : stages) caf::send_as(driver, s, live_atom::value);
    next_ = now + period_;
  }
  return std::chrono::duration_cast<std::chrono::milliseconds>(next_ - now) +
         std::chrono::milliseconds{1};
}

void live_poll::update(instance_metrics m) {
  auto at = std::lower_bound(latest_.begin(), latest_.end(), m, [](auto& a, auto& b) {
    return std::tie(a.stage, a.instance) < std::tie(b.stage, b.instance);
  });
  if (at != latest_.end() && at->stage == m.stage && at->instance == m.instance)
    *at = std::move(m);
  else
    latest_.insert(at, std::move(m));
}

void live_poll::update(node_status s) {
  auto at = std::find_if(nodes_.begin(), nodes_.end(), [&](auto& n) { return n.node == s.node; });
  if (at != nodes_.end())
    *at = std::move(s);
  else
    nodes_.push_back(std::move(s));
}

void live_poll::publish(bool finished) {
  if (!view_) return;
  live_snapshot s;
  s.plan = plan_;
  s.seconds = std::chrono::duration<double>(clock::now() - started_).count();
  s.finished = finished;
  s.instances = latest_;
  s.nodes = nodes_;
  view_->publish(std::move(s));
}

}  // namespace detail
}  // namespace tidemark
