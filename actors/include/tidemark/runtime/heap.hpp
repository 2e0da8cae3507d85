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

}  // namespace tidemark
