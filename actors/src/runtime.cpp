#include "tidemark/runtime/runtime.hpp"
#include "tidemark/runtime/heap.hpp"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <variant>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

#include "checkpointing.hpp"
#include "deploy.hpp"
#include "driver_inbox.hpp"
#include "live_poll.hpp"
#include "messages.hpp"
#include "synchronizer_actor.hpp"
#include "wiring.hpp"

namespace tidemark {

/// Batches are allocated on one thread and freed on another. With glibc's default dynamic
/// thresholds, large batch buffers went back to the kernel and returned with page faults on
/// every allocation (6x the CPU per event at batch 4096). Memory is bounded by credit anyway, so
/// keep freed buffers in the heap.
///
/// Each arena keeps what is freed into it, so the arenas are limited to one per core (glibc's
/// default is eight per core): the scheduler runs one worker per core, and the other threads
/// (WiredTiger's eviction, the MQTT clients, the sampler) share them. With the default, the
/// ten-minute ETL soak grew 18 MB beyond the store's cache and the latency record; with one arena
/// per core it grew none, at the same throughput (docs/benchmarks.md, "Soak").
///
/// Under a state memory budget the trim threshold is a sixteenth of it (at most 256 MB): an
/// arena keeps that much freed memory at its top, and 256 MB per arena would keep what the tiered
/// store destages to stay under a 512 MB budget inside the heap.
/// The smallest threshold asked for stays: mallopt may change it while threads run.
void tune_heap(std::uint64_t memory_budget_bytes) {
  static const bool once = [] {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_ARENA_MAX, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    return true;
  }();
  (void)once;
  static std::mutex m;
  static std::uint64_t trim = 0;
  std::uint64_t want = 256u << 20;
  if (memory_budget_bytes > 0)
    want = std::clamp<std::uint64_t>(memory_budget_bytes / 16, 1u << 20, want);
  std::lock_guard<std::mutex> l(m);
  if (trim != 0 && trim <= want) return;
  trim = want;
  mallopt(M_TRIM_THRESHOLD, static_cast<int>(trim));
}

void tune_thread_cache(char** argv) {
  const std::string tunable = "glibc.malloc.tcache_count";
  const char* now = std::getenv("GLIBC_TUNABLES");
  std::string tunables = now ? now : "";
  if (tunables.find(tunable) != std::string::npos) return;
  tunables += (tunables.empty() ? "" : ":") + tunable + "=1000";
  if (setenv("GLIBC_TUNABLES", tunables.c_str(), 1) != 0) return;
  // By its path, not as /proc/self/exe: the kernel names a process after the file it executes,
  // and "exe" is not what ps, top and pkill should see. /proc/self/exe remains when the path is
  // gone (the program was replaced while it ran).
  std::error_code ec;
  if (const auto self = std::filesystem::read_symlink("/proc/self/exe", ec); !ec)
    execv(self.c_str(), argv);
  execv("/proc/self/exe", argv);
  spdlog::warn(
      "could not re-execute {} with a larger malloc thread cache ({}): running with "
      "glibc's default",
      argv[0], std::strerror(errno));
}

namespace detail {

void configure(caf::actor_system_config& cfg, const run_options& opts) {
  auto threads = opts.threads ? opts.threads : std::max(1u, std::thread::hardware_concurrency());
  cfg.set("scheduler.max-threads", threads);
  // Work sharing spreads a pipeline's actors over the cores (work stealing keeps a chain on one
  // worker; see docs/architecture.md).
  cfg.set("scheduler.policy", caf::atom("sharing"));
}

void publish(const job_result& result, const run_options& opts) {
  if (opts.print_summary) std::cout << result.summary();
  if (!opts.report_path.empty()) {
    std::ofstream out{opts.report_path};
    if (!out) throw job_error("cannot write the metrics report to '" + opts.report_path + "'");
    out << result.to_json() << '\n';
  }
}

}  // namespace detail

std::uint32_t run_options::channel_credit() const noexcept {
  if (credit > 0) return credit;
  const auto batches = credit_elements / std::max<std::size_t>(1, batch_size);
  return static_cast<std::uint32_t>(std::clamp<std::uint64_t>(batches, 2, 128));
}

job_result run(const job& j, const run_options& opts) {
  if (opts.tune_malloc)
    tune_heap(opts.storage.memory_budget_bytes);  // before any thread of the run
  // gates of the synchronizers are operators of the rewritten graph; it outlives the actors
  const auto synced = detail::executable_graph(j, opts);
  const auto& g = synced.graph;
  auto plan = compile(g, {opts.fuse});
  auto w = detail::wire(plan);
  // Tiered window stores keep the storage service alive as long as they run.
  auto run_opts = opts;
  run_opts.credit = opts.channel_credit();
  run_opts.checkpoints.unaligned &= opts.checkpoints.enabled();
  if (!run_opts.state_storage)
    run_opts.state_storage = std::make_shared<persistence::storage_service>(opts.storage);

  caf::actor_system_config cfg;
  detail::configure(cfg, opts);
  caf::actor_system sys{cfg};
  detail::driver_inbox inbox{sys};
  detail::local_synchronizers synchronizers{sys, synced};  // before the stages: restores report

  job_result result;
  result.job = j.name();
  result.plan = to_text(synced, plan);
  batch_gauge::reset_peak();
  auto started = std::chrono::steady_clock::now();

  const auto placement = detail::placement::all_local(plan);
  detail::checkpoint_driver checkpoints{opts.checkpoints, j.name(), result.plan,
                                        placement.node_of.size()};
  auto from = checkpoints.start_point();
  result.restored_from = from.checkpoint;
  // embedded: every stage instance runs here, so no channel needs a proxy
  detail::deployment_actors actors{sys, g, plan, w, placement, run_opts,
                                   inbox.actor(), nullptr, &from};
  checkpoints.warn_unreplayable(actors.unreplayable(), result);
  for (auto& a : actors.stages()) inbox.monitor(a);
  const auto total = actors.stages().size();
  detail::live_poll live{opts.live, live_plan::of(j.name(), g, plan), opts.live_period};
  actors.start();
  std::string failure;
  std::size_t done = 0;
  auto stopped = [&] { return opts.stop && opts.stop->load(); };
  while (done < total && failure.empty() && !stopped()) {
    // wait for the stages, the next live poll, the next checkpoint or a look at `stop` (an hour
    // is "forever")
    std::chrono::milliseconds wait =
        opts.stop ? std::chrono::milliseconds{100} : std::chrono::hours{1};
    if (live.enabled()) wait = std::min(wait, live.ask(inbox.actor(), actors.stages()));
    try {
      for (auto id : checkpoints.collect())
        for (const auto& a : actors.stages()) caf::anon_send(a, detail::commit_atom::value, id);
    } catch (const job_error& e) {  // too many checkpoints failed in a row
      failure = e.what();
      break;
    }
    // every stage hears of it: sources start it, stages that ended answer for themselves
    wait = std::min(wait, checkpoints.poll([&](std::uint64_t id) {
      for (const auto& a : actors.stages()) caf::anon_send(a, detail::checkpoint_atom::value, id);
    }));
    auto message = inbox.pop(wait);
    if (!message) continue;
    if (auto* m = std::get_if<detail::done_msg>(&*message)) {
      if (live.enabled()) live.update(m->metrics);
      result.instances.push_back(std::move(m->metrics));
      ++done;
    } else if (auto* m = std::get_if<detail::checkpointed_msg>(&*message)) {
      checkpoints.on_piece(m->stage, m->instance, m->id, std::move(m->state), m->alignment_ms);
    } else if (auto* m = std::get_if<detail::live_metrics_msg>(&*message)) {
      live.update(std::move(m->metrics));
    } else if (auto* m = std::get_if<detail::failed_msg>(&*message)) {
      failure = std::move(m->what);
    } else if (auto* m = std::get_if<caf::down_msg>(&*message)) {
      if (m->reason && m->reason != caf::exit_reason::user_shutdown)
        failure = "an operator actor stopped unexpectedly: " + sys.render(m->reason);
    }
  }
  live.publish(failure.empty() && done == total);
  if (!failure.empty()) {
    actors.stop();
    throw job_error("job '" + j.name() + "' failed: " + failure);
  }
  if (done < total) result.warnings.push_back("stopped on request before the end of the job");
  actors.stop();  // stages that are done wait for it (they answer checkpoints until the end)
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  result.checkpoints = checkpoints.completed();
  result.failed_checkpoints = checkpoints.failed();
  result.checkpoint_failure = checkpoints.first_failure();
  checkpoints.finished();
  result.peak_live_batches = batch_gauge::peak();
  std::sort(result.instances.begin(), result.instances.end(), [](auto& a, auto& b) {
    return std::tie(a.stage, a.instance) < std::tie(b.stage, b.instance);
  });
  detail::publish(result, opts);
  return result;
}

}  // namespace tidemark
