// Figure 1 and the lookup pipeline: their operators and seeded lookup latencies.
#include "tidemark/examples/figure1.hpp"

#include <chrono>
#include <deque>
#include <functional>

#include "tidemark/persistence/table_lookup.hpp"

namespace tidemark::figure1 {
namespace {

/// The patent's joiner: pairs the i-th element of its two inputs. It assumes both inputs
/// deliver the same timestamps in the same order, which holds inside a synchronized timezone.
class lockstep_join final : public operator_logic {
 public:
  void process(std::size_t input, batch_ptr in, emitter& out) override {
    if (input == 0)
      for (auto& x : static_cast<batch<reading>&>(*in).values) left_.push_back(x);
    else
      for (auto& x : static_cast<batch<enriched>&>(*in).values) right_.push_back(std::move(x));
    auto result = std::make_unique<batch<joined>>();
    while (!left_.empty() && !right_.empty()) {
      result->values.push_back({left_.front(), std::move(right_.front())});
      result->times.push_back(left_.front().id);
      left_.pop_front();
      right_.pop_front();
    }
    if (!result->values.empty()) out.emit(std::move(result));
  }

 private:
  std::deque<reading> left_;
  std::deque<enriched> right_;
};

std::uint64_t mix(std::uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

stream<enriched> looked_up(const stream<reading>& in, const config& c) {
  persistence::lookup_options opts;
  opts.concurrency = c.concurrency;
  opts.level = persistence::durability::checkpoint;  // rebuilt by fill_table
  const auto lo = c.min_delay_us;
  const auto span = static_cast<std::uint64_t>(std::max<std::int64_t>(0, c.max_delay_us - lo)) + 1;
  opts.latency = [lo, span, seed = c.seed](std::string_view key) {
    auto r = mix(seed ^ std::hash<std::string_view>{}(key));
    return std::chrono::microseconds(lo + static_cast<std::int64_t>(r % span));
  };
  return persistence::table_lookup_join(
      in, c.db, c.table, [](const reading& r) { return std::to_string(r.id); },
      [](const reading& r, std::optional<std::string> row) {
        return enriched{r.id, row.value_or("<missing>")};
      },
      opts, "lookup");
}

stream<reading> readings(job& j, const config& c) {
  std::vector<reading> xs(c.elements);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i].id = static_cast<std::int64_t>(i);
  return j.from_container(std::move(xs), "readings")
      .assign_timestamps([](const reading& r) { return r.id; },
                         ascending_timestamps().every_events(1), "event_time");
}

}  // namespace

void fill_table(const config& c) {
  persistence::table_store t{c.db, c.table, persistence::durability::checkpoint};
  std::vector<persistence::row> rows;
  for (std::size_t i = 0; i < c.elements; ++i)
    rows.push_back({std::to_string(i), "row-" + std::to_string(i)});
  t.insert_batch(rows);
}

job build(const config& c, collected<joined>& out) {
  job j{"figure1"};
  auto in = readings(j, c);
  auto pairs = in.transform_with<joined>(looked_up(in, c), "lockstep_join", [](const instance_info&) {
    return std::make_unique<lockstep_join>();
  }, "join");
  out = pairs.collect("out");
  return j;
}

std::vector<joined> serial_result(std::size_t elements) {
  std::vector<joined> xs;
  for (std::size_t i = 0; i < elements; ++i) {
    auto id = static_cast<std::int64_t>(i);
    xs.push_back({{id}, {id, "row-" + std::to_string(i)}});
  }
  return xs;
}

std::size_t mismatches(const std::vector<joined>& xs) {
  std::size_t n = 0;
  for (const auto& x : xs) n += x.matched() ? 0 : 1;
  return n;
}

job build_lookup_pipeline(const config& c, collected<enriched>& out) {
  job j{"lookup_pipeline"};
  out = looked_up(readings(j, c), c)
      .map([](enriched e) {
        e.row += "/checked";
        return e;
      }, "label")
      .collect("out");
  return j;
}

}  // namespace tidemark::figure1
