// Range checks for the numeric options of the command line (CLI11 validators).
//
// CLI11's own Range lets NaN through (every comparison with NaN is false) and says nothing
// about infinities; these validators reject both with a message that CLI11 prefixes with the
// option's name ("--temp: must be a finite number ..."). A validator that fails makes the
// parse fail, so the program exits with kExitUsage before any work starts.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace reprise::cli {

// The most worker threads an option accepts.
inline constexpr int kMaxThreads = 1024;

// A finite number in [min, max].
CLI::Validator FiniteIn(double min, double max);

// A finite number in (min, max]: the lower bound itself is rejected (e.g. top-p in (0, 1]).
CLI::Validator FiniteAbove(double min, double max);

// The quality guard's threshold: "auto" (the model's calibrated threshold; becomes -1, the
// engine's kGuardCalibrated) or a finite number in [0, 1e9] (0 = off).
CLI::Validator GuardThreshold();

// An integer in [min, max], with a message that names the bounds.
CLI::Validator IntegerIn(int64_t min, int64_t max);

// A memory or flash budget in MiB: an integer in [1, engine::kMaxBudgetMib] (16 TiB).
CLI::Validator BudgetMib();

// A chunk id as `cache ls` prints it (ParseChunkId in cli/store_names.h).
CLI::Validator ChunkIdText();

// A namespace name for new chunks (CheckNamespaceName in cli/store_names.h).
CLI::Validator NewNamespaceName();

// A folder given by name (--store-dir, --store): not empty. An empty name would otherwise
// mean "no store" or "the default folder", silently.
CLI::Validator NonEmptyFolder();

// A namespace name to look up: only non-empty. Old stores may hold names that new chunks may
// not use; they must stay listable and clearable.
CLI::Validator ExistingNamespaceName();

}  // namespace reprise::cli
