// The process-wide storage faults (see faults.hpp): one value behind a mutex, read by the stores
// before each write.
#include "tidemark/persistence/faults.hpp"

#include <mutex>

namespace tidemark::persistence {
namespace {

std::mutex& faults_mutex() {
  static std::mutex m;
  return m;
}

storage_faults& faults() {
  static storage_faults f;
  return f;
}

}  // namespace

void set_storage_faults(const storage_faults& f) {
  std::lock_guard<std::mutex> lock{faults_mutex()};
  faults() = f;
}

storage_faults current_storage_faults() {
  std::lock_guard<std::mutex> lock{faults_mutex()};
  return faults();
}

}  // namespace tidemark::persistence
