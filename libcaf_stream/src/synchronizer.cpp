// Synchronizer gates and exits, the synchronizer's state machine, the link between them, and the
// graph rewrite that places them.
#include "tidemark/core/synchronizer.hpp"

#include <algorithm>
#include <sstream>

#include "tidemark/core/codec.hpp"
#include "tidemark/core/state.hpp"

namespace tidemark {
namespace {

constexpr event_time lowest_time = INT64_MIN;
constexpr event_time highest_time = INT64_MAX;

event_time slice_start(event_time t, event_time width) {
  auto q = t / width;
  if (t % width != 0 && t < 0) --q;
  return q * width;
}

event_time slice_end(event_time t, event_time width) {
  auto start = slice_start(t, width);
  return start > highest_time - width ? highest_time : start + width;
}

}  // namespace

synchronizer_logic::synchronizer_logic(std::uint32_t gates, std::uint32_t exits,
                                       event_time time_slice)
    : slice_(std::max<event_time>(1, time_slice)), gate_wm_(gates, lowest_time),
      gate_known_(gates, lowest_time), gate_lowest_(gates), exit_wm_(exits, lowest_time),
      gate_restored_(gates, false), exit_restored_(exits, false) {}

bool synchronizer_logic::apply(const sync_report& r) {
  switch (r.what) {
    case sync_report::kind::gate:
      gate_wm_.at(r.index) = r.wm;
      gate_known_[r.index] = r.bound;
      gate_lowest_[r.index] = r.lowest;
      return !restoring_ && advance();
    case sync_report::kind::exit: {
      auto& e = exit_wm_.at(r.index);
      if (r.wm <= e) return false;
      e = r.wm;
      return !restoring_ && advance();
    }
    case sync_report::kind::gate_restored:
      if (gate_restored_.at(r.index)) return false;  // once per run: a second would start over
      gate_wm_[r.index] = r.wm;
      gate_known_[r.index] = r.bound;
      gate_lowest_[r.index] = r.lowest;
      return restored(gate_restored_, r.index);
    case sync_report::kind::exit_restored:
      if (exit_restored_.at(r.index)) return false;
      exit_wm_[r.index] = std::max(exit_wm_[r.index], r.wm);
      return restored(exit_restored_, r.index);
  }
  return false;
}

// The completion protocol: a slice [a, b) is admitted when every gate's input watermark has
// reached b (no element of the slice can still arrive) and the previous slice is finished, i.e.
// every exit's watermark has reached the previous bound. Gates release the slice and then emit b
// as their watermark, so an exit's watermark reaches b only after everything the slice caused
// inside the timezone has passed it.
//
// Reports are asynchronous: a gate counts its lowest buffered time from the last bound it took,
// so a report sent before the current bound reached the gate may name elements of a slice the
// gate is about to release, and hides what it holds above. Such a gate is not heard until it
// reports from the current bound (it does so as soon as it takes it): until then nothing moves,
// so what a gate is about to release never counts as waiting, and no slice is admitted past one
// a gate still holds.
bool synchronizer_logic::advance() {
  const bool was_busy = in_flight_;
  if (in_flight_) {
    // a timezone without sinks (a loop that never leaves) has nothing to wait for
    if (!exit_wm_.empty() && *std::min_element(exit_wm_.begin(), exit_wm_.end()) < admitted_)
      return false;
    in_flight_ = false;
  }
  for (auto known : gate_known_)
    if (known < admitted_) return was_busy;
  event_time wm = *std::min_element(gate_wm_.begin(), gate_wm_.end());
  std::optional<event_time> lowest;
  for (const auto& l : gate_lowest_)
    if (l && (!lowest || *l < *lowest)) lowest = l;
  event_time target = wm;
  if (lowest && *lowest < wm) {
    auto end = slice_end(*lowest, slice_);
    if (end <= wm) {
      admitted_ = end;
      in_flight_ = true;
      ++slices_;
      return true;
    }
    target = slice_start(*lowest, slice_);  // the slice is incomplete: progress up to it only
  }
  if (target <= admitted_) return was_busy;
  admitted_ = target;
  ++steps_;
  return true;
}

// Rebuilding the state from the consistent cut (the argument is in docs/timezones.md,
// "Checkpoints of a synchronizer"): no gate holds an element below the bound it emitted, and every
// element that entered the timezone was released below some gate's emitted bound. So the lowest
// bound emitted is a bound every gate has passed; the slices between it and a higher gate's bound
// are admitted again, one at a time, for the gates still behind (the others hold nothing there,
// so their reports, counted from their own higher bound, stay valid). An exit below it still has
// part of a slice to finish.
bool synchronizer_logic::restored(std::vector<bool>& marks, std::uint32_t index) {
  if (!restoring_) {
    restoring_ = true;
    left_to_restore_ = gate_restored_.size() + exit_restored_.size();
  }
  marks.at(index) = true;
  if (--left_to_restore_ > 0) return false;
  restoring_ = false;
  admitted_ = gate_known_.empty() ? lowest_time
                                  : *std::min_element(gate_known_.begin(), gate_known_.end());
  in_flight_ = !exit_wm_.empty() && *std::min_element(exit_wm_.begin(), exit_wm_.end()) < admitted_;
  // the reports received meanwhile may admit a slice already (gates do not report them again)
  advance();
  return true;
}

timezone_link::timezone_link(std::uint32_t timezone, std::uint32_t gates, std::uint32_t exits,
                             event_time time_slice)
    : timezone_(timezone), gates_(gates), exits_(exits), slice_(time_slice), wake_(gates) {}

void timezone_link::set_sender(sender s) {
  std::lock_guard<std::mutex> lock{mutex_};
  send_ = std::move(s);
}

void timezone_link::send(const sync_report& r) const {
  sender s;
  {
    std::lock_guard<std::mutex> lock{mutex_};
    s = send_;
  }
  if (s) s(r);
}

void timezone_link::set_wake(std::uint32_t gate, std::function<void()> wake) {
  std::lock_guard<std::mutex> lock{mutex_};
  wake_.at(gate) = std::move(wake);
}

void timezone_link::deliver(const sync_bound& b) {
  // wake functions only post a message; calling them without the lock keeps gates free to read
  std::vector<std::function<void()>> wakes;
  {
    std::lock_guard<std::mutex> lock{mutex_};
    latest_ = b;
    wakes = wake_;
  }
  for (auto& wake : wakes)
    if (wake) wake();
}

sync_bound timezone_link::latest() const {
  std::lock_guard<std::mutex> lock{mutex_};
  return latest_;
}

namespace ops {

gate_logic::gate_logic(std::shared_ptr<timezone_link> link, std::uint32_t gate,
                       std::size_t max_buffered, std::string timezone_name,
                       const batch_codec* codec, bool feedback)
    : link_(std::move(link)), gate_(gate), max_buffered_(max_buffered),
      timezone_name_(std::move(timezone_name)), codec_(codec), feedback_(feedback) {}

void gate_logic::set_wakeup(std::function<void()> wake) {
  link_->set_wake(gate_, std::move(wake));
  // a feedback gate's watermark never holds the synchronizer back (report): it says so at once,
  // since the loop may send it nothing before the first slice is admitted
  if (feedback_) report(sync_report::kind::gate);
}

void gate_logic::process(std::size_t, batch_ptr in, emitter& out) {
  auto& b = *in;
  if (b.times.size() != b.size())
    throw job_error("the synchronizer of " + timezone_name_ +
                    " received elements without event time: assign timestamps upstream of the "
                    "timezone (assign_timestamps)");
  // scatter the batch into one bucket per event time
  outs_.clear();
  targets_.resize(b.size());
  std::map<event_time, std::uint32_t> index;
  for (std::size_t i = 0; i < b.size(); ++i) {
    auto t = b.times[i];
    auto [it, fresh] = index.emplace(t, static_cast<std::uint32_t>(outs_.size()));
    if (fresh) {
      auto& bucket = buckets_[t];
      if (!bucket) bucket = b.make_empty(0);
      outs_.push_back(bucket.get());
    }
    targets_[i] = it->second;
    if (t < emitted_wm_) ++late_;  // released at once, without a slice of its own
  }
  buffered_ += b.size();
  max_buffered_seen_ = std::max(max_buffered_seen_, buffered_);
  b.scatter(targets_.data(), outs_.data());
  release(out);
}

void gate_logic::on_watermark(event_time wm, emitter& out) {
  wm_ = std::max(wm_, wm);
  release(out);
}

void gate_logic::release(emitter& out) {
  // The synchronizer may answer a report at once (in a test, or a fused exit finishing a slice
  // on a fast path), so take the latest bound again until nothing moves.
  for (;;) {
    seen_ = link_->latest();
    // below a bound taken earlier: elements released at once (late, below the watermark emitted)
    taken_ = std::max(seen_.bound, taken_);
    // a feedback gate's elements come back from the slices it admitted: its watermark is the
    // loop's (its input's), never beyond the bound
    const auto bound = feedback_ ? std::min(taken_, wm_) : taken_;
    batch_ptr slice;
    while (!buckets_.empty() && buckets_.begin()->first < taken_) {
      auto bucket = std::move(buckets_.begin()->second);
      buckets_.erase(buckets_.begin());
      buffered_ -= bucket->size();
      if (!slice)
        slice = std::move(bucket);
      else
        slice->append(*bucket);
    }
    bool moved = false;
    if (slice) {
      out.emit(std::move(slice));
      moved = true;
    }
    if (bound > emitted_wm_) {
      out.emit_watermark(emitted_wm_ = bound);
      moved = true;
    }
    if (moved) out.flush();
    report(sync_report::kind::gate);
    if (link_->latest().bound <= taken_) return;
  }
}

// What the gate holds at or above the bound it took: what it is about to release never
// counts as waiting. Unchanged reports are not sent again.
void gate_logic::report(sync_report::kind what) {
  // A feedback gate's input watermark never holds its synchronizer back: that watermark follows
  // the slices the synchronizer admits (the loop's elements come from them), so waiting for it
  // would wait for itself. The slice is done once the exits report it, which the loop's probes
  // hold back until nothing of it is left in the loop.
  auto it = buckets_.lower_bound(taken_);
  sync_report r{what, gate_, feedback_ ? end_of_time : wm_, taken_,
                it == buckets_.end() ? std::nullopt : std::optional<event_time>{it->first}};
  if (what == sync_report::kind::gate && sent_ && sent_->wm == r.wm && sent_->bound == r.bound &&
      sent_->lowest == r.lowest)
    return;
  sent_ = r;
  link_->send(r);
}

bool gate_logic::saturated() const {
  return buffered_ >= max_buffered_ && link_->latest().busy;
}

void gate_logic::add_metrics(std::map<std::string, double>& out) const {
  out["sync_slices"] = static_cast<double>(seen_.slices);
  out["sync_progress_steps"] = static_cast<double>(seen_.steps);
  out["sync_max_buffered"] = static_cast<double>(max_buffered_seen_);
  out["sync_late"] = static_cast<double>(late_);
}

// Snapshots fall between two calls, after a release: nothing buffered lies below the bound the
// gate emitted, which is what the synchronizer's restore relies on.
void gate_logic::snapshot(state_writer& out) {
  if (!buckets_.empty() && !codec_)
    throw job_error("the synchronizer of " + timezone_name_ +
                    " cannot checkpoint the elements it buffers: their type has no "
                    "tidemark::codec (list its fields with TIDEMARK_FIELDS)");
  out.write(wm_);
  out.write(emitted_wm_);
  if (feedback_) out.write(taken_);  // below the bound when the loop's watermark is
  out.write(late_);
  out.write(static_cast<std::uint64_t>(buckets_.size()));
  std::vector<std::uint8_t> values;
  for (const auto& [t, bucket] : buckets_) {
    out.write(t);
    out.write(bucket->hashes);
    values.clear();
    codec_->encode_values(*bucket, values);
    out.write(values);
  }
}

void gate_logic::restore(state_reader& in) {
  in.read(wm_);
  in.read(emitted_wm_);
  taken_ = emitted_wm_;
  if (feedback_) in.read(taken_);
  in.read(late_);
  auto n = in.read<std::uint64_t>();
  if (n > 0 && !codec_)
    throw job_error("the synchronizer of " + timezone_name_ +
                    " cannot restore the elements it buffered: their type has no tidemark::codec "
                    "now; the job changed since the checkpoint");
  for (; n > 0; --n) {
    auto t = in.read<event_time>();
    auto hashes = in.read<std::vector<std::uint64_t>>();
    auto values = in.read<std::vector<std::uint8_t>>();
    auto bucket = codec_->decode_values(values.data(), values.size());
    bucket->times.assign(bucket->size(), t);
    bucket->hashes = std::move(hashes);
    buffered_ += bucket->size();
    buckets_[t] = std::move(bucket);
  }
  max_buffered_seen_ = buffered_;
  report(sync_report::kind::gate_restored);
}

// The stage ended: its gates had emitted end_of_time with nothing left buffered (pending()).
void gate_logic::restore_finished(std::uint64_t) {
  wm_ = emitted_wm_ = taken_ = end_of_time;
  report(sync_report::kind::gate_restored);
}

exit_reporter::exit_reporter(
    std::unique_ptr<operator_logic> inner,
    std::vector<std::pair<std::shared_ptr<timezone_link>, std::uint32_t>> to)
    : inner_(std::move(inner)), to_(std::move(to)) {}

void exit_reporter::process(std::size_t input, batch_ptr in, emitter& out) {
  // the runtime sets the error policy on the outer operator
  inner_->on_error = on_error;
  inner_->process(input, std::move(in), out);
  skipped = inner_->skipped;
}

void exit_reporter::on_watermark(event_time wm, emitter& out) {
  inner_->on_watermark(wm, out);
  if (wm <= reported_) return;
  reported_ = wm;
  report(sync_report::kind::exit);
}

void exit_reporter::report(sync_report::kind what) const {
  for (const auto& [link, exit] : to_) link->send({what, exit, reported_});
}

void exit_reporter::snapshot(state_writer& out) {
  out.write(reported_);
  inner_->snapshot(out);
}

void exit_reporter::restore(state_reader& in) {
  in.read(reported_);
  inner_->restore(in);
  report(sync_report::kind::exit_restored);
}

// The stage ended: nothing passes this exit any more, so it holds no slice back.
void exit_reporter::restore_finished(std::uint64_t id) {
  inner_->restore_finished(id);
  reported_ = end_of_time;
  report(sync_report::kind::exit_restored);
}

}  // namespace ops

synchronized_graph synchronize(const logical_graph& g, const synchronizer_options& opts) {
  synchronized_graph result;
  result.graph = g;
  result.options = opts;
  result.timezones = find_timezones(g);
  if (!opts.enabled || result.timezones.empty()) return result;
  auto& out = result.graph;
  const auto& zones = result.timezones;

  // nesting depth, so that gates of outer timezones come first on a shared edge
  auto depth = [&](const timezone& z) {
    std::size_t d = 0;
    for (auto p = z.parent; p; p = zones[*p].parent) ++d;
    return d;
  };
  std::vector<std::uint32_t> order(zones.size());
  for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](auto a, auto b) { return depth(zones[a]) < depth(zones[b]); });

  // exits: the sinks of each timezone, one per instance
  auto& links = result.links;
  links.resize(zones.size());
  std::vector<std::vector<std::pair<node_id, std::uint32_t>>> exit_offsets(zones.size());
  std::vector<std::uint32_t> gate_count(zones.size());
  for (const auto& z : zones) {
    for (const auto& in : z.inputs) gate_count[z.id] += g.node(in.from).parallelism;
  }
  for (const auto& z : zones) {
    std::uint32_t exits = 0;
    for (auto m : z.members)
      if (g.node(m).kind == node_kind::sink) {
        exit_offsets[z.id].push_back({m, exits});
        exits += g.node(m).parallelism;
      }
    links[z.id] = std::make_shared<timezone_link>(z.id, gate_count[z.id], exits, opts.time_slice);
  }

  std::vector<std::uint32_t> next_gate(zones.size());
  for (auto zi : order) {
    const auto& z = zones[zi];
    synchronizer_info info{z.id, {}};
    for (const auto& in : z.inputs) {
      // the edge may already carry gates of enclosing timezones: guard its current source
      auto& edge = out.node(in.to).inputs[in.input];
      const auto& from = out.node(edge.from);
      logical_node gate;
      gate.op = "synchronizer";
      gate.name = "sync" + std::to_string(z.id) + "<-" + g.node(in.from).name;
      gate.parallelism = from.parallelism;
      gate.inputs = {{edge.from, partitioning::forward, edge.feedback}};
      // a gate passes on what it guards, so its output has that value type and codec
      const auto& guarded = from.outputs.at(edge.port);
      gate.outputs = {{"main", guarded.codec, guarded.value_type}};
      auto offset = next_gate[z.id];
      next_gate[z.id] += from.parallelism;
      gate.make_operator = [c = links[z.id], offset, max = opts.max_buffered,
                            tz = "timezone " + std::to_string(z.id) + " of '" +
                                 g.node(z.origin).name + "'",
                            codec = guarded.codec, fb = edge.feedback](const instance_info& i) {
        return std::make_unique<ops::gate_logic>(c, offset + i.index, max, tz, codec, fb);
      };
      auto id = out.add(std::move(gate));
      auto& moved = out.node(in.to).inputs[in.input];
      moved.from = id;
      moved.feedback = false;
      info.gates.push_back(id);
    }
    result.synchronizers.push_back(std::move(info));
  }

  // sinks report to every timezone they belong to
  for (const auto& n : g.nodes()) {
    if (n.kind != node_kind::sink) continue;
    std::vector<std::pair<std::shared_ptr<timezone_link>, std::uint32_t>> to;
    for (const auto& z : zones)
      for (auto [m, offset] : exit_offsets[z.id])
        if (m == n.id) to.emplace_back(links[z.id], offset);
    if (to.empty()) continue;
    auto& node = out.node(n.id);
    node.make_operator = [make = node.make_operator, to](const instance_info& i) {
      auto mine = to;
      for (auto& entry : mine) entry.second += i.index;
      return std::make_unique<ops::exit_reporter>(make(i), std::move(mine));
    };
  }
  return result;
}

std::string to_text(const synchronized_graph& s, const physical_plan& p) {
  std::ostringstream out;
  out << to_text(s.graph, p) << describe(s.graph, s.timezones);
  if (s.timezones.empty()) return out.str();
  if (!s.options.enabled) {
    out << "synchronizers: OFF (debug) - timezones see elements out of order\n";
    return out.str();
  }
  for (const auto& sync : s.synchronizers) {
    out << "synchronizer of timezone " << sync.timezone << " (slice " << s.options.time_slice
        << "):";
    for (auto id : sync.gates)
      out << ' ' << s.graph.node(id).name << " x" << s.graph.node(id).parallelism;
    out << '\n';
  }
  return out.str();
}

std::string to_dot(const synchronized_graph& s, const physical_plan& p) {
  static const char* colours[] = {"lightblue", "lightyellow", "palegreen", "pink", "lavender",
                                  "peachpuff"};
  auto dot = to_dot(s.graph, p);
  dot.resize(dot.rfind('}'));  // reopen the graph to add attributes to its nodes
  std::ostringstream out;
  out << dot;
  for (const auto& n : s.graph.nodes()) {
    std::string zones;
    const timezone* inner = nullptr;
    for (const auto& z : s.timezones)
      if (z.contains(n.id)) {
        zones += (zones.empty() ? "" : ",") + std::to_string(z.id);
        if (!inner || z.members.size() < inner->members.size()) inner = &z;
      }
    if (inner)
      out << "  n" << n.id << " [style=filled, fillcolor=" << colours[inner->id % 6]
          << ", xlabel=\"tz " << zones << "\"];\n";
  }
  for (const auto& sync : s.synchronizers)
    for (auto id : sync.gates)
      out << "  n" << id << " [shape=octagon, xlabel=\"sync tz " << sync.timezone << "\"];\n";
  for (const auto& z : s.timezones)
    out << "  // timezone " << z.id << " of " << s.graph.node(z.origin).name << "\n";
  out << "}\n";
  return out.str();
}

}  // namespace tidemark
