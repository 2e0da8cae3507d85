// The four Aion workloads. Each generates events whose event time follows the papers' delay model
// (base time i·W/epw, minus a log-normal number of windows), runs its windows with the state the
// job asks for (memory or tiered) and writes the final result of every (window, key) as one line,
// so runs with either state can be compared line by line.
#include "tidemark/aion/workloads.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <map>
#include <optional>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "tidemark/core/tiered_window_store.hpp"

namespace tidemark {

// ---- event types (tiered state writes them to disk with their codecs) ----------------------------

namespace aion {

struct avg_event {
  event_time ts = 0;
  std::int32_t value = 1;
  std::string payload;
  TIDEMARK_FIELDS(ts, value, payload)
};

struct text_event {
  event_time ts = 0;
  std::string text;
  std::string padding;
  TIDEMARK_FIELDS(ts, text, padding)
};

struct price_event {
  event_time ts = 0;
  std::int32_t symbol = 0;
  double price = 0;
  std::string dummy;
  TIDEMARK_FIELDS(ts, symbol, price, dummy)
};

struct tweet_event {
  event_time ts = 0;
  std::array<std::int32_t, 10> symbols{};
  TIDEMARK_FIELDS(ts, symbols)
};

struct mention {
  event_time ts = 0;
  std::int32_t symbol = 0;
  TIDEMARK_FIELDS(ts, symbol)
};

struct car_report {
  event_time ts = 0;
  std::int32_t car = 0;
  std::int32_t speed = 0;
  std::int32_t seg = 0;
  std::int32_t pos = 0;
  std::string dummy;
  TIDEMARK_FIELDS(ts, car, speed, seg, pos, dummy)
};

}  // namespace aion

}  // namespace tidemark

namespace tidemark::aion {

std::int64_t delay_model::windows_late(std::int64_t max_windows) {
  for (;;) {
    const auto i = static_cast<std::int64_t>(std::llround(x_(rng_))) - 1;
    if (i <= max_windows) return std::max<std::int64_t>(i, 0);
  }
}

lateness parse_lateness_option(const std::string& spec, event_time window_ms, std::int64_t past_windows) {
  if (spec == "past-windows") return lateness::fixed{window_ms * past_windows};
  return parse_lateness(spec);
}

namespace {

/// The options every workload shares, read and checked.
struct common {
  std::int64_t events = 0;
  std::int64_t per_window = 0;
  event_time window_ms = 0;
  std::int64_t past_windows = 0;
  double rate = 0;
  std::uint64_t seed = 0;
  bool tiered_state = false;
  tiered tier;
  late_trigger late = late_trigger::every_event();
  lateness bound = lateness::fixed{0};
  bool on_time_first = true;
  std::string out;
};

std::vector<job_option_spec> common_options(const char* events, const char* per_window,
                                            const char* window_ms) {
  return {
      {"state", "memory", "window state: memory (baseline) or tiered (Aion)"},
      {"past-windows", "2", "K: late events are accepted for K past windows"},
      {"rate", "0", "events per second of processing time (0: as fast as possible)"},
      {"events", events, "events to generate"},
      {"events-per-window", per_window, "events per window of event time"},
      {"window-ms", window_ms, "window length in event-time ms"},
      {"memory-events", "4096", "tiered: m-bucket capacity per (window, key) in events"},
      {"block-events", "1024", "tiered: events per p-bucket block"},
      {"prestage", "true", "tiered: pre-stage before late re-executions"},
      {"destage-on-expiry", "true",
       "tiered: destage a window when it expires (false: when memory pressure asks)"},
      {"bootstrap", "0", "tiered: fraction of the m-bucket kept in memory on destage (rho_min)"},
      {"late-trigger", "every-ms:1000",
       "late re-executions (parse_late_trigger: every-event, every-ms:MS, staleness:S, ...)"},
      {"lateness", "past-windows",
       "allowed lateness: past-windows (K windows) or a parse_lateness spec (fixed:MS, "
       "predictive:...)"},
      {"on-time-first", "true",
       "a watermark's on-time results leave before the late re-executions it triggers"},
      {"seed", "100", "seed of the generators and the delay model"},
      {"out", "", "file prefix for the final results (<out>-<name>.txt); empty: count only"}};
}

common read_common(const job_options& o, const std::string& job) {
  common c;
  c.events = o.get_int("events");
  c.per_window = o.get_int("events-per-window");
  c.window_ms = o.get_int("window-ms");
  c.past_windows = o.get_int("past-windows");
  c.rate = o.get_double("rate");
  c.seed = static_cast<std::uint64_t>(o.get_int("seed"));
  if (c.events < 0 || c.per_window < 1 || c.window_ms < 1 || c.past_windows < 0 || c.rate < 0)
    throw job_error(job + ": --events >= 0, --events-per-window >= 1, --window-ms >= 1, "
                          "--past-windows >= 0 and --rate >= 0 are required");
  const auto state = o.get("state");
  if (state != "memory" && state != "tiered")
    throw job_error(job + ": --state must be memory or tiered, got '" + state + "'");
  c.tiered_state = state == "tiered";
  c.tier.memory_events = static_cast<std::uint64_t>(std::max<std::int64_t>(1, o.get_int("memory-events")));
  c.tier.block_events = static_cast<std::uint32_t>(std::max<std::int64_t>(1, o.get_int("block-events")));
  c.tier.prestage = o.get_bool("prestage");
  c.tier.destage_on_expiry = o.get_bool("destage-on-expiry");
  c.tier.bootstrap_fraction = o.get_double("bootstrap");
  try {
    c.late = parse_late_trigger(o.get("late-trigger"));
    c.bound = parse_lateness_option(o.get("lateness"), c.window_ms, c.past_windows);
  } catch (const std::invalid_argument& e) {
    throw job_error(job + ": " + e.what());
  }
  c.on_time_first = o.get_bool("on-time-first");
  c.out = o.get("out");
  return c;
}

/// Event times of a workload's events: event i has base time i·W/epw and is late by the delay
/// model's windows (capped by K and by the windows elapsed). Paces to --rate when it is set.
class event_clock {
 public:
  event_clock(const common& c, std::uint64_t salt) : c_(c), delays_(c.seed + salt) {}
  /// The index and event time of the next event, or nullopt when all were generated.
  /// Paced at c.rate events per second when it is > 0, except while the generator source replays
  /// up to a checkpoint's position: pacing then starts again from the first event after it.
  std::optional<std::pair<std::int64_t, event_time>> next() {
    if (i_ == c_.events) return std::nullopt;
    if (c_.rate > 0 && replaying_generator()) {
      paced_ = false;
    } else if (c_.rate > 0) {
      if (!paced_) {
        start_ = std::chrono::steady_clock::now();
        paced_from_ = i_;
        paced_ = true;
      }
      std::this_thread::sleep_until(start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                 std::chrono::duration<double>(static_cast<double>(i_ - paced_from_) / c_.rate)));
    }
    const event_time base = i_ * c_.window_ms / c_.per_window;
    const auto late = delays_.windows_late(std::min(c_.past_windows, base / c_.window_ms));
    return std::make_pair(i_++, base - late * c_.window_ms);
  }

 private:
  common c_;
  delay_model delays_;
  std::int64_t i_ = 0;
  bool paced_ = false;           // start_ and paced_from_ are set
  std::int64_t paced_from_ = 0;  // the event due at start_
  std::chrono::steady_clock::time_point start_;
};

/// Watermarks follow the largest event time seen (late events are late by whole windows).
auto watermarks(const common& c) {
  return bounded_out_of_orderness(0).every_events(static_cast<std::uint64_t>(std::max<std::int64_t>(1, c.per_window / 20)));
}

/// Lateness, late trigger and state of a windowed stream as the options say.
template <class WS>
WS& configure(WS& ws, const common& c, bool heavy_state = true) {
  ws.lateness(c.bound).late_trigger(c.late).on_time_first(c.on_time_first);
  if (c.tiered_state && heavy_state) ws.state(c.tier);
  return ws;
}

/// Ends a result stream: the final result of every (window, key), one line each, or a count.
template <class K, class R, class F>
void finals(const stream<window_result<K, R>>& results, const common& c, const std::string& name, F value) {
  auto f = results.filter([](const window_result<K, R>& r) { return r.final; }, name + "_final");
  if (c.out.empty()) {
    f.count(name);
    return;
  }
  f.write_lines(
      c.out + "-" + name + ".txt",
      [value](const window_result<K, R>& r) {
        std::ostringstream line;
        line << r.window.start << ' ' << r.key << ' ' << value(r.value) << (r.incomplete ? " incomplete" : "");
        return line.str();
      },
      name);
}

auto same = [](const auto& v) { return v; };

// ---- average ---------------------------------------------------------------------------------

job build_average(const job_options& o) {
  const auto c = read_common(o, "aion-average");
  job j{"aion-average"};
  auto ws = j.from_generator(
                 [clock = event_clock(c, 0), payload = std::string(2253, 'X')]() mutable -> std::optional<avg_event> {
                   auto e = clock.next();
                   if (!e) return std::nullopt;
                   return avg_event{e->second, 1, payload};
                 },
                 "events")
                .assign_timestamps([](const avg_event& e) { return e.ts; }, watermarks(c))
                .key_by([](const avg_event& e) { return e.value; }, "by_value")
                .window(tumbling{c.window_ms});
  auto out = configure(ws, c).process(
      [](const std::int32_t&, const window_id&, window_events<avg_event>& es) {
        std::int64_t sum = 0, n = 0;
        for (const auto& e : es) {
          sum += e.value;
          ++n;
        }
        return n ? sum / n : 0;  // integer average, as the original
      },
      "average");
  finals(out.results(), c, "average", same);
  return j;
}

// ---- bigrams ---------------------------------------------------------------------------------

/// Tweets of 12 words from a Zipf(1) vocabulary of 1000 words, padded to about 3.5 KB.
class text_generator {
 public:
  explicit text_generator(std::uint64_t seed) : rng_(seed) {
    std::vector<double> w(1000);
    for (std::size_t r = 0; r < w.size(); ++r) w[r] = 1.0 / static_cast<double>(r + 1);
    words_ = std::discrete_distribution<int>(w.begin(), w.end());
  }
  std::string next() {
    std::string t;
    for (int i = 0; i < 12; ++i) {
      if (i) t += ' ';
      t += 'w' + std::to_string(words_(rng_));
    }
    return t;
  }

 private:
  std::mt19937_64 rng_;
  std::discrete_distribution<int> words_;
};

job build_bigrams(const job_options& o) {
  const auto c = read_common(o, "aion-bigrams");
  job j{"aion-bigrams"};
  auto ws = j.from_generator(
                 [clock = event_clock(c, 0), text = text_generator(c.seed),
                  padding = std::string(3500, 'X')]() mutable -> std::optional<text_event> {
                   auto e = clock.next();
                   if (!e) return std::nullopt;
                   return text_event{e->second, text.next(), padding};
                 },
                 "tweets")
                .assign_timestamps([](const text_event& e) { return e.ts; }, watermarks(c))
                .key_by([](const text_event&) { return 0; }, "one_key")
                .window(tumbling{c.window_ms});
  auto out = configure(ws, c).process(
      [](const int&, const window_id&, window_events<text_event>& es) {
        std::unordered_map<std::string, std::uint32_t> counts;
        std::uint64_t total = 0;
        for (const auto& e : es) {
          std::istringstream in{e.text};
          std::string prev, word;
          while (in >> word) {
            if (!prev.empty()) {
              ++counts[prev + ' ' + word];
              ++total;
            }
            prev = std::move(word);
          }
        }
        std::pair<std::string, std::uint32_t> top{"", 0};
        for (const auto& [bigram, n] : counts)
          if (n > top.second || (n == top.second && bigram < top.first)) top = {bigram, n};
        return "distinct=" + std::to_string(counts.size()) + " total=" + std::to_string(total) +
               " top=" + top.first + ":" + std::to_string(top.second);
      },
      "bigrams");
  finals(out.results(), c, "bigrams", same);
  return j;
}

// ---- stock market ----------------------------------------------------------------------------

struct price_stats {
  double min = 0, max = 0, sum = 0;
  std::uint64_t n = 0;
  TIDEMARK_FIELDS(min, max, sum, n)
};

/// A per-symbol count from one of the two sides of the correlation join.
struct symbol_count {
  std::int32_t side = 0;  // 0: price warnings, 1: mentions
  std::int32_t symbol = 0;
  std::uint64_t count = 0;
  std::uint32_t revision = 0;
  TIDEMARK_FIELDS(side, symbol, count, revision)
};

std::string fixed(double x) {
  std::ostringstream s;
  s << std::setprecision(6) << std::fixed << x;
  return s.str();
}

job build_stock(const job_options& o) {
  const auto c = read_common(o, "aion-stock");
  const auto symbols = o.get_int("symbols");
  if (symbols < 1) throw job_error("aion-stock: --symbols must be >= 1");
  job j{"aion-stock"};
  auto prices =
      j.from_generator(
           [clock = event_clock(c, 0), rng = std::mt19937_64(c.seed), symbols,
            dummy = std::string(1664, 'X')]() mutable -> std::optional<price_event> {
             auto e = clock.next();
             if (!e) return std::nullopt;
             const auto sym = static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(symbols));
             return price_event{e->second, sym, 1000 + 50 * std::normal_distribution<double>()(rng), dummy};
           },
           "prices")
          .assign_timestamps([](const price_event& e) { return e.ts; }, watermarks(c));
  auto by_symbol = prices.key_by([](const price_event& e) { return e.symbol; }, "by_symbol");

  // (1) rolling min/max/mean per symbol over sliding windows (W/3 every W/6).
  auto rolling = by_symbol.window(sliding{std::max<event_time>(2, c.window_ms / 3), std::max<event_time>(1, c.window_ms / 6)});
  configure(rolling, c, false);
  auto stats = rolling.aggregate(
      agg::fold(price_stats{},
                [](price_stats s, const price_event& e) {
                  s.min = s.n ? std::min(s.min, e.price) : e.price;
                  s.max = s.n ? std::max(s.max, e.price) : e.price;
                  s.sum += e.price;
                  ++s.n;
                  return s;
                }),
      "rolling");
  finals(stats.results(), c, "rolling", [](const price_stats& s) {
    return fixed(s.min) + ' ' + fixed(s.max) + ' ' + fixed(s.n ? s.sum / static_cast<double>(s.n) : 0);
  });

  // (2) price warnings: consecutive prices of a symbol in a window that differ by more than 5 %.
  auto tumbling_prices = by_symbol.window(tumbling{c.window_ms});
  auto warnings = configure(tumbling_prices, c).process(
      [](const std::int32_t&, const window_id&, window_events<price_event>& es) {
        std::uint64_t n = 0;
        std::optional<double> prev;
        for (const auto& e : es) {
          if (prev && std::abs(*prev / e.price - 1) > 0.05) ++n;
          prev = e.price;
        }
        return n;
      },
      "warnings");
  finals(warnings.results(), c, "warnings", same);

  // (3) mentions per symbol from a second stream of tweets naming 10 symbols each.
  auto mentions =
      j.from_generator(
           [clock = event_clock(c, 1), rng = std::mt19937_64(c.seed + 1), symbols]() mutable -> std::optional<tweet_event> {
             auto e = clock.next();
             if (!e) return std::nullopt;
             tweet_event t{e->second, {}};
             for (auto& s : t.symbols) s = static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(symbols));
             return t;
           },
           "tweets")
          .flat_map<mention>(
              [](const tweet_event& t, collector<mention>& out) {
                for (auto s : t.symbols) out(mention{t.ts, s});
              },
              "mentions")
          .assign_timestamps([](const mention& m) { return m.ts; }, watermarks(c))
          .key_by([](const mention& m) { return m.symbol; }, "by_mentioned")
          .window(tumbling{c.window_ms});
  configure(mentions, c, false);
  auto mention_counts = mentions.aggregate(agg::count(), "mention_counts");

  // (4) join both counts per symbol and correlate them over all symbols, per window.
  auto side = [](std::int32_t s) {
    return [s](const window_result<std::int32_t, std::uint64_t>& r) {
      return symbol_count{s, r.key, r.value, r.revision};
    };
  };
  auto joined = warnings.results().map(side(0), "warning_counts")
                    .merge(mention_counts.results().map(side(1), "mentioned_counts"))
                    .key_by([](const symbol_count&) { return 0; }, "all_symbols")
                    .window(tumbling{c.window_ms});
  configure(joined, c, false);
  auto correlation = joined.process(
      [](const int&, const window_id&, window_events<symbol_count>& es) {
        // the newest revision of each symbol's counts
        std::map<std::int32_t, std::array<std::pair<std::uint32_t, double>, 2>> latest;
        for (const auto& e : es) {
          auto& slot = latest[e.symbol][static_cast<std::size_t>(e.side)];
          if (e.revision + 1 > slot.first) slot = {e.revision + 1, static_cast<double>(e.count)};
        }
        double n = 0, sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
        for (const auto& [sym, v] : latest) {
          const double x = v[0].second, y = v[1].second;
          n += 1;
          sx += x;
          sy += y;
          sxx += x * x;
          syy += y * y;
          sxy += x * y;
        }
        const double den = std::sqrt(n * sxx - sx * sx) * std::sqrt(n * syy - sy * sy);
        return den > 0 ? (n * sxy - sx * sy) / den : 0.0;
      },
      "correlation");
  finals(correlation.results(), c, "correlation", [](double x) { return fixed(x); });
  return j;
}

// ---- linear road tolling ---------------------------------------------------------------------

struct segment_stats {
  std::uint64_t cars = 0;
  double avg_speed = 0;
  TIDEMARK_FIELDS(cars, avg_speed)
};

/// Input of the toll window: a segment's statistics or an accident on it.
struct segment_input {
  std::int32_t seg = 0;
  bool accident = false;
  segment_stats stats;
  std::uint32_t revision = 0;
  TIDEMARK_FIELDS(seg, accident, stats, revision)
};

job build_linear_road(const job_options& o) {
  const auto c = read_common(o, "aion-linear-road");
  const auto cars = o.get_int("cars");
  const auto segments = o.get_int("segments");
  if (cars < 1 || segments < 1) throw job_error("aion-linear-road: --cars and --segments must be >= 1");
  job j{"aion-linear-road"};
  auto reports =
      j.from_generator(
           [clock = event_clock(c, 0), rng = std::mt19937_64(c.seed), cars, segments, per_window = c.per_window,
            dummy = std::string(2048, 'X')]() mutable -> std::optional<car_report> {
             auto e = clock.next();
             if (!e) return std::nullopt;
             const auto car = static_cast<std::int32_t>(e->first % cars);
             const auto seg = static_cast<std::int32_t>(car % segments);
             const auto window = e->first / per_window;
             // In a quarter of the segments per window, every 12th car stops at the segment's
             // trouble spot: two or more stopped cars there make an accident.
             const auto lap = car / segments;
             const bool stopped = (seg + window) % 4 == 0 && (lap + window) % 12 == 0;
             const auto speed = stopped ? 0 : static_cast<std::int32_t>(seg * 80 / segments + rng() % 30);
             const auto pos = stopped ? seg * 1000 : static_cast<std::int32_t>(rng() % 5280);
             return car_report{e->second, car, speed, seg, pos, dummy};
           },
           "position_reports")
          .assign_timestamps([](const car_report& r) { return r.ts; }, watermarks(c));

  // (a) cars and average speed per segment and window.
  auto per_segment = reports.key_by([](const car_report& r) { return r.seg; }, "by_segment")
                         .window(tumbling{c.window_ms});
  auto stats = configure(per_segment, c).process(
      [](const std::int32_t&, const window_id&, window_events<car_report>& rs) {
        std::unordered_set<std::int32_t> distinct;
        double speed = 0;
        std::uint64_t n = 0;
        for (const auto& r : rs) {
          distinct.insert(r.car);
          speed += r.speed;
          ++n;
        }
        return segment_stats{distinct.size(), n ? speed / static_cast<double>(n) : 0};
      },
      "segment_stats");
  finals(stats.results(), c, "segment_stats",
         [](const segment_stats& s) { return std::to_string(s.cars) + ' ' + fixed(s.avg_speed); });

  // (b) stopped cars (>= 4 reports at one location) and accidents (>= 2 stopped at one location).
  auto everything = reports.key_by([](const car_report&) { return 0; }, "all_reports").window(tumbling{c.window_ms});
  auto accidents = configure(everything, c).process(
      [](const int&, const window_id&, window_events<car_report>& rs) {
        std::map<std::tuple<std::int32_t, std::int32_t, std::int32_t>, int> reports_at;  // car, seg, pos
        for (const auto& r : rs)
          if (r.speed == 0) ++reports_at[{r.car, r.seg, r.pos}];
        std::map<std::pair<std::int32_t, std::int32_t>, int> stopped_at;
        for (const auto& [where, n] : reports_at)
          if (n >= 4) ++stopped_at[{std::get<1>(where), std::get<2>(where)}];
        std::vector<std::int32_t> segs;
        for (const auto& [where, n] : stopped_at)
          if (n >= 2) segs.push_back(where.first);
        segs.erase(std::unique(segs.begin(), segs.end()), segs.end());
        return segs;
      },
      "accidents");
  finals(accidents.results(), c, "accidents", [](const std::vector<std::int32_t>& segs) {
    std::string s = std::to_string(segs.size());
    for (auto x : segs) s += ' ' + std::to_string(x);
    return s;
  });

  // (c) toll per segment: 2·(cars − 50)² when congested (> 50 cars, average speed <= 40) and no
  // accident, else 0.
  auto toll_inputs =
      stats.results()
          .map([](const window_result<std::int32_t, segment_stats>& r) {
            return segment_input{r.key, false, r.value, r.revision};
          }, "stats_to_toll")
          .merge(accidents.results().flat_map<segment_input>(
              [](const window_result<int, std::vector<std::int32_t>>& r, collector<segment_input>& out) {
                for (auto seg : r.value) out(segment_input{seg, true, {}, r.revision});
              },
              "accidents_to_toll"))
          .key_by([](const segment_input& i) { return i.seg; }, "toll_by_segment")
          .window(tumbling{c.window_ms});
  configure(toll_inputs, c, false);
  auto tolls = toll_inputs.process(
      [](const std::int32_t&, const window_id&, window_events<segment_input>& in) {
        bool accident = false;
        std::optional<std::pair<std::uint32_t, segment_stats>> newest;
        for (const auto& i : in) {
          if (i.accident)
            accident = true;
          else if (!newest || i.revision >= newest->first)
            newest = std::make_pair(i.revision, i.stats);
        }
        if (!newest || accident || newest->second.cars <= 50 || newest->second.avg_speed > 40) return std::int64_t{0};
        const auto extra = static_cast<std::int64_t>(newest->second.cars) - 50;
        return 2 * extra * extra;
      },
      "tolls");
  finals(tolls.results(), c, "tolls", same);
  return j;
}

template <class... Extra>
std::vector<job_option_spec> options_with(std::vector<job_option_spec> base, Extra... extra) {
  (base.push_back(extra), ...);
  return base;
}

}  // namespace

void register_jobs(job_registry& registry) {
  registry.add({"aion-average", "Aion micro-benchmark: integer average of ~2.3 KB events, one key",
                common_options("100000", "5000", "20000"), nullptr, build_average, nullptr});
  registry.add({"aion-bigrams", "Aion micro-benchmark: word bigram counts of ~3.5 KB generated tweets",
                common_options("50000", "2500", "30000"), nullptr, build_bigrams, nullptr});
  registry.add({"aion-stock",
                "Aion stock market: rolling min/max/mean, price warnings, mentions, correlation",
                options_with(common_options("100000", "5000", "30000"),
                             job_option_spec{"symbols", "1000", "stock symbols"}),
                nullptr, build_stock, nullptr});
  registry.add({"aion-linear-road", "Aion linear-road tolling: segment statistics, accidents, tolls",
                options_with(common_options("100000", "4000", "60000"),
                             job_option_spec{"cars", "1000", "cars; reports cycle through them (4 per car and window by default)"},
                             job_option_spec{"segments", "16", "expressway segments"}),
                nullptr, build_linear_road, nullptr});
}

}  // namespace tidemark::aion
