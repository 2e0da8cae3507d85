// Thin adapters that put the RIoTBench tasks on tidemark::stream<T>: stateless tasks become map /
// flat_map operators (one task object per operator instance, built by per_instance), per-sensor
// stateful tasks become key_by(sensor id + field).process over the task's own state. Rejected
// inputs go to an error_sink (counted, first messages kept) instead of downstream; the
// SenML parser also sends the lines it rejects to its side output senml_rejected.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tidemark/core/codec.hpp"
#include "tidemark/core/job.hpp"
#include "tidemark/riot/filter.hpp"
#include "tidemark/riot/observation.hpp"
#include "tidemark/riot/prediction.hpp"
#include "tidemark/riot/senml.hpp"
#include "tidemark/riot/statistics.hpp"

namespace tidemark::riot {

namespace detail {

/// Keys observations by sensor id and field, as the RIoTBench bolts kept their state.
inline auto by_sensor_field(const stream<observation>& in, const std::string& name) {
  return in.key_by([buffer = std::string()](
                       const observation& o) mutable { return sensor_field_key(o, buffer); },
                   name + "_by_sensor");
}

/// `task`'s per-key step for keyed_stream::process: task.process(state, o) may emit one
/// observation, made from `o` itself: the input batch is the operator's, and an observation's
/// strings cost allocations to copy.
template <class Task>
auto step_of(std::shared_ptr<const Task> task) {
  return [task](typename Task::state& s, observation& o, collector<observation>& out) {
    if (auto r = task->process(s, std::move(o))) out(std::move(*r));
  };
}

}  // namespace detail

/// Runs `make()`'s task (one per instance) on each element: `task.process(x)` returns
/// expected<Out>; values go downstream, errors to `errors`.
template <class Out, class In, class Make>
stream<Out> apply_task(const stream<In>& in, Make make, error_sink errors, const std::string& name) {
  return in.template flat_map<Out>(per_instance([make, errors](const instance_info&) {
                                     return [task = make(), errors](const In& x,
                                                                    collector<Out>& out) mutable {
                                       auto r = task.process(x);
                                       if (r) {
                                         out(std::move(*r));
                                       } else {
                                         errors.report(r.error());
                                       }
                                     };
                                   }),
                                   name);
}

/// A SenML line with the message id its source gave it (so outputs can be traced to inputs).
struct numbered_line {
  std::int64_t msg_id = 0;
  std::string line;
  TIDEMARK_FIELDS(msg_id, line)
};

/// A line the SenML parser rejected, and why.
struct rejected_line {
  std::string line;
  std::string reason;
  TIDEMARK_FIELDS(line, reason)
};

/// The side output of parse_senml with the lines it rejected (also counted in its error_sink):
/// `parse_senml(...).side_output(senml_rejected)`.
inline const output_tag<rejected_line> senml_rejected{"senml_rejected", 1};

namespace detail {

/// SML + fan-out over lines whose message id `id_of(x)` and text `line_of(x)` come from `In`.
template <class In, class IdOf, class LineOf>
stream<observation> parse_senml_lines(const stream<In>& lines, senml_fanout_config config, error_sink errors,
                                      IdOf id_of, LineOf line_of) {
  return lines.template flat_map<observation>(
      per_instance([config = std::move(config), errors, id_of, line_of](const instance_info&) {
        return [parse = senml_parse(), fanout = senml_fanout(config),
                scratch = std::vector<observation>(), errors, id_of,
                line_of](const In& x, collector<observation>& out) mutable {
          auto reject = [&](const error& e) {
            errors.report(e);
            out.side(senml_rejected, rejected_line{std::string{line_of(x)}, e.message});
          };
          auto rec = parse.process(senml_payload(line_of(x)));
          if (!rec) return reject(rec.error());
          scratch.clear();
          auto n = fanout.process(*rec, id_of(x), scratch);
          if (!n) return reject(n.error());
          for (auto& o : scratch) out(std::move(o));
        };
      }),
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
  return in.map(per_instance([config = std::move(config), errors](const instance_info&) {
                  return [task = range_filter(config), errors](observation o) mutable {
                    auto r = task.process(o);
                    if (!r) errors.report(r.error());
                    return o;
                  };
                }),
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
  auto task = std::make_shared<const interpolation>(std::move(config));
  // filled in place and moved on: the input batch is the operator's, and an observation's strings
  // cost allocations to copy
  auto step = [task](interpolation::state& s, observation& o, collector<observation>& out) {
    if (task->accepts(o)) task->step(s, o);
    out(std::move(o));
  };
  return detail::by_sensor_field(in, "interpolation")
      .process<observation>([task] { return task->initial(); }, step, "interpolation");
}

/// KAL, keyed per sensor and field: the configured fields, smoothed.
inline stream<observation> kalman(const stream<observation>& in, kalman_config config) {
  auto task = std::make_shared<const kalman_filter>(std::move(config));
  return detail::by_sensor_field(in, "kalman")
      .process<observation>([task] { return task->initial(); }, detail::step_of(task), "kalman");
}

/// AVG, keyed per sensor and field: one "AVG" observation per completed block.
inline stream<observation> block_average_of(const stream<observation>& in, block_average_config config) {
  auto task = std::make_shared<const block_average>(std::move(config));
  return detail::by_sensor_field(in, "block_average")
      .process<observation>([task] { return task->initial(); }, detail::step_of(task),
                            "block_average");
}

/// SLR, keyed per sensor and field: one "SLR" observation per input once the window is full.
inline stream<observation> sliding_regression_of(const stream<observation>& in, sliding_regression_config config) {
  auto task = std::make_shared<const sliding_regression>(std::move(config));
  return detail::by_sensor_field(in, "sliding_regression")
      .process<observation>([task] { return task->initial(); }, detail::step_of(task),
                            "sliding_regression");
}

/// DAC over the sensor ids: each instance estimates the distinct sensors it sees (run it with
/// parallelism 1, or after a key_by, for a global count).
inline stream<double> distinct_sensors(const stream<observation>& in, distinct_count_config config) {
  return in.map(per_instance([config](const instance_info&) {
                  return [task = distinct_count(config)](const observation& o) mutable {
                    return task.process(o.sensor_id.view());
                  };
                }),
                "distinct_count");
}

}  // namespace tidemark::riot
