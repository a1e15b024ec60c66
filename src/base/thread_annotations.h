// Clang thread-safety annotations (no-ops on other compilers); base/mutex.h has the
// annotated Mutex they name (docs/style.md §6).
#pragma once

#if defined(__clang__)
#define REPRISE_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define REPRISE_THREAD_ANNOTATION_(x)
#endif

#define REPRISE_CAPABILITY(x) REPRISE_THREAD_ANNOTATION_(capability(x))
#define REPRISE_SCOPED_CAPABILITY REPRISE_THREAD_ANNOTATION_(scoped_lockable)
#define REPRISE_GUARDED_BY(x) REPRISE_THREAD_ANNOTATION_(guarded_by(x))
#define REPRISE_PT_GUARDED_BY(x) REPRISE_THREAD_ANNOTATION_(pt_guarded_by(x))
#define REPRISE_ACQUIRE(...) REPRISE_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
#define REPRISE_RELEASE(...) REPRISE_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))
#define REPRISE_ASSERT_CAPABILITY(x) REPRISE_THREAD_ANNOTATION_(assert_capability(x))
#define REPRISE_REQUIRES(...) REPRISE_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#define REPRISE_EXCLUDES(...) REPRISE_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
#define REPRISE_NO_THREAD_SAFETY_ANALYSIS REPRISE_THREAD_ANNOTATION_(no_thread_safety_analysis)
