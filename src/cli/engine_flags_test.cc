#include "cli/engine_flags.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdlib.h>

#include <string>
#include <vector>

#include "cli/paths.h"
#include "support/temp_dir.h"

namespace reprise::cli {
namespace {

constexpr unsigned kEveryGroup = kModelFlags | kSessionFlags | kReuseMethodFlag | kBlendFlags |
                                 kInt8Flags | kStaticShapesFlag | kOutOfOrderFlags | kStoreFlags |
                                 kNamespaceFlag | kExperimentalFlags | kRemoteFlags;

// Parses `args` (after the program name) with every flag of the table registered.
struct Parsed {
  EngineFlags flags;
  CLI::App app;
  Parsed() { flags.Register(app, kEveryGroup); }
  void Parse(std::vector<std::string> args) {
    std::reverse(args.begin(), args.end());  // CLI11 takes them last first
    app.parse(args);
  }
};

// The cache folder a bare --store and the calibrations resolve to: a temporary one.
class EngineFlagsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* old = getenv("XDG_CACHE_HOME");
    if (old != nullptr) old_cache_home_ = old;
    had_cache_home_ = old != nullptr;
    setenv("XDG_CACHE_HOME", home_.path().c_str(), 1);
  }
  void TearDown() override {
    if (had_cache_home_) {
      setenv("XDG_CACHE_HOME", old_cache_home_.c_str(), 1);
    } else {
      unsetenv("XDG_CACHE_HOME");
    }
  }
  std::string cache_dir() const { return home_.path() + "/reprise"; }

  testing_support::TempDir home_;
  std::string old_cache_home_;
  bool had_cache_home_ = false;
};

TEST_F(EngineFlagsTest, WithNoFlagsTheOptionsAreEngineOptionsOwn) {
  Parsed parsed;
  parsed.Parse({"-m", "model.gguf"});
  ASSERT_TRUE(parsed.flags.Resolve().ok());
  EngineOptions expected;
  expected.model_path = "model.gguf";
  expected.calibration_dir = cache_dir();  // the cache folder holds the calibrations
  EXPECT_TRUE(parsed.flags.options() == expected);
  EXPECT_TRUE(parsed.flags.options().store_dir.empty());
}

TEST_F(EngineFlagsTest, ACommandsOwnDefaultsAreWhatItStartsFrom) {
  EngineOptions serve;
  serve.reuse = ReuseMethod::kBlend;
  serve.sessions = 2;
  EngineFlags flags(serve);
  CLI::App app;
  flags.Register(app, kEveryGroup);
  app.parse(std::vector<std::string>{"x.gguf", "-m"});
  ASSERT_TRUE(flags.Resolve().ok());
  EXPECT_EQ(flags.options().reuse, ReuseMethod::kBlend);
  EXPECT_EQ(flags.options().sessions, 2);
  // The help shows what applies (CLI11 prints a default after "=").
  const std::string help = app.help();
  EXPECT_NE(help.find("=blend"), std::string::npos) << help;
}

TEST_F(EngineFlagsTest, TheHelpShowsEngineOptionsDefaults) {
  Parsed parsed;
  const std::string help = parsed.app.help();
  const EngineOptions defaults;
  // A default is followed by the end of the line, or by the help text when the flag is short.
  auto shows = [&help](const std::string& text) {
    return help.find(text + "\n") != std::string::npos ||
           help.find(text + " ") != std::string::npos;
  };
  for (const std::string& shown :
       {std::string("}=") + ReuseMethodName(defaults.reuse),
        std::string("}=") + TokenSelectionName(defaults.token_selection),
        std::string("}=") + Int8SchemeName(defaults.int8_scheme),
        std::string("}=") + KvCodecName(defaults.store_codec),
        std::string("}=") + ChunkingModeName(defaults.tuning.chunking),
        std::string("}=") + ScheduleStrategyName(defaults.tuning.scheduler),
        std::string("]=auto"), "]=" + std::to_string(defaults.cache_mb),
        "]=" + std::to_string(defaults.tuning.stable_context_tokens)}) {
    EXPECT_TRUE(shows(shown)) << shown << " in\n" << help;
  }
}

TEST_F(EngineFlagsTest, EveryFlagSetsItsField) {
  Parsed parsed;
  parsed.Parse({"-m", "m.gguf", "-c", "1024", "-t", "3", "--sessions", "5", "--no-batch-decode",
                "--reuse", "full", "--ratio", "0.5", "--adaptive", "0.01", "--adaptive-stable",
                "0", "--guard", "0.2", "--selection", "deviation", "--int8", "shadow",
                "--outlier-fraction", "0.02", "--static-shapes", "--out-of-order", "2",
                "--ooo-window", "3", "--store-dir", "/tmp/s", "--pool-mb", "64", "--disk-mb",
                "128", "--admit-after", "2", "--codec", "int8", "--namespace", "app",
                "--prefill-capacity", "64", "--recompute-capacity", "96", "--check-layer", "2",
                "--force-first", "4", "--chunking", "fixed", "--stable-context", "64",
                "--stable-repair", "32", "--probe-tokens", "16", "--deviation-v",
                "--refresh-check-layer", "--scheduler", "greedy", "--no-overlap",
                "--no-shard-pipeline", "--eviction", "lru", "--no-prefetch", "--remote",
                "redis://10.0.0.7:6380/2", "--remote-timeout-ms", "120", "--remote-ttl-s",
                "3600"});
  ASSERT_TRUE(parsed.flags.Resolve().ok());
  const EngineOptions& o = parsed.flags.options();
  EXPECT_EQ(o.model_path, "m.gguf");
  EXPECT_EQ(o.context_tokens, 1024);
  EXPECT_EQ(o.num_threads, 3);
  EXPECT_EQ(o.sessions, 5);
  EXPECT_FALSE(o.batch_decode);
  EXPECT_EQ(o.reuse, ReuseMethod::kFull);
  EXPECT_DOUBLE_EQ(o.recompute_ratio, 0.5);
  EXPECT_DOUBLE_EQ(o.recompute_min_deviation, 0.01);
  EXPECT_DOUBLE_EQ(o.stable_recompute_min_deviation, 0.0);
  EXPECT_DOUBLE_EQ(o.quality_guard, 0.2);
  EXPECT_EQ(o.token_selection, TokenSelection::kDeviation);
  EXPECT_EQ(o.int8_scheme, Int8Scheme::kShadow);
  EXPECT_DOUBLE_EQ(o.outlier_fraction, 0.02);
  EXPECT_TRUE(o.static_shapes);
  EXPECT_EQ(o.out_of_order_groups, 2);
  EXPECT_EQ(o.out_of_order_window, 3);
  EXPECT_EQ(o.store_dir, "/tmp/s");
  EXPECT_EQ(o.cache_mb, 64);
  EXPECT_EQ(o.store_disk_mb, 128);
  EXPECT_EQ(o.store_admit_after, 2);
  EXPECT_EQ(o.store_codec, KvCodec::kInt8);
  EXPECT_EQ(o.name_space, "app");
  EXPECT_EQ(o.prefill_capacity, 64);
  EXPECT_EQ(o.recompute_capacity, 96);
  EXPECT_EQ(o.tuning.check_layer, 2);
  EXPECT_EQ(o.tuning.force_first_tokens, 4);
  EXPECT_EQ(o.tuning.chunking, ChunkingMode::kFixed);
  EXPECT_EQ(o.tuning.stable_context_tokens, 64);
  EXPECT_EQ(o.tuning.stable_repair_tokens, 32);
  EXPECT_EQ(o.tuning.query_probe_tokens, 16);
  EXPECT_TRUE(o.tuning.deviation_includes_v);
  EXPECT_TRUE(o.tuning.refresh_check_layer);
  EXPECT_EQ(o.tuning.scheduler, ScheduleStrategy::kGreedy);
  EXPECT_FALSE(o.tuning.overlap_kv_preparation);
  EXPECT_FALSE(o.tuning.shard_pipeline);
  EXPECT_FALSE(o.tuning.store_cost_aware_eviction);
  EXPECT_FALSE(o.tuning.store_prefetch);
  EXPECT_EQ(o.store_remote, "redis://10.0.0.7:6380/2");
  EXPECT_EQ(o.store_remote_timeout_ms, 120);
  EXPECT_EQ(o.store_remote_ttl_s, 3600);
}

TEST_F(EngineFlagsTest, TheRedisPasswordComesFromTheEnvironmentNotTheCommandLine) {
  setenv(kRedisPasswordVariable, "s3cret", 1);
  Parsed with_remote;
  with_remote.Parse({"-m", "m.gguf", "--remote", "redis://127.0.0.1:6379"});
  ASSERT_TRUE(with_remote.flags.Resolve().ok());
  EXPECT_EQ(with_remote.flags.options().store_remote_password, "s3cret");
  Parsed without;  // no remote tier: the password is not taken
  without.Parse({"-m", "m.gguf"});
  ASSERT_TRUE(without.flags.Resolve().ok());
  EXPECT_TRUE(without.flags.options().store_remote_password.empty());
  unsetenv(kRedisPasswordVariable);
}

TEST_F(EngineFlagsTest, GuardAutoIsTheCalibratedThreshold) {
  Parsed parsed;
  parsed.Parse({"-m", "m.gguf", "--guard", "auto"});
  EXPECT_EQ(parsed.flags.options().quality_guard, kQualityGuardCalibrated);
}

TEST_F(EngineFlagsTest, StoreMeansTheSameEverywhere) {
  {  // --store FOLDER
    Parsed parsed;
    parsed.Parse({"-m", "m.gguf", "--store", "/data/kv"});
    ASSERT_TRUE(parsed.flags.Resolve().ok());
    EXPECT_EQ(parsed.flags.options().store_dir, "/data/kv");
  }
  {  // a bare --store: the default folder
    Parsed parsed;
    parsed.Parse({"-m", "m.gguf", "--store"});
    ASSERT_TRUE(parsed.flags.Resolve().ok());
    EXPECT_EQ(parsed.flags.options().store_dir, cache_dir() + "/store");
  }
  {  // --store-dir FOLDER
    Parsed parsed;
    parsed.Parse({"-m", "m.gguf", "--store-dir", "/data/kv"});
    ASSERT_TRUE(parsed.flags.Resolve().ok());
    EXPECT_EQ(parsed.flags.options().store_dir, "/data/kv");
  }
  {  // both: which one is meant is not guessed
    Parsed parsed;
    parsed.Parse({"-m", "m.gguf", "--store", "/a", "--store-dir", "/b"});
    const Status resolved = parsed.flags.Resolve();
    EXPECT_EQ(resolved.code(), StatusCode::kInvalidArgument);
  }
}

TEST_F(EngineFlagsTest, BadValuesAreRefusedByName) {
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--reuse", "sometimes"}, {"--selection", "random"},
        {"--int8", "per-row"}, {"--codec", "zstd"}, {"--chunking", "lines"},
        {"--scheduler", "fifo"}, {"--eviction", "fifo"}, {"--ratio", "0"},
        {"--ratio", "nan"}, {"--pool-mb", "0"}, {"--store-dir", ""}, {"--namespace", ""}}) {
    Parsed parsed;
    std::vector<std::string> args = {"-m", "m.gguf"};
    args.insert(args.end(), bad.begin(), bad.end());
    EXPECT_THROW(parsed.Parse(args), CLI::ParseError) << bad[0] << " " << bad[1];
  }
}

TEST_F(EngineFlagsTest, OnlyTheRegisteredGroupsAreFlags) {
  EngineFlags flags;
  CLI::App app;
  flags.Register(app, kInt8Flags);
  app.parse(std::vector<std::string>{"shadow", "--int8"});
  EXPECT_EQ(flags.options().int8_scheme, Int8Scheme::kShadow);
  EXPECT_THROW(app.parse(std::vector<std::string>{"full", "--reuse"}), CLI::ParseError);
}

}  // namespace
}  // namespace reprise::cli
