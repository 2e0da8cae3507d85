// The process-wide storage faults (see faults.hpp) and the hook every store write passes through
// (fault_injection.hpp). The hook's fast path, no fault set, is one relaxed atomic load: the
// faults themselves sit behind a mutex that only writes under a fault take.
#include "tidemark/persistence/faults.hpp"

#include <atomic>
#include <cerrno>
#include <mutex>
#include <random>
#include <thread>

#include "fault_injection.hpp"
#include "tidemark/persistence/wiredtiger.hpp"

namespace tidemark::persistence {
namespace {

struct fault_state {
  std::mutex m;
  storage_faults faults;
  std::mt19937_64 draws;  // reseeded by every set_storage_faults
  std::atomic<bool> active{false};
};

fault_state& state() {
  static fault_state s;
  return s;
}

}  // namespace

void set_storage_faults(const storage_faults& f) {
  auto& s = state();
  std::lock_guard<std::mutex> lock{s.m};
  s.faults = f;
  s.draws.seed(f.seed);
  s.active.store(f.any(), std::memory_order_release);
}

storage_faults current_storage_faults() {
  auto& s = state();
  std::lock_guard<std::mutex> lock{s.m};
  return s.faults;
}

namespace detail {

bool storage_faults_active() noexcept {
  return state().active.load(std::memory_order_relaxed);
}

void inject_write_fault(const std::string& home, const std::function<std::string()>& what) {
  if (!storage_faults_active()) return;
  auto& s = state();
  std::chrono::milliseconds delay{0};
  bool fail = false;
  {
    std::lock_guard<std::mutex> lock{s.m};
    if (!s.faults.dir.empty() && home.compare(0, s.faults.dir.size(), s.faults.dir) != 0) return;
    delay = s.faults.write_delay;
    fail = s.faults.fail_writes > 0 &&
           std::uniform_real_distribution<double>{0, 1}(s.draws) < s.faults.fail_writes;
  }
  if (delay.count() > 0) std::this_thread::sleep_for(delay);  // NOLINT: slow disk on purpose
  if (fail) throw storage_error(EIO, what() + " in '" + home + "': input/output error (injected)");
}

}  // namespace detail
}  // namespace tidemark::persistence
