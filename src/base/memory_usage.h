// Resident memory of this process, for benchmarks and debug logs.
#pragma once

namespace reprise {

// Current resident set size in MiB (from /proc/self/statm); 0 when unavailable.
double CurrentRssMb();

// Peak resident set size so far in MiB (getrusage).
double PeakRssMb();

}  // namespace reprise
