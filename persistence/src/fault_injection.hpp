// Where injected storage faults (faults.hpp) strike: every store write calls inject_write_fault
// before it reaches WiredTiger. See wiredtiger.cpp for which calls count as writes and why the
// faults are injected here rather than in a WiredTiger file system.
#pragma once

#include <functional>
#include <string>

namespace tidemark::persistence::detail {

/// True when storage faults are set (one relaxed atomic load).
bool storage_faults_active() noexcept;

/// A write of the WiredTiger database in `home` is about to happen: waits the fault's write_delay
/// and, with probability fail_writes, throws storage_error(EIO) "<what()> in '<home>':
/// input/output error (injected)". Nothing happens when no fault is set or `home` is not under
/// the fault's directory. `what` is called only to build the error text.
void inject_write_fault(const std::string& home, const std::function<std::string()>& what);

}  // namespace tidemark::persistence::detail
