// <immintrin.h> for the translation units compiled with AVX-512 flags. GCC 12 reports its own
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
