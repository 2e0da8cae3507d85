// How the runtime tunes glibc's heap (docs/architecture.md, "The heap").
#pragma once

#include <cstdint>

namespace tidemark {

/// Tunes glibc's heap for the runtime, process-wide and once: freed batch buffers stay in the
/// heap, and there is one malloc arena per core. `run` (unless `run_options::tune_malloc` is off)
/// and a node do it before they start a thread; a program that starts threads or opens stores
/// before it runs a job (the `tidemark` tool, whose jobs open their stores first) calls it first.
/// With a state memory budget (run_options::storage.memory_budget_bytes) the heap returns freed
/// memory at its top to the kernel past a sixteenth of it; calls may lower that threshold later.
void tune_heap(std::uint64_t memory_budget_bytes = 0);

/// glibc's per-thread cache (tcache) keeps 7 freed chunks of each size up to 1 KB. Elements are
/// made on one worker and freed on another, so past 7 every free and every malloc of a worker
/// goes to a shared arena under its lock (STATS on TAXI spent 28 % of its time in malloc and free
/// and ran at half the rate of a cache of 1,000; docs/architecture.md, "The heap"). The cache's
/// size is read when the program starts (GLIBC_TUNABLES), mallopt cannot change it: called first
/// in main, this re-executes the program (`argv`, same process id) with
/// glibc.malloc.tcache_count=1000 added to GLIBC_TUNABLES, and returns at once when the variable
/// names a tcache_count already (the user's choice, or the re-executed program). If the program
/// cannot be re-executed it runs on with glibc's default. The `tidemark` tool, `tidemark-node`
/// and the benchmarks call it; a program embedding the runtime may call it or set the variable.
void tune_thread_cache(char** argv);

}  // namespace tidemark
