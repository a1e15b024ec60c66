// <immintrin.h> for the SIMD kernels: every kernel header and translation unit includes it
// through this file, so it is always the first inclusion whatever the include order. GCC 12
// reports its own
// AVX-512 intrinsics (which start from an undefined register on purpose) as reading an
// uninitialized value when they are inlined (GCC bug 105593, fixed in GCC 13); the warning
// points into the header, so it is silenced there only.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
