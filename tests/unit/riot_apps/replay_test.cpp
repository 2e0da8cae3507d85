// Replay schedule (temporal and spatial scaling, cycles, rate shaping), the synthetic FIT and GRID
// generators, the paper's jitter, the merge of a cluster's per-node metrics, and the replay
// source's checkpoints, checked on exact values.
#define BOOST_TEST_MODULE riot_replay
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <fstream>
#include <set>

#include "tidemark/core/state.hpp"

#include "tidemark/riot/apps/metrics.hpp"
#include "tidemark/riot/apps/replay.hpp"
#include "tidemark/riot/apps/replay_source.hpp"
#include "tidemark/riot/senml.hpp"

using namespace tidemark::riot;
using namespace tidemark::riot::apps;

namespace {

std::vector<std::string> city_lines() {
  std::ifstream in(default_data_dir() + "/SYS_sample_data_senml.csv");
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

std::vector<scheduled_message> all(replay_schedule& s) {
  std::vector<scheduled_message> out;
  while (auto m = s.next()) out.push_back(*m);
  return out;
}

std::string source_of(const std::string& line) {
  auto at = line.find(R"("n":"source","sv":")") + 19;
  return line.substr(at, line.find('"', at) - at);
}

}  // namespace

BOOST_AUTO_TEST_CASE(one_pass_at_scale_one_replays_the_file_with_its_timing) {
  replay_config c;
  c.speed = 10;
  replay_schedule s(c);
  auto lines = city_lines();
  BOOST_TEST(s.size() == 1000u);
  auto msgs = all(s);
  BOOST_REQUIRE_EQUAL(msgs.size(), 1000u);
  BOOST_TEST(msgs.front().line == lines.front());
  BOOST_TEST(msgs.back().msg_id == 1000);
  // the last event is 59 s after the first: due 5.9 s later at 10x
  BOOST_TEST(msgs.back().due_ns == 5'900'000'000);
  BOOST_TEST(msgs.back().time == 1422748859000);
  // 60 distinct seconds, 1000 messages: period = 59 s + 59 s / 999
  BOOST_TEST(s.period_ms() == 59000 + 59000 / 999);
}

BOOST_AUTO_TEST_CASE(spatial_copies_have_distinct_ids_and_shifted_times) {
  replay_config c;
  c.scale = 3;
  replay_schedule s(c);
  BOOST_TEST(s.size() == 3000u);
  auto msgs = all(s);
  std::set<std::string> ids;
  std::map<std::string, std::int64_t> first_time;
  for (const auto& m : msgs) {
    auto id = source_of(m.line);
    ids.insert(id);
    first_time.emplace(id, m.time);
    // the line's prefix and "bt" carry the shifted time
    BOOST_TEST(m.line.substr(0, m.line.find(',')) == std::to_string(m.time));
    BOOST_TEST(m.line.find("\"bt\":" + std::to_string(m.time) + "}") != std::string::npos);
  }
  BOOST_TEST(ids.size() == 3 * 788u);
  auto p = s.period_ms();
  BOOST_TEST(first_time.at("ci4lr75sl000802ypo4qrcjda23") == 1422748800000);
  BOOST_TEST(first_time.at("ci4lr75sl000802ypo4qrcjda23-1") == 1422748800000 + p / 3);
  BOOST_TEST(first_time.at("ci4lr75sl000802ypo4qrcjda23-2") == 1422748800000 + 2 * p / 3);
  for (std::size_t i = 1; i < msgs.size(); ++i) BOOST_TEST(msgs[i - 1].time <= msgs[i].time);
}

BOOST_AUTO_TEST_CASE(cycles_continue_one_period_later) {
  replay_config c;
  c.messages = 2500;
  replay_schedule s(c);
  auto msgs = all(s);
  BOOST_REQUIRE_EQUAL(msgs.size(), 2500u);
  BOOST_TEST(msgs[1000].time == msgs[0].time + s.period_ms());
  // the same message, its time replaced in the prefix and in "bt"
  auto expected = msgs[0].line;
  auto t0 = std::to_string(msgs[0].time), t2 = std::to_string(msgs[2000].time);
  for (auto at = expected.find(t0); at != std::string::npos; at = expected.find(t0)) expected.replace(at, t0.size(), t2);
  BOOST_TEST(msgs[2000].time == msgs[0].time + 2 * s.period_ms());
  BOOST_TEST(msgs[2000].line == expected);
}

BOOST_AUTO_TEST_CASE(a_target_rate_spaces_messages_evenly_or_by_profile) {
  replay_config c;
  c.rate = 4000;
  replay_schedule s(c);
  auto msgs = all(s);
  BOOST_TEST(msgs[0].due_ns == 0);
  BOOST_TEST(msgs[1].due_ns == 250'000);
  BOOST_TEST(msgs[999].due_ns == 999 * 250'000);

  c.dataset = dataset::taxi;
  c.profile = rate_profile::paper;
  c.messages = 40000;
  replay_schedule taxi(c);
  auto t = all(taxi);
  // day half of the 10 s cycle at 0.8..1.0 of the peak, night half at 300/4000
  std::size_t day = 0, night = 0;
  for (const auto& m : t) (m.due_ns % 10'000'000'000 < 5'000'000'000 ? day : night)++;
  BOOST_TEST(rate_factor(dataset::taxi, 7.0) == 0.075);
  BOOST_TEST(rate_factor(dataset::grid, 5.0) == 1.0);
  BOOST_TEST(rate_factor(dataset::fit, 3.3) == 1.0);
  BOOST_TEST(day > 5 * night);
}

BOOST_AUTO_TEST_CASE(synthetic_fit_and_grid_parse_and_follow_their_characteristics) {
  senml_parse parse;
  auto fit = synthetic_fit(default_data_dir(), 7, 2.0);  // 2 s at 50 Hz for 10 subjects
  BOOST_REQUIRE_EQUAL(fit.size(), 1000u);
  senml_fanout fan(senml_fanout_config::for_dataset(dataset::fit));
  std::vector<observation> obs;
  std::set<std::string> subjects;
  for (const auto& l : fit) {
    auto rec = parse.process(senml_payload(l));
    BOOST_REQUIRE(rec.has_value());
    BOOST_REQUIRE(fan.process(*rec, 1, obs).has_value());
    subjects.insert(rec->find("subjectId")->text);
  }
  BOOST_TEST(subjects.size() == 10u);
  BOOST_TEST(obs.size() == 1000u * 11);
  BOOST_TEST(synthetic_fit(default_data_dir(), 7, 2.0) == fit);  // seeded

  auto grid = synthetic_grid(7, 500, 2);
  BOOST_REQUIRE_EQUAL(grid.size(), 1000u);
  senml_fanout gfan(senml_fanout_config::for_dataset(dataset::grid));
  std::int64_t start = 1247511001000;
  std::size_t near_centre = 0;
  for (const auto& l : grid) {
    auto rec = parse.process(senml_payload(l));
    BOOST_REQUIRE(rec.has_value());
    obs.clear();
    BOOST_REQUIRE(gfan.process(*rec, 1, obs).has_value());
    BOOST_TEST((obs[0].value >= 1.828 && obs[0].value <= 36.658));
    auto offset = (rec->base_time - start) % 1'800'000 - 900'000;  // from the half hour's centre
    if (std::abs(offset) <= 3 * 60'000) ++near_centre;            // within one standard deviation
  }
  // a normal distribution puts 68 % within one standard deviation
  BOOST_TEST(near_centre > 600u);
  BOOST_TEST(near_centre < 760u);
}

BOOST_AUTO_TEST_CASE(jitter_is_the_papers_relative_deviation_of_the_output_rate) {
  // selectivity 2: expected out = 2 * in; mean in = 100
  auto j = jitter({100, 100, 100, 100}, {200, 180, 220, 200});
  BOOST_REQUIRE_EQUAL(j.size(), 4u);
  BOOST_TEST(j[0] == 0.0);
  BOOST_TEST(j[1] == -0.1);
  BOOST_TEST(j[2] == 0.1);
  std::vector<double> xs{5, 1, 4, 2, 3};
  auto d = distribution::of(xs);
  BOOST_TEST(d.p50 == 3.0);
  BOOST_TEST(d.min == 1.0);
  BOOST_TEST(d.max == 5.0);
  BOOST_TEST(d.mean == 3.0);
}

BOOST_AUTO_TEST_CASE(cluster_parts_merge_with_latencies_across_nodes) {
  // what a node measures: the source's process keeps emit times, a sink's process whose source
  // runs elsewhere keeps the message id and wall-clock time of each delivery
  run_metrics source(3), sink(3);
  source.start();
  source.emitted(1, 3);
  sink.delivered("mqtt", 2);
  sink.stop();
  source.stop();
  auto round_trip = [](const metrics_part& p) {
    std::vector<std::uint8_t> bytes;
    tidemark::encode(p, bytes);
    return tidemark::decode<metrics_part>(bytes.data(), bytes.size());
  };
  auto emitted = round_trip(source.part());
  BOOST_TEST(emitted.in == 3u);
  BOOST_REQUIRE_EQUAL(emitted.emit_ns.size(), 4u);
  BOOST_TEST(emitted.emit_ns[2] >= 0);
  auto delivered = round_trip(sink.part());
  BOOST_REQUIRE_EQUAL(delivered.outputs.size(), 1u);
  BOOST_TEST(delivered.outputs[0].latency_ms.empty());
  BOOST_TEST(delivered.outputs[0].remote_ids == std::vector<std::int64_t>{2});
  BOOST_TEST(delivered.outputs[0].remote_at_ns[0] >= emitted.start_ns + emitted.emit_ns[2]);

  // exact values: n1 emits messages 1..3 at 0, 1 and 2 ms of its clock; n3, whose clock started
  // 0.5 ms later, delivers them at 10, 11 and 14 ms of n1's; n2 only sampled its CPU and memory
  const std::int64_t t0 = 1'700'000'000'000'000'000;
  metrics_part n1, n2, n3;
  n1.node = "n1", n2.node = "n2", n3.node = "n3";
  n1.start_ns = t0;
  n1.in = 3;
  n1.last_emit_ns = 2'000'000;
  n1.in_per_second = {3};
  n1.emit_ns = {-1, 0, 1'000'000, 2'000'000};
  n1.resources = {{0.2, 50, 100}};
  n2.resources = {{0.2, 10, 30}};
  n3.start_ns = t0 + 500'000;
  n3.outputs = {{"mqtt", 3, {3}, {}, {1, 2, 3}, {t0 + 10'000'000, t0 + 11'000'000, t0 + 14'000'000}}};
  n3.resources = {{0.2, 20, 40}};
  auto m = run_metrics::merged({n1, n2, n3});
  BOOST_TEST(m->messages_in() == 3u);
  BOOST_TEST(m->messages_out("mqtt") == 3u);
  auto l = m->latency("mqtt");
  BOOST_TEST(l.count == 3u);
  BOOST_TEST(l.min == 10.0);
  BOOST_TEST(l.max == 12.0);
  BOOST_TEST(m->nodes().size() == 3u);
  BOOST_TEST(m->nodes()[2].outputs[0].latency_ms == std::vector<double>({10.0, 10.0, 12.0}));
  auto json = m->to_json("mqtt");
  // the cluster's CPU is the nodes' means summed, its memory their peaks summed
  BOOST_TEST(json.find("\"cpu_percent_mean\": 80.0") != std::string::npos, json);
  BOOST_TEST(json.find("\"rss_mb_max\": 170.0") != std::string::npos, json);
  BOOST_TEST(json.find("\"node\": \"n2\"") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(bad_options_are_rejected_with_the_option_named) {
  replay_config c;
  c.scale = 0;
  BOOST_CHECK_EXCEPTION(replay_schedule{c}, std::invalid_argument, [](const std::invalid_argument& e) {
    return std::string{e.what()} == "replay: --scale must be at least 1";
  });
  BOOST_CHECK_THROW(parse_rate_profile("bursty"), std::invalid_argument);
}

namespace {

/// Keeps the lines a source emits, in order.
class line_emitter final : public tidemark::emitter {
 public:
  void emit_watermark(tidemark::event_time) override {}
  void emit_idle(bool) override {}
  std::vector<numbered_line> lines;

 protected:
  void emit_on(std::uint32_t, tidemark::batch_ptr b) override {
    for (auto& l : static_cast<tidemark::batch<numbered_line>&>(*b).values) lines.push_back(std::move(l));
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(a_restored_replay_source_continues_with_the_same_messages) {
  // three copies, a cycle and a half, the paper's rate profile: every part of the position matters
  replay_config c;
  c.scale = 3;
  c.messages = 4500;
  c.rate = 30000;
  c.profile = rate_profile::paper;
  replay_schedule reference(c);
  const auto expected = all(reference);
  for (std::size_t pulls : {0, 1, 7, 40, 100000}) {
    BOOST_TEST_CONTEXT("snapshot after " << pulls << " pulls") {
      line_emitter out;
      std::vector<std::uint8_t> state;
      {
        replay_source first(c, std::make_shared<run_metrics>(expected.size()));
        BOOST_TEST(first.replayable());
        first.open();
        for (std::size_t i = 0; i < pulls && first.pull(64, out);) i += out.lines.empty() ? 0 : 1;
        tidemark::state_writer w{1, state};
        first.snapshot(w);
      }
      const auto before = out.lines.size();
      replay_source second(c, std::make_shared<run_metrics>(expected.size()));
      second.open();
      tidemark::state_reader r{1, state.data(), state.size()};
      second.restore(r);
      BOOST_TEST(r.remaining() == 0u);
      // pacing restarts at the restore: the next message is due at once, not at its old due time
      if (before < expected.size()) {
        second.pull(1, out);
        BOOST_TEST(out.lines.size() == before + 1);
      }
      while (second.pull(64, out)) {
      }
      BOOST_REQUIRE_EQUAL(out.lines.size(), expected.size());
      for (std::size_t i = 0; i < expected.size(); ++i) {
        BOOST_TEST(out.lines[i].msg_id == expected[i].msg_id);
        BOOST_TEST(out.lines[i].line == expected[i].line);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_replay_position_from_another_configuration_is_refused) {
  replay_config c;
  c.scale = 3;
  replay_schedule s(c);
  for (int i = 0; i < 10; ++i) s.next();
  auto p = s.tell();
  c.scale = 2;
  replay_schedule smaller(c);
  BOOST_CHECK_THROW(smaller.seek(p), std::invalid_argument);
}
