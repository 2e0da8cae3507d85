// Text specs for late triggers and lateness policies (`staleness:0.05`, `predictive:0.99,0.95`),
// as command-line options and job options give them.
#include <charconv>
#include <stdexcept>
#include <string>
#include <vector>

#include "tidemark/core/lateness.hpp"
#include "tidemark/core/windows.hpp"

namespace tidemark {

namespace {

constexpr const char* trigger_forms =
    "every-event, every-events:N, every-ms:MS, at-offsets:MS,MS,..., staleness:S (0 < S <= 1), "
    "every-dt:N, every-devents:N";
constexpr const char* lateness_forms =
    "fixed:MS, MS, predictive:COVERAGE,CONFIDENCE[,INITIAL_MS[,MIN_MS[,MAX_MS]]]";

// A spec split into its kind (before ':') and comma-separated arguments.
struct spec_parts {
  std::string kind;
  std::vector<std::string> args;
};

spec_parts split(std::string_view spec) {
  spec_parts p;
  const auto colon = spec.find(':');
  p.kind = std::string{spec.substr(0, colon)};
  if (colon == std::string_view::npos) return p;
  auto rest = spec.substr(colon + 1);
  while (true) {
    const auto comma = rest.find(',');
    p.args.emplace_back(rest.substr(0, comma));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return p;
}

[[noreturn]] void fail(const char* what, std::string_view spec, const std::string& why,
                       const char* forms) {
  throw std::invalid_argument(std::string{what} + " '" + std::string{spec} + "': " + why +
                              " (accepted: " + forms + ")");
}

template <class N>
N number(const std::string& s, std::string_view spec, const char* what, const char* forms) {
  N x{};
  const auto* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, x);
  if (s.empty() || ec != std::errc{} || ptr != end)
    fail(what, spec, "'" + s + "' is not a number", forms);
  return x;
}

}  // namespace

late_trigger parse_late_trigger(std::string_view spec) {
  constexpr const char* what = "late trigger";
  const auto p = split(spec);
  auto arity = [&](std::size_t n) {
    if (p.args.size() != n)
      fail(what, spec, p.kind + " takes " + std::to_string(n) + " argument" + (n == 1 ? "" : "s"),
           trigger_forms);
  };
  auto count = [&] {
    arity(1);
    const auto n = number<std::int64_t>(p.args[0], spec, what, trigger_forms);
    if (n <= 0) fail(what, spec, "N must be > 0", trigger_forms);
    return n;
  };
  try {
    if (p.kind == "every-event") {
      arity(0);
      return late_trigger::every_event();
    }
    if (p.kind == "every-events")
      return late_trigger::every_events(static_cast<std::uint64_t>(count()));
    if (p.kind == "every-ms") return late_trigger::every_ms(count());
    if (p.kind == "every-dt") return late_trigger::every_dt(static_cast<std::size_t>(count()));
    if (p.kind == "every-devents")
      return late_trigger::every_devents(static_cast<std::size_t>(count()));
    if (p.kind == "staleness") {
      arity(1);
      return late_trigger::staleness(number<double>(p.args[0], spec, what, trigger_forms));
    }
    if (p.kind == "at-offsets") {
      if (p.args.empty()) fail(what, spec, "at-offsets needs at least one offset", trigger_forms);
      std::vector<std::int64_t> offsets;
      for (const auto& a : p.args)
        offsets.push_back(number<std::int64_t>(a, spec, what, trigger_forms));
      return late_trigger::at_offsets(std::move(offsets));
    }
  } catch (const std::invalid_argument& e) {
    if (std::string_view{e.what()}.rfind(std::string{what} + " '", 0) == 0) throw;
    fail(what, spec, e.what(), trigger_forms);
  }
  fail(what, spec, "unknown kind '" + p.kind + "'", trigger_forms);
}

lateness parse_lateness(std::string_view spec) {
  constexpr const char* what = "lateness";
  const auto p = split(spec);
  try {
    if (p.args.empty() && !p.kind.empty() &&
        p.kind.find_first_not_of("0123456789") == std::string::npos)
      return lateness::fixed{number<event_time>(p.kind, spec, what, lateness_forms)};
    if (p.kind == "fixed") {
      if (p.args.size() != 1) fail(what, spec, "fixed takes 1 argument", lateness_forms);
      return lateness::fixed{number<event_time>(p.args[0], spec, what, lateness_forms)};
    }
    if (p.kind == "predictive") {
      if (p.args.size() < 2 || p.args.size() > 5)
        fail(what, spec, "predictive takes 2 to 5 arguments", lateness_forms);
      lateness::predictive pr;
      pr.coverage = number<double>(p.args[0], spec, what, lateness_forms);
      pr.confidence = number<double>(p.args[1], spec, what, lateness_forms);
      if (p.args.size() > 2)
        pr.max = pr.initial = number<event_time>(p.args[2], spec, what, lateness_forms);
      if (p.args.size() > 3) pr.min = number<event_time>(p.args[3], spec, what, lateness_forms);
      if (p.args.size() > 4) pr.max = number<event_time>(p.args[4], spec, what, lateness_forms);
      return pr;
    }
  } catch (const std::invalid_argument& e) {
    if (std::string_view{e.what()}.rfind(std::string{what} + " '", 0) == 0) throw;
    fail(what, spec, e.what(), lateness_forms);
  }
  fail(what, spec, "unknown kind '" + p.kind + "'", lateness_forms);
}

}  // namespace tidemark
