// Happens-before edges that ThreadSanitizer cannot see on its own, because they are made by
// atomics inside libraries Debian builds without TSan (CAF's mailboxes and reference counts,
// ZeroMQ's queues). Without TSan these compile to nothing.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define TIDEMARK_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TIDEMARK_TSAN 1
#endif
#endif

#ifdef TIDEMARK_TSAN
extern "C" void __tsan_acquire(void* addr);  // NOLINT(bugprone-reserved-identifier): TSan's API
extern "C" void __tsan_release(void* addr);  // NOLINT(bugprone-reserved-identifier)
#endif

namespace tidemark::detail {

/// Everything this thread did so far happens before a later tsan_acquire(`sync`) on any thread.
inline void tsan_release([[maybe_unused]] const void* sync) {
#ifdef TIDEMARK_TSAN
  __tsan_release(const_cast<void*>(sync));
#endif
}

/// Everything done before earlier tsan_release(`sync`) calls happens before what this thread does next.
inline void tsan_acquire([[maybe_unused]] const void* sync) {
#ifdef TIDEMARK_TSAN
  __tsan_acquire(const_cast<void*>(sync));
#endif
}

}  // namespace tidemark::detail
