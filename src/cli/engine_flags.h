// The engine's command-line flags, written once: `run`, `serve` and `bench reuse` register the
// groups they take from this one table, so a flag means the same, with the same default and the
// same checks, in every command (docs/design.md §10). Every default shown and applied is the
// EngineOptions the table is made with — EngineOptions' own unless a command starts from others
// (serve: blend and two sessions; bench reuse: a 4096-token context and a larger cache), and
// those are stated where the command makes its table.
#pragma once

#include <CLI/CLI.hpp>

#include "reprise/engine.h"

namespace reprise::cli {

// Groups of flags, or'ed together in EngineFlags::Register.
enum EngineFlagGroup : unsigned {
  kModelFlags = 1u << 0,        // -m/--model, -c/--context, -t/--threads
  kSessionFlags = 1u << 1,      // --sessions, --no-batch-decode
  kReuseMethodFlag = 1u << 2,   // --reuse
  kBlendFlags = 1u << 3,        // --ratio, --adaptive, --adaptive-stable, --guard, --selection
  kInt8Flags = 1u << 4,         // --int8, --outlier-fraction
  kStaticShapesFlag = 1u << 5,  // --static-shapes
  kOutOfOrderFlags = 1u << 6,   // --out-of-order, --ooo-window
  kStoreFlags = 1u << 7,        // --store [FOLDER], --store-dir, --pool-mb, --disk-mb,
                                // --admit-after, --codec
  kNamespaceFlag = 1u << 8,     // --namespace
  kExperimentalFlags = 1u << 9, // ReuseTuning and the graphs' capacities: ablations, studies
  kRemoteFlags = 1u << 10,      // --remote, --remote-timeout-ms, --remote-ttl-s
};
// What a command that runs an engine on requests takes (run, serve).
inline constexpr unsigned kRequestEngineFlags = kModelFlags | kReuseMethodFlag | kBlendFlags |
                                                kInt8Flags | kStaticShapesFlag |
                                                kOutOfOrderFlags | kStoreFlags | kNamespaceFlag |
                                                kRemoteFlags;

class EngineFlags {
 public:
  // `defaults`: the options before any flag, shown as the flags' defaults.
  explicit EngineFlags(const EngineOptions& defaults = EngineOptions());

  // Adds the flags of `groups` to `app`; they write into options().
  void Register(CLI::App& app, unsigned groups);

  // After parsing: a `--store` given without a folder becomes the default store folder
  // (<cache folder>/store), and calibrations are looked for in the cache folder
  // ($XDG_CACHE_HOME/reprise or ~/.cache/reprise); with --remote, the Redis password comes
  // from $REPRISE_REDIS_PASSWORD when the URL has none (so that it need not appear on a
  // command line). Errors: InvalidArgument (--store DIR and --store-dir both given), NotFound
  // (a bare --store and no cache folder).
  Status Resolve();

  EngineOptions& options() { return options_; }
  const EngineOptions& options() const { return options_; }

 private:
  EngineOptions options_;
  CLI::Option* store_ = nullptr;      // --store [DIR]
  std::string store_folder_;          // its folder, if given one
  CLI::Option* store_dir_ = nullptr;  // --store-dir DIR
};

}  // namespace reprise::cli
