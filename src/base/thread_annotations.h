// Clang thread-safety annotations (no-ops on other compilers).
#pragma once

#if defined(__clang__)
#define REPRISE_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define REPRISE_THREAD_ANNOTATION_(x)
#endif

#define REPRISE_GUARDED_BY(x) REPRISE_THREAD_ANNOTATION_(guarded_by(x))
#define REPRISE_PT_GUARDED_BY(x) REPRISE_THREAD_ANNOTATION_(pt_guarded_by(x))
#define REPRISE_REQUIRES(...) REPRISE_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#define REPRISE_EXCLUDES(...) REPRISE_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
