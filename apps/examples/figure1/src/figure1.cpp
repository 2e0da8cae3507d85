// Figure 1 and the lookup pipeline: their operators and seeded lookup latencies.
#include "tidemark/examples/figure1.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>

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
    for (const auto& x : result->values) mismatched_ += x.matched() ? 0 : 1;
    if (!result->values.empty()) out.emit(std::move(result));
  }

  void add_metrics(std::map<std::string, double>& out) const override {
    out["mismatched"] = static_cast<double>(mismatched_);
  }

  // the elements still waiting for their partner
  void snapshot(state_writer& out) override {
    out.write(std::vector<reading>(left_.begin(), left_.end()));
    out.write(std::vector<enriched>(right_.begin(), right_.end()));
    out.write(mismatched_);
  }
  void restore(state_reader& in) override {
    auto left = in.read<std::vector<reading>>();
    auto right = in.read<std::vector<enriched>>();
    left_.assign(left.begin(), left.end());
    right_.assign(std::make_move_iterator(right.begin()), std::make_move_iterator(right.end()));
    in.read(mismatched_);
  }

 private:
  std::uint64_t mismatched_ = 0;
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
      [fail_at = c.fail_at](const reading& r, std::optional<std::string> row) {
        if (r.id == fail_at)
          throw job_error("figure1: the lookup of reading " + std::to_string(r.id) +
                          " fails on purpose (config::fail_at)");
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

/// The lookup and the patent's joiner on `in`: every reading paired with its row.
stream<joined> paired(const stream<reading>& in, const config& c) {
  return in.transform_with<joined>(looked_up(in, c), "lockstep_join", [](const instance_info&) {
    return std::make_unique<lockstep_join>();
  }, "join");
}

}  // namespace

void fill_table(const config& c) {
  persistence::table_store t{c.db, c.table, persistence::durability::checkpoint};
  std::vector<persistence::row> rows;
  for (std::size_t i = 0; i < c.elements; ++i)
    rows.push_back({std::to_string(i), "row-" + std::to_string(i)});
  t.insert_batch(rows);
}

job build(const config& c, collected<joined>& out, const std::string& path) {
  job j{"figure1"};
  auto pairs = paired(readings(j, c), c);
  if (path.empty())
    out = pairs.collect("out");
  else
    pairs.write_lines(path, &to_line, "out");
  return j;
}

std::string to_line(const joined& x) {
  return std::to_string(x.direct.id) + " " + std::to_string(x.looked_up.id) + " " + x.looked_up.row;
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

job build_loop(const config& c, std::uint32_t laps, collected<joined>& out, const std::string& path) {
  job j{"figure4c"};
  auto loop = j.iterate<reading>("back");
  auto pairs = paired(readings(j, c).merge(loop.feedback()).name("merge"), c);
  loop.close(pairs.filter([laps](const joined& x) { return x.direct.lap + 1 < static_cast<std::int32_t>(laps); },
                          "again")
                 .map([](const joined& x) {
                   auto r = x.direct;
                   ++r.lap;
                   return r;
                 }, "next_lap"));
  if (path.empty())
    out = pairs.collect("out");
  else
    pairs.write_lines(path, &loop_line, "out");
  return j;
}

std::string loop_line(const joined& x) { return to_line(x) + " " + std::to_string(x.direct.lap); }

std::vector<joined> serial_loop_result(std::size_t elements, std::uint32_t laps) {
  std::vector<joined> xs;
  for (auto x : serial_result(elements))
    for (std::int32_t lap = 0; lap < static_cast<std::int32_t>(laps); ++lap) {
      x.direct.lap = lap;
      xs.push_back(x);
    }
  return xs;
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

namespace {

/// One WiredTiger connection per database directory in this process: prepare and build open the
/// same directory, and WiredTiger refuses a second connection to it.
std::shared_ptr<persistence::wt_connection> shared_connection(const std::string& home) {
  static std::mutex mutex;
  static std::map<std::string, std::weak_ptr<persistence::wt_connection>> open;
  std::lock_guard<std::mutex> lock{mutex};
  auto& slot = open[home];
  auto conn = slot.lock();
  if (!conn) slot = conn = persistence::wt_connection::open(home);
  return conn;
}

/// A temporary database, removed with this object.
struct temp_database {
  std::filesystem::path dir;
  std::shared_ptr<persistence::wt_connection> conn;
  temp_database() = default;
  temp_database(const temp_database&) = delete;
  temp_database& operator=(const temp_database&) = delete;
  ~temp_database() {
    conn.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
};

std::filesystem::path make_temp_dir() {
  auto pattern = (std::filesystem::temp_directory_path() / "tidemark-figure1-XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw job_error("figure1: cannot create a temporary directory");
  return pattern;
}

/// A table in a temporary database of this process, filled for `elements` readings and removed
/// when the process ends: `--db local`, what the nodes of a cluster use (processes cannot share
/// one WiredTiger directory, and hosts do not share one).
std::shared_ptr<persistence::wt_connection> local_database(std::size_t elements) {
  static std::mutex mutex;
  static std::map<std::size_t, temp_database> made;
  std::lock_guard<std::mutex> lock{mutex};
  auto& db = made[elements];
  if (!db.conn) {
    db.dir = make_temp_dir();
    db.conn = persistence::wt_connection::open(db.dir.string());
    config c;
    c.elements = elements;
    c.db = db.conn;
    fill_table(c);
  }
  return db.conn;
}

config from_options(const job_options& o) {
  config c;
  c.elements = static_cast<std::size_t>(o.get_int("elements"));
  c.concurrency = static_cast<std::uint32_t>(o.get_int("concurrency"));
  c.min_delay_us = o.get_int("min-delay-us");
  c.max_delay_us = o.get_int("max-delay-us");
  c.seed = static_cast<std::uint64_t>(o.get_int("seed"));
  if (o.get_int("elements") < 1 || o.get_int("concurrency") < 1 || c.min_delay_us < 0 ||
      c.max_delay_us < c.min_delay_us)
    throw job_error("figure1: --elements >= 1, --concurrency >= 1 and 0 <= --min-delay-us <= "
                    "--max-delay-us are required");
  // without a database (tidemark plan runs no prepare) the job is built but cannot run
  if (auto db = o.get("db"); db == "local")
    c.db = local_database(c.elements);
  else if (!db.empty())
    c.db = shared_connection(db);
  return c;
}

}  // namespace

namespace {

/// What figure 1 and figure 4c share: options, the table's preparation, the report.
job_spec lookup_spec(std::string name, std::string summary) {
  job_spec spec;
  spec.name = std::move(name);
  spec.summary = std::move(summary);
  spec.options = {{"elements", "50", "readings, one per event-time millisecond"},
                  {"concurrency", "8", "lookups in flight"},
                  {"min-delay-us", "0", "lowest simulated lookup latency"},
                  {"max-delay-us", "1000", "highest simulated lookup latency"},
                  {"seed", "1", "seed of the per-key latencies"},
                  {"db", "", "WiredTiger directory holding the table (default: a temporary one; "
                             "'local': one per process, what a cluster's nodes use)"},
                  {"out", "", "file for one line per pair, 'direct-id looked-up-id row' (default: "
                              "the pairs are only counted)"}};
  spec.prepare = [](job_options& o) -> std::shared_ptr<void> {
    auto elements = o.get_int("elements");
    if (!o.get("db").empty()) return nullptr;
    auto db = std::make_shared<temp_database>();
    db->dir = make_temp_dir();
    o.set("db", db->dir.string());
    config c = from_options(o);
    c.elements = static_cast<std::size_t>(elements);
    db->conn = c.db;
    fill_table(c);
    return db;
  };
  // every node looks up in a table of its own
  spec.prepare_cluster = [](job_options& o, const cluster_config&) -> std::shared_ptr<void> {
    if (o.get("db").empty()) o.set("db", "local");
    return nullptr;
  };
  spec.report = [name = spec.name](const job_options& o, const job_result& r) {
    double mismatched = 0;
    std::uint64_t pairs = 0;
    for (const auto& m : r.per_operator())
      if (m.name == "join") {
        mismatched = m.extra.at("mismatched");
        pairs = m.events_out;
      }
    std::printf("%s: %llu pairs of %lld readings, %.0f mismatched, %.3f s\n", name.c_str(),
                static_cast<unsigned long long>(pairs), static_cast<long long>(o.get_int("elements")),
                mismatched, r.seconds);
  };
  return spec;
}

}  // namespace

void register_jobs(job_registry& registry) {
  auto figure1 = lookup_spec("figure1",
                             "the synchronizer patent's figure 1: table lookup join beside a "
                             "direct path, paired downstream (docs/timezones.md)");
  figure1.build = [](const job_options& o) {
    collected<joined> ignored;
    return build(from_options(o), ignored, o.get("out"));
  };
  registry.add(std::move(figure1));
  auto loop = lookup_spec("figure4c",
                          "the synchronizer patent's figure 4c: figure 1's lookup and pairing "
                          "inside a loop, each reading going around --laps times "
                          "(docs/timezones.md)");
  loop.options.push_back({"laps", "3", "times each reading goes around the loop"});
  loop.options[6].help += "; figure4c adds the lap";
  loop.build = [](const job_options& o) {
    if (o.get_int("laps") < 1) throw job_error("figure4c: --laps must be at least 1");
    collected<joined> ignored;
    return build_loop(from_options(o), static_cast<std::uint32_t>(o.get_int("laps")), ignored,
                      o.get("out"));
  };
  registry.add(std::move(loop));
}

}  // namespace tidemark::figure1
