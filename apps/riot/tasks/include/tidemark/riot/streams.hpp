// Thin adapters that put the RIoTBench tasks on tidemark::stream<T>: stateless tasks become map /
// flat_map operators (one task object per operator instance), per-sensor stateful tasks become
// key_by(sensor id + field).fold over the task's own state. Rejected inputs go to an error_sink
// (counted, first messages kept) instead of downstream.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tidemark/job.hpp"
#include "tidemark/riot/filter.hpp"
#include "tidemark/riot/observation.hpp"
#include "tidemark/riot/prediction.hpp"
#include "tidemark/riot/senml.hpp"
#include "tidemark/riot/statistics.hpp"

namespace tidemark::riot {

namespace detail {

/// A task object owned by one operator instance: copying the operator's function (once per
/// instance) yields an empty holder, and the task is made on first use.
template <class T>
class per_instance {
 public:
  per_instance() = default;
  per_instance(const per_instance&) {}
  per_instance& operator=(const per_instance&) {
    task_.reset();
    return *this;
  }
  template <class Make>
  T& get(const Make& make) {
    if (!task_) task_ = std::make_unique<T>(make());
    return *task_;
  }

 private:
  std::unique_ptr<T> task_;
};

/// key_by(sensor, field).fold over `Task::state`, emitting what `task.process(state, obs)` returns.
/// The fold emits (key, accumulator) per element, so the accumulator holds the state and the
/// output behind pointers: the per-element copy is two pointer copies, not a window of values.
template <class Task>
stream<observation> keyed_task(const stream<observation>& in, std::shared_ptr<const Task> task,
                               const std::string& name) {
  using state = typename Task::state;
  struct acc {
    std::shared_ptr<state> s;
    std::shared_ptr<const observation> out;
  };
  return in.key_by([](const observation& o) { return sensor_field_key(o); }, name + "_by_sensor")
      .fold(acc{},
            [task](acc a, const observation& o) {
              if (!a.s) a.s = std::make_shared<state>(task->initial());
              auto out = task->process(*a.s, o);
              a.out = out ? std::make_shared<const observation>(std::move(*out)) : nullptr;
              return a;
            },
            name)
      .template flat_map<observation>(
          [](const std::pair<std::string, acc>& kv, collector<observation>& out) {
            if (kv.second.out) out(*kv.second.out);
          },
          name + "_emit");
}

}  // namespace detail

/// Runs `make()`'s task (one per instance) on each element: `task.process(x)` returns
/// expected<Out>; values go downstream, errors to `errors`.
template <class Out, class In, class Make>
stream<Out> apply_task(const stream<In>& in, Make make, error_sink errors, const std::string& name) {
  using task_type = std::decay_t<decltype(make())>;
  return in.template flat_map<Out>(
      [make, errors, task = detail::per_instance<task_type>()](const In& x, collector<Out>& out) mutable {
        auto r = task.get(make).process(x);
        if (r) {
          out(std::move(*r));
        } else {
          errors.report(r.error());
        }
      },
      name);
}

/// A SenML line with the message id its source gave it (so outputs can be traced to inputs).
struct numbered_line {
  std::int64_t msg_id = 0;
  std::string line;
};

namespace detail {

/// SML + fan-out over lines whose message id `id_of(x)` and text `line_of(x)` come from `In`.
template <class In, class IdOf, class LineOf>
stream<observation> parse_senml_lines(const stream<In>& lines, senml_fanout_config config, error_sink errors,
                                      IdOf id_of, LineOf line_of) {
  return lines.template flat_map<observation>(
      [config = std::move(config), errors, id_of, line_of, parse = per_instance<senml_parse>(),
       fanout = per_instance<senml_fanout>(), scratch = std::vector<observation>()](
          const In& x, collector<observation>& out) mutable {
        auto& p = parse.get([] { return senml_parse(); });
        auto& f = fanout.get([&] { return senml_fanout(config); });
        auto rec = p.process(senml_payload(line_of(x)));
        if (!rec) return errors.report(rec.error());
        scratch.clear();
        auto n = f.process(*rec, id_of(x), scratch);
        if (!n) return errors.report(n.error());
        for (auto& o : scratch) out(std::move(o));
      },
      "senml_parse");
}

}  // namespace detail

/// SML: SenML lines ("<ts>,<json>" or bare JSON) -> one observation per observable. Message ids
/// are unique across instances.
inline stream<observation> parse_senml(const stream<std::string>& lines, senml_fanout_config config,
                                       error_sink errors) {
  auto next_id = std::make_shared<std::atomic<std::int64_t>>(0);
  return detail::parse_senml_lines(
      lines, std::move(config), std::move(errors), [next_id](const std::string&) { return next_id->fetch_add(1) + 1; },
      [](const std::string& line) -> const std::string& { return line; });
}

/// SML on numbered lines: observations carry the line's message id.
inline stream<observation> parse_senml(const stream<numbered_line>& lines, senml_fanout_config config,
                                       error_sink errors) {
  return detail::parse_senml_lines(
      lines, std::move(config), std::move(errors), [](const numbered_line& l) { return l.msg_id; },
      [](const numbered_line& l) -> const std::string& { return l.line; });
}

/// RGF: marks out-of-range values missing (they stay in the stream for interpolation).
inline stream<observation> range_filter_marks(const stream<observation>& in, range_filter_config config,
                                              error_sink errors) {
  return in.map(
      [config = std::move(config), errors, task = detail::per_instance<range_filter>()](observation o) mutable {
        auto r = task.get([&] { return range_filter(config); }).process(o);
        if (!r) errors.report(r.error());
        return o;
      },
      "range_filter");
}

/// BLF: marks observations of unknown sensors missing; the filter is shared by all instances.
inline stream<observation> bloom_filter_marks(const stream<observation>& in,
                                              std::shared_ptr<const bloom_filter_check> check) {
  return in.map(
      [check](observation o) {
        check->process(o);
        return o;
      },
      "bloom_filter");
}

/// INP, keyed per sensor and field: missing values of the configured fields filled in.
inline stream<observation> interpolate(const stream<observation>& in, interpolation_config config) {
  return detail::keyed_task(in, std::make_shared<const interpolation>(std::move(config)), "interpolation");
}

/// KAL, keyed per sensor and field: the configured fields, smoothed.
inline stream<observation> kalman(const stream<observation>& in, kalman_config config) {
  return detail::keyed_task(in, std::make_shared<const kalman_filter>(std::move(config)), "kalman");
}

/// AVG, keyed per sensor and field: one "AVG" observation per completed block.
inline stream<observation> block_average_of(const stream<observation>& in, block_average_config config) {
  return detail::keyed_task(in, std::make_shared<const block_average>(std::move(config)), "block_average");
}

/// SLR, keyed per sensor and field: one "SLR" observation per input once the window is full.
inline stream<observation> sliding_regression_of(const stream<observation>& in, sliding_regression_config config) {
  return detail::keyed_task(in, std::make_shared<const sliding_regression>(std::move(config)),
                            "sliding_regression");
}

/// DAC over the sensor ids: each instance estimates the distinct sensors it sees (run it with
/// parallelism 1, or after a key_by, for a global count).
inline stream<double> distinct_sensors(const stream<observation>& in, distinct_count_config config) {
  return in.map(
      [config, task = detail::per_instance<distinct_count>()](const observation& o) mutable {
        return task.get([&] { return distinct_count(config); }).process(o.sensor_id);
      },
      "distinct_count");
}

}  // namespace tidemark::riot
