#include "cli/engine_flags.h"

#include <string>
#include <vector>

#include "cli/option_checks.h"
#include "cli/paths.h"

namespace reprise::cli {
namespace {

// An option taking one of an enum's names (reprise/types.h) into `field`; its default is the
// field's value now.
template <typename Enum, size_t N>
CLI::Option* AddNamedOption(CLI::App& app, const std::string& flag, Enum& field,
                            const Enum (&values)[N], const char* (*name_of)(Enum),
                            const std::string& help) {
  std::vector<std::string> names;
  for (const Enum value : values) names.emplace_back(name_of(value));
  return app
      .add_option_function<std::string>(
          flag,
          [&field, &values, name_of](const std::string& name) {
            for (const Enum value : values) {
              if (name == name_of(value)) field = value;
            }
          },
          help)
      ->check(CLI::IsMember(names))
      ->default_str(name_of(field));
}

}  // namespace

EngineFlags::EngineFlags(const EngineOptions& defaults) : options_(defaults) {}

void EngineFlags::Register(CLI::App& app, unsigned groups) {
  EngineOptions& o = options_;
  ReuseTuning& tuning = o.tuning;
  if (groups & kModelFlags) {
    app.add_option("-m,--model", o.model_path, "GGUF model file")->required();
    app.add_option("-c,--context", o.context_tokens,
                   "Context size of each session in tokens (0 = the model's, at most 4096)")
        ->capture_default_str()
        ->check(IntegerIn(0, 1 << 20));
    app.add_option("-t,--threads", o.num_threads, "Threads (0 = all cores)")
        ->capture_default_str()
        ->check(IntegerIn(0, kMaxThreads));
  }
  if (groups & kSessionFlags) {
    app.add_option("--sessions", o.sessions,
                   "Requests generating at once (each holds a KV cache of --context tokens)")
        ->capture_default_str()
        ->check(IntegerIn(1, 256));
    app.add_flag("!--no-batch-decode", o.batch_decode,
                 "Decode each session on its own instead of batching the decode steps of "
                 "concurrent sessions into one graph call");
  }
  if (groups & kReuseMethodFlag) {
    AddNamedOption(app, "--reuse", o.reuse, kReuseMethods, ReuseMethodName,
                   "KV reuse across requests: none, prefix (a cached prefix, exact), full "
                   "(cached chunks at new positions) or blend (full with selective recompute)");
  }
  if (groups & kBlendFlags) {
    app.add_option("--ratio", o.recompute_ratio, "Recompute ratio r for blend")
        ->capture_default_str()
        ->check(FiniteIn(0.0001, 1.0));
    app.add_option("--adaptive", o.recompute_min_deviation,
                   "Adaptive recompute for blend: of the r share, recompute only tokens whose "
                   "relative K deviation at the check layer is at least this (0 = off)")
        ->capture_default_str()
        ->check(FiniteIn(0.0, 1.0));
    app.add_option("--adaptive-stable", o.stable_recompute_min_deviation,
                   "Stable context for blend: when the prompt is a cached one with a block cut "
                   "out (a chat whose window moved), its reused tokens far from the cut keep "
                   "their KV but for a repair call that recomputes those whose relative K "
                   "deviation is at least this (0 = off)")
        ->capture_default_str()
        ->check(FiniteIn(0.0, 1.0));
    app.add_option("--guard", o.quality_guard,
                   "Quality guard for blend: prefill a recompute call in full when its reused "
                   "tokens deviate more than this at the check layer; 0 = off; auto = the "
                   "model's threshold, measured once on a built-in text and kept with the "
                   "calibrations")
        ->default_str(o.quality_guard == kQualityGuardCalibrated ? "auto"
                                                                  : std::to_string(o.quality_guard))
        ->transform(GuardThreshold());
    AddNamedOption(app, "--selection", o.token_selection, kTokenSelections, TokenSelectionName,
                   "Which reused tokens blend recomputes: deviation (whose KV deviates most at "
                   "the check layer), attention (those the prompt's last new tokens attend to "
                   "most there, measured by a probe) or attention-deviation (their product)");
  }
  if (groups & kInt8Flags) {
    AddNamedOption(app, "--int8", o.int8_scheme, kInt8Schemes, Int8SchemeName,
                   "Int8 arithmetic of the layers' matmuls: per-block (a scale per 32 "
                   "activations at run time), per-tensor (an NPU's: one static scale per "
                   "tensor, int32 over the whole row) or shadow (per-tensor, with the outlier "
                   "channels in float); the static ones use `reprise calibrate --activations` "
                   "or measure the model's ranges at load");
    app.add_option("--outlier-fraction", o.outlier_fraction,
                   "--int8 shadow: the share of the layers' input channels computed in float")
        ->capture_default_str()
        ->check(FiniteIn(0.0, 0.5));
  }
  if (groups & kStaticShapesFlag) {
    app.add_flag("--static-shapes", o.static_shapes,
                 "Every graph call computes its full capacity, padding included, as an NPU or "
                 "another ahead-of-time backend must (same output, the static cost)");
  }
  if (groups & kOutOfOrderFlags) {
    app.add_option("--out-of-order", o.out_of_order_groups,
                   "Run a multi-call prefill's (call, shard) subgraphs out of order on this many "
                   "worker groups (the threads split among them); 0 = in order")
        ->capture_default_str()
        ->check(IntegerIn(0, 64));
    app.add_option("--ooo-window", o.out_of_order_window,
                   "--out-of-order: calls in flight, at most")
        ->capture_default_str()
        ->check(IntegerIn(1, 64));
  }
  if (groups & kStoreFlags) {
    store_ = app.add_option("--store", store_folder_,
                            "Keep KV caches on flash across runs and restarts: in FOLDER, or "
                            "without one in the default store folder (<cache folder>/store; "
                            "the cache folder is $XDG_CACHE_HOME/reprise or ~/.cache/reprise)")
                 ->expected(0, 1)
                 ->type_name("[FOLDER]");
    store_dir_ = app.add_option("--store-dir", o.store_dir, "Keep KV caches in this folder")
                     ->type_name("FOLDER")
                     ->check(NonEmptyFolder());
    app.add_option("--pool-mb,--cache-mb", o.cache_mb,
                   "Memory for cached KV, MiB (the store's memory pool; without a store, each "
                   "namespace's cache)")
        ->capture_default_str()
        ->check(BudgetMib());
    app.add_option("--disk-mb", o.store_disk_mb, "Flash budget of the store, MiB")
        ->capture_default_str()
        ->check(BudgetMib());
    app.add_option("--admit-after", o.store_admit_after,
                   "Write a chunk to flash once its text was seen in N prompts (system, "
                   "document, skill and tool segments at once); 1 = every chunk")
        ->capture_default_str()
        ->check(IntegerIn(1, 1000));
    AddNamedOption(app, "--codec", o.store_codec, kKvCodecs, KvCodecName,
                   "Stored KV codec: f16 (exact) or int8 (INT8 after a Hadamard rotation: half "
                   "the bytes, never exact)");
  }
  if (groups & kNamespaceFlag) {
    app.add_option("--namespace", o.name_space,
                   "Namespace of requests that name none (one per app or user; chunks never "
                   "cross namespaces)")
        ->capture_default_str()
        ->check(NewNamespaceName());
  }
  if (groups & kRemoteFlags) {
    app.add_option("--remote", o.store_remote,
                   "Share KV with other servers through this Redis: redis://[user:password@]"
                   "host:port[/db] (needs a store; the password may come from " +
                       std::string(kRedisPasswordVariable) + ")")
        ->type_name("URL");
    app.add_option("--remote-timeout-ms", o.store_remote_timeout_ms,
                   "--remote: each remote operation gives up after this (the request goes on "
                   "with its local tiers)")
        ->capture_default_str()
        ->check(IntegerIn(1, 60000));
    app.add_option("--remote-ttl-s", o.store_remote_ttl_s,
                   "--remote: entries expire after this; 0 = never")
        ->capture_default_str()
        ->check(IntegerIn(0, int64_t{10} * 365 * 24 * 3600));
  }
  if (groups & kExperimentalFlags) {
    app.add_option("--prefill-capacity", o.prefill_capacity,
                   "Lp, tokens of a prefill graph call (0 = calibrated, else the default)")
        ->capture_default_str()
        ->check(IntegerIn(0, 1 << 16));
    app.add_option("--recompute-capacity", o.recompute_capacity,
                   "Ls, rows of a recompute graph call (0 = calibrated, else the default)")
        ->capture_default_str()
        ->check(IntegerIn(0, 1 << 16));
    app.add_option("--check-layer", tuning.check_layer, "Blend's deviation check layer")
        ->capture_default_str()
        ->check(IntegerIn(0, 4096));
    app.add_option("--force-first", tuning.force_first_tokens,
                   "Also recompute the first N tokens of each reused chunk")
        ->capture_default_str()
        ->check(IntegerIn(0, 1 << 20));
    AddNamedOption(app, "--chunking", tuning.chunking, kChunkingModes, ChunkingModeName,
                   "Where segments are cut into chunks: content (at paragraph and sentence ends "
                   "chosen by the text, so a passage is the same chunks wherever it is pasted) "
                   "or fixed (every chunk-length tokens from the segment's start)");
    app.add_option("--stable-context", tuning.stable_context_tokens,
                   "How far past the cut a reused token of stable context keeps its KV "
                   "(--adaptive-stable); nearer ones are selected by the r share")
        ->capture_default_str()
        ->check(IntegerIn(1, 1 << 20));
    app.add_option("--stable-repair", tuning.stable_repair_tokens,
                   "Of the reused tokens of stable context kept far from the cut, how many the "
                   "repair call checks per prompt (most likely to deviate first); 0 = none")
        ->capture_default_str()
        ->check(IntegerIn(0, 1 << 20));
    app.add_option("--probe-tokens", tuning.query_probe_tokens,
                   "Query-aware selection: how many of the prompt's last new tokens the probe "
                   "runs")
        ->capture_default_str()
        ->check(IntegerIn(1, kMaxQueryProbeTokens));
    app.add_flag("--deviation-v", tuning.deviation_includes_v,
                 "Add V's deviation to K's when selecting tokens");
    app.add_flag("--refresh-check-layer", tuning.refresh_check_layer,
                 "Keep the check layer's fresh KV for every token, not only the selected ones");
    AddNamedOption(app, "--scheduler", tuning.scheduler, kScheduleStrategies,
                   ScheduleStrategyName,
                   "How blend's graph calls are chosen: dp (the chunk-merge DP), greedy (fill "
                   "each call in order) or naive (each reused or new run its own calls)");
    app.add_flag("!--no-overlap", tuning.overlap_kv_preparation,
                 "Read and place the reused KV before the first graph call instead of beside "
                 "the graphs (ablation)");
    app.add_flag("!--no-shard-pipeline", tuning.shard_pipeline,
                 "Let a graph call wait for all layers of the reused KV it attends to, instead "
                 "of running each shard once its layers are placed (ablation)");
    app.add_option_function<std::string>(
           "--eviction",
           [&tuning](const std::string& name) { tuning.store_cost_aware_eviction = name == "cost"; },
           "Store eviction: cost (locality x cost) or lru")
        ->check(CLI::IsMember({"cost", "lru"}))
        ->default_str(tuning.store_cost_aware_eviction ? "cost" : "lru");
    app.add_flag("!--no-prefetch", tuning.store_prefetch,
                 "Disable the store's idle-time prefetch");
  }
}

Status EngineFlags::Resolve() {
  const bool store_named = store_ != nullptr && store_->count() > 0;
  const bool store_dir_named = store_dir_ != nullptr && store_dir_->count() > 0;
  if (store_named && store_dir_named) {
    return InvalidArgumentError("give the store's folder once: --store FOLDER or --store-dir");
  }
  if (store_named && !store_folder_.empty()) options_.store_dir = store_folder_;
  Result<std::string> cache_dir = FindCacheDir();
  if (store_named && store_folder_.empty()) {
    if (!cache_dir.ok()) return cache_dir.error();
    options_.store_dir = *cache_dir + "/store";
  }
  // Without a cache folder there are no saved calibrations to look for: "" = do not look.
  if (options_.calibration_dir.empty() && cache_dir.ok()) options_.calibration_dir = *cache_dir;
  if (!options_.store_remote.empty() && options_.store_remote_password.empty()) {
    options_.store_remote_password = RedisPasswordFromEnvironment().value_or("");
  }
  return Status::Ok();
}

}  // namespace reprise::cli
