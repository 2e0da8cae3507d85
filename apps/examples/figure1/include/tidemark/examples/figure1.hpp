// The patent's figure 1 on Tidemark: readings go both through a table lookup join (a database
// joiner with random latency, completing out of order) and straight on, and a join downstream
// pairs the two paths element by element, as the patent's joiner does. The pairs match only when
// a synchronizer admits one timestamp at a time into the join's timezone. Also the plain lookup
// pipeline that `bench_async` measures.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tidemark/core/codec.hpp"
#include "tidemark/core/job.hpp"
#include "tidemark/runtime/job_registry.hpp"
#include "tidemark/persistence/wiredtiger.hpp"

namespace tidemark::figure1 {

struct reading {
  std::int64_t id = 0;  ///< also its event time
  std::int32_t lap = 0;  ///< figure 4c: the times it went around the loop
  TIDEMARK_FIELDS(id, lap)
  friend bool operator==(const reading& a, const reading& b) {
    return a.id == b.id && a.lap == b.lap;
  }
};

struct enriched {
  std::int64_t id = 0;
  std::string row;  ///< the table's value under the reading's key
  TIDEMARK_FIELDS(id, row)
  friend bool operator==(const enriched& a, const enriched& b) {
    return a.id == b.id && a.row == b.row;
  }
};

/// One output of the figure-1 join: the direct reading and the lookup result it was paired with.
struct joined {
  reading direct;
  enriched looked_up;
  TIDEMARK_FIELDS(direct, looked_up)
  bool matched() const { return direct.id == looked_up.id; }
  friend bool operator==(const joined& a, const joined& b) {
    return a.direct == b.direct && a.looked_up == b.looked_up;
  }
  friend bool operator<(const joined& a, const joined& b) {
    if (a.direct.id != b.direct.id) return a.direct.id < b.direct.id;
    if (a.direct.lap != b.direct.lap) return a.direct.lap < b.direct.lap;
    return a.looked_up.id < b.looked_up.id;
  }
};

struct config {
  std::size_t elements = 50;
  std::uint32_t concurrency = 8;
  /// Lookup latency: uniform in [min_delay_us, max_delay_us], drawn per key from `seed`.
  std::int64_t min_delay_us = 0;
  std::int64_t max_delay_us = 1000;
  std::uint64_t seed = 1;
  /// The lookup of the reading with this id fails the job: a crash in the middle of a
  /// checkpointed run, for tests that resume from its checkpoints. Negative: none fails.
  std::int64_t fail_at = -1;
  std::shared_ptr<persistence::wt_connection> db;
  std::string table = "figure1_rows";
};

/// Writes the rows the lookups find: key = the reading's id, value "row-<id>".
void fill_table(const config& c);

/// Figure 1: source -> (table lookup join | direct) -> lockstep join -> collect, or, given a
/// `path`, -> one line per pair (to_line) in that file.
job build(const config& c, collected<joined>& out, const std::string& path = "");
/// A pair as its line in figure 1's output file: "direct-id looked-up-id row".
std::string to_line(const joined& x);
/// What figure 1 computes when elements go through one at a time.
std::vector<joined> serial_result(std::size_t elements);
/// Pairs whose two sides come from different readings.
std::size_t mismatches(const std::vector<joined>& xs);

/// The patent's figure 4c: the same lookup and pairing inside a loop (job::iterate). Each reading
/// goes around `laps` times, once per lap through the table lookup join (a delayed operator in a
/// loop, so its timezone holds the whole loop and a synchronizer guards the loop's input and its
/// feedback edge); every lap's pair goes out. Given a `path`, one loop_line per pair.
job build_loop(const config& c, std::uint32_t laps, collected<joined>& out, const std::string& path = "");
/// A pair of figure 4c as its line: to_line, then the lap.
std::string loop_line(const joined& x);
/// What figure 4c computes when elements go through one at a time: every reading's pair per lap.
std::vector<joined> serial_loop_result(std::size_t elements, std::uint32_t laps);

/// The benchmark's pipeline: source -> table lookup join -> label (in the timezone) -> collect.
job build_lookup_pipeline(const config& c, collected<enriched>& out);

/// Registers `figure1` and `figure4c` (options: elements, concurrency, min/max-delay-us, seed, db,
/// out; figure4c also laps): prepare fills a table in a temporary database unless --db names one
/// (on a cluster each node makes its own, `--db local`); the report prints how many pairs
/// matched. `tidemark run figure1 --no-synchronizers` shows the mismatches.
void register_jobs(job_registry& registry);

}  // namespace tidemark::figure1
