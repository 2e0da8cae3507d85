// The history sink and its reader. Keys make a commit that a restore repeats land on the same
// rows: (writer, checkpoint, position) for a checkpoint's rows; rows committed without a
// checkpoint get the instance's random incarnation and a commit counter, so they never collide.
#include "tidemark/chaos/history.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>

#include "tidemark/core/state.hpp"
#include "tidemark/persistence/table_store.hpp"

namespace tidemark::chaos {

namespace {

const std::string table_name = "history";
constexpr char sep = '\x1f';  // between the fields of a row; ids and values do not contain it

// This process's database under `dir`: one per process, chosen once.
std::string process_database(const std::string& dir) {
  static std::mutex lock;
  static std::map<std::string, std::string> chosen;
  std::lock_guard<std::mutex> guard{lock};
  auto& db = chosen[dir];
  if (db.empty()) {
    char name[64];
    std::snprintf(name, sizeof name, "p%d-%08x", static_cast<int>(::getpid()),
                  static_cast<unsigned>(std::random_device{}()));
    db = (std::filesystem::path{dir} / name).string();
    std::filesystem::create_directories(db);
  }
  return db;
}

persistence::table_sink_options sink_options(history_mode mode) {
  persistence::table_sink_options o;
  // exactly once never commits before a checkpoint completes (a plain commit replayed after a
  // recovery from the beginning would be a repeat); at least once commits small batches at once
  o.plain_commit_rows = mode == history_mode::exactly_once ? SIZE_MAX : 64;
  return o;
}

std::string digits(std::uint64_t v, int width) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%0*llu", width, static_cast<unsigned long long>(v));
  return buf;
}

std::vector<std::string> split(const std::string& s, std::size_t fields) {
  std::vector<std::string> out;
  std::size_t from = 0;
  while (out.size() + 1 < fields) {
    auto at = s.find(sep, from);
    if (at == std::string::npos) break;
    out.push_back(s.substr(from, at - from));
    from = at + 1;
  }
  out.push_back(s.substr(from));  // the last field (the value) may hold anything
  return out;
}

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

const char* to_string(history_mode m) noexcept {
  return m == history_mode::exactly_once ? "exactly-once" : "at-least-once";
}

history_mode parse_history_mode(const std::string& text) {
  if (text == "exactly-once") return history_mode::exactly_once;
  if (text == "at-least-once") return history_mode::at_least_once;
  throw std::invalid_argument("history mode '" + text + "': exactly-once or at-least-once");
}

history_sink::history_sink(const std::string& dir, const instance_info& info, history_mode mode)
    : row_sink(persistence::wt_connection::open_shared(process_database(dir), "log=(enabled=true)"),
               table_name, info, sink_options(mode)),
      mode_(mode),
      writer_(info.name + "/" + std::to_string(info.index)),
      incarnation_(std::random_device{}() * 0x100000000ull + std::random_device{}()) {}

void history_sink::add_result(const std::string& id, std::uint32_t revision,
                              const std::string& value) {
  // the receive time travels with the staged row (and its snapshot) until the commit
  add(id + sep + std::to_string(revision), std::to_string(wall_ms()) + sep + value);
}

void history_sink::on_watermark(event_time wm, emitter& out) {
  watermark_ = std::max(watermark_, wm);
  row_sink::on_watermark(wm, out);
}

// At least once takes no part in checkpoints: the row sink stays in plain mode, and a restore
// replays what it wrote again. What arrived before the barrier is committed at the barrier: a
// restore from this checkpoint does not replay it, so rows still waiting for their batch of 64
// would otherwise be lost when the job stops for a recovery.
void history_sink::snapshot(state_writer& out) {
  if (mode_ == history_mode::at_least_once) return flush();
  snapshot_watermarks_.emplace_back(out.checkpoint(), watermark_);
  // ours first: the row sink's restore commits at once and asks before_commit for them
  out.write(watermark_);
  out.write(snapshot_watermarks_);
  row_sink::snapshot(out);
}

void history_sink::restore(state_reader& in) {
  if (mode_ == history_mode::at_least_once) return;
  in.read(watermark_);
  in.read(snapshot_watermarks_);
  row_sink::restore(in);
  snapshot_watermarks_.clear();  // everything staged was committed
}

void history_sink::on_checkpoint_complete(std::uint64_t id) {
  if (mode_ == history_mode::at_least_once) return;
  row_sink::on_checkpoint_complete(id);
  snapshot_watermarks_.erase(
      std::remove_if(snapshot_watermarks_.begin(), snapshot_watermarks_.end(),
                     [id](const auto& x) { return x.first <= id; }),
      snapshot_watermarks_.end());
}

void history_sink::before_commit(std::uint64_t checkpoint, rows& rs) {
  if (rs.empty()) return;
  auto wm = watermark_;
  for (const auto& [id, w] : snapshot_watermarks_)
    if (id == checkpoint) wm = w;
  std::string prefix = writer_ + '\0';
  if (checkpoint > 0)
    prefix += "c" + digits(checkpoint, 20) + '\0';
  else
    prefix += "u" + digits(incarnation_, 20) + '\0' + digits(++plain_commits_, 20) + '\0';
  const auto now = std::to_string(wall_ms());
  std::size_t position = 0;
  for (auto& [key, value] : rs) {
    // key is "id<sep>revision", value "received<sep>value", as add_result wrote them
    std::string row = key + sep + now + sep + std::to_string(checkpoint) + sep +
                      std::to_string(wm) + sep + writer_ + sep + value;
    key = prefix + digits(position++, 10);
    value = std::move(row);
  }
}

std::vector<history_entry> read_history(const std::string& dir) {
  std::map<std::string, history_entry> by_key;  // a repeated commit lands on the same key
  if (!std::filesystem::is_directory(dir)) return {};
  for (const auto& sub : std::filesystem::directory_iterator{dir}) {
    if (!std::filesystem::exists(sub.path() / "WiredTiger")) continue;
    std::shared_ptr<persistence::wt_connection> db;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
    while (!db) {
      try {
        db = persistence::wt_connection::open_shared(sub.path().string(), "log=(enabled=true)");
      } catch (const persistence::storage_error&) {
        // the process that wrote it may still hold it for a moment after the run
        if (std::chrono::steady_clock::now() > deadline) throw;
        std::this_thread::sleep_for(std::chrono::milliseconds{50});
      }
    }
    persistence::table_store t{db, table_name, persistence::durability::power_loss};
    t.scan({}, std::nullopt, [&](std::string_view k, std::string_view v) {
      std::string key{k};
      if (by_key.count(key)) return true;
      auto f = split(std::string{v}, 8);
      if (f.size() != 8)
        throw std::runtime_error("history '" + sub.path().string() + "': a row has " +
                                 std::to_string(f.size()) +
                                 " fields, not 8 (id, revision, commit time, checkpoint, "
                                 "watermark, writer, receive time, value)");
      history_entry e;
      e.id = f[0];
      e.revision = static_cast<std::uint32_t>(std::stoul(f[1]));
      e.commit_ms = std::stoll(f[2]);
      e.checkpoint = std::stoull(f[3]);
      e.watermark = std::stoll(f[4]);
      e.writer = f[5];
      e.received_ms = std::stoll(f[6]);
      e.value = f[7];
      by_key.emplace(std::move(key), std::move(e));
      return true;
    });
  }
  std::vector<std::pair<std::string, history_entry>> all(by_key.begin(), by_key.end());
  // commit order: time, then the key (writer, checkpoint, position) within one millisecond
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return a.second.commit_ms < b.second.commit_ms;
  });
  std::vector<history_entry> out;
  out.reserve(all.size());
  for (auto& [k, e] : all) out.push_back(std::move(e));
  return out;
}

}  // namespace tidemark::chaos
