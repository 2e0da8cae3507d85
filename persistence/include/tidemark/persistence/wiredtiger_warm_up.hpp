// WiredTiger 3.2 calibrates its tick counter the first time a process calls wiredtiger_open: three
// busy loops of 100 M iterations, about 1 s of CPU before the first connection opens. A
// long-lived process (a node) pays it at start instead of in its first deployment.
#pragma once

namespace tidemark::persistence {

/// Runs WiredTiger's once-per-process initialization, touching no file. Thread-safe; later
/// calls return at once.
void warm_up_wiredtiger();

}  // namespace tidemark::persistence
