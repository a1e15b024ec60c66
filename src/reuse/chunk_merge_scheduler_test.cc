#include "reuse/chunk_merge_scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <vector>

#include "base/random.h"

namespace reprise::reuse {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// r as an exact fraction, so the brute force below computes floor(r c) and ceil(d / r) in
// integers, independently of the scheduler's floating-point handling.
struct Fraction {
  int num;
  int den;
  double value() const { return static_cast<double>(num) / den; }
};

struct Problem {
  std::vector<TokenRun> runs;
  int recompute_capacity = 0;
  int prefill_capacity = 0;
  double recompute_latency_ms = 0;
  double prefill_latency_ms = 0;
  Fraction ratio{1, 4};

  ChunkMergeOptions options() const {
    return {.recompute_capacity = recompute_capacity,
            .recompute_latency_ms = recompute_latency_ms,
            .prefill_capacity = prefill_capacity,
            .prefill_latency_ms = prefill_latency_ms,
            .recompute_ratio = ratio.value()};
  }
};

ChunkSchedule MustSchedule(const ChunkMergeOptions& options, std::span<const TokenRun> runs) {
  auto scheduler = ChunkMergeScheduler::Create(options);
  EXPECT_TRUE(scheduler.ok()) << scheduler.error().ToString();
  auto schedule = scheduler->Schedule(runs);
  EXPECT_TRUE(schedule.ok()) << schedule.error().ToString();
  return schedule.ok() ? *schedule : ChunkSchedule{};
}

// The brute force's own view of the prompt: one kind per token.
std::vector<RunKind> TokenKinds(const std::vector<TokenRun>& runs) {
  std::vector<RunKind> kinds;
  for (const TokenRun& run : runs) kinds.insert(kinds.end(), run.end - run.begin, run.kind);
  return kinds;
}

// Whether tokens [begin, end) form one valid call of `kind`, straight from the definition:
// prefill takes up to Lp non-prefix tokens; recompute scans the call's tokens backwards in
// maximal stretches of one kind with c = Ls units: a NONPREFIX stretch of d tokens needs
// d <= c and uses d units; a NEW stretch needs d <= floor(r c) and uses ceil(d / r) units.
bool IsValidCall(const Problem& problem, const std::vector<RunKind>& kinds, CallKind kind,
                 int begin, int end) {
  for (int t = begin; t < end; ++t) {
    if (kinds[t] == RunKind::kPrefix) return false;
  }
  if (kind == CallKind::kPrefill) return end - begin <= problem.prefill_capacity;
  int capacity = problem.recompute_capacity;
  for (int stretch_end = end; stretch_end > begin;) {
    const RunKind stretch_kind = kinds[stretch_end - 1];
    int stretch_begin = stretch_end - 1;
    while (stretch_begin > begin && kinds[stretch_begin - 1] == stretch_kind) {
      --stretch_begin;
    }
    const int d = stretch_end - stretch_begin;
    if (stretch_kind == RunKind::kNonPrefix) {
      if (d > capacity) return false;
      capacity -= d;
    } else {
      if (d * problem.ratio.den > capacity * problem.ratio.num) return false;  // d > floor(rc)
      capacity -= (d * problem.ratio.den + problem.ratio.num - 1) / problem.ratio.num;
    }
    stretch_end = stretch_begin;
  }
  return true;
}

double CallLatency(const Problem& problem, CallKind kind) {
  return kind == CallKind::kRecompute ? problem.recompute_latency_ms : problem.prefill_latency_ms;
}

// The least latency of a call covering [begin, end), or infinity when no kind is valid.
double BestCallLatency(const Problem& problem, const std::vector<RunKind>& kinds, int begin,
                       int end) {
  double best = kInfinity;
  for (CallKind kind : {CallKind::kRecompute, CallKind::kPrefill}) {
    if (IsValidCall(problem, kinds, kind, begin, end)) {
      best = std::min(best, CallLatency(problem, kind));
    }
  }
  return best;
}

// Enumerates every partition of tokens [begin, n) into consecutive valid calls (each call
// taking the cheaper of its valid kinds) and returns the least total latency. Exponential.
double EnumeratePartitions(const Problem& problem, const std::vector<RunKind>& kinds, int begin) {
  const int n = static_cast<int>(kinds.size());
  if (begin == n) return 0;
  const int longest = std::max(problem.recompute_capacity, problem.prefill_capacity);
  double best = kInfinity;
  for (int end = begin + 1; end <= n && end - begin <= longest; ++end) {
    const double call = BestCallLatency(problem, kinds, begin, end);
    if (call == kInfinity) continue;
    best = std::min(best, call + EnumeratePartitions(problem, kinds, end));
  }
  return best;
}

// The same minimum as a shortest path over every (begin, end) call: polynomial, for prompts
// too long to enumerate.
double ShortestPathOverAllCalls(const Problem& problem, const std::vector<RunKind>& kinds,
                                int first) {
  const int n = static_cast<int>(kinds.size());
  std::vector<double> best(static_cast<size_t>(n) + 1, kInfinity);
  best[first] = 0;
  for (int end = first + 1; end <= n; ++end) {
    for (int begin = first; begin < end; ++begin) {
      best[end] = std::min(best[end], best[begin] + BestCallLatency(problem, kinds, begin, end));
    }
  }
  return best[n];
}

// Algorithms 1-3 of the paper literally (with r as an exact fraction): for each token, scan
// back over the (merged) runs taking NONPREFIX tokens while capacity lasts and at most
// floor(r c) tokens of a NEW run; O(n * runs scanned). Returns the least latency.
double LiteralAlgorithmLatency(const Problem& problem) {
  std::vector<TokenRun> runs;  // non-prefix runs, adjacent runs of one kind merged
  for (const TokenRun& run : problem.runs) {
    if (run.kind == RunKind::kPrefix) continue;
    if (!runs.empty() && runs.back().kind == run.kind) {
      runs.back().end = run.end;
    } else {
      runs.push_back(run);
    }
  }
  if (runs.empty()) return 0;
  const int first = runs.front().begin;
  std::vector<double> latency(static_cast<size_t>(runs.back().end - first) + 1, 0.0);
  for (size_t k = 0; k < runs.size(); ++k) {
    for (int i = runs[k].begin; i < runs[k].end; ++i) {
      int capacity = problem.recompute_capacity;
      int length = 0;
      int x = i;
      for (size_t j = k + 1; j-- > 0 && capacity > 0;) {
        const int available = x - runs[j].begin + 1;
        int taken = 0;
        if (runs[j].kind == RunKind::kNew) {
          taken = std::min(capacity * problem.ratio.num / problem.ratio.den, available);
          if (taken == 0) break;
          capacity -= (taken * problem.ratio.den + problem.ratio.num - 1) / problem.ratio.num;
        } else {
          taken = std::min(capacity, available);
          capacity -= taken;
        }
        length += taken;
        if (taken < available) break;
        x = runs[j].begin - 1;
      }
      const int end = i + 1 - first;
      const int prefill = std::min(problem.prefill_capacity, end);
      double best = latency[end - prefill] + problem.prefill_latency_ms;
      if (length > 0) {
        best = std::min(best, latency[end - length] + problem.recompute_latency_ms);
      }
      latency[end] = best;
    }
  }
  return latency.back();
}

// The calls cover every non-prefix token once, in order; each is valid for its kind, with
// the right counts; their latencies add up to the total.
void ExpectWellFormed(const Problem& problem, const ChunkSchedule& schedule) {
  const std::vector<RunKind> kinds = TokenKinds(problem.runs);
  int next = 0;
  while (next < static_cast<int>(kinds.size()) && kinds[next] == RunKind::kPrefix) {
    ++next;
  }
  double total = 0;
  for (const GraphCall& call : schedule.calls) {
    ASSERT_EQ(call.begin, next);
    ASSERT_GT(call.end, call.begin);
    EXPECT_TRUE(IsValidCall(problem, kinds, call.kind, call.begin, call.end));
    int num_new = 0;
    for (int t = call.begin; t < call.end; ++t) {
      num_new += kinds[t] == RunKind::kNew;
    }
    EXPECT_EQ(call.num_new, num_new);
    EXPECT_EQ(call.num_nonprefix, call.end - call.begin - num_new);
    EXPECT_LE(call.capacity_used, call.kind == CallKind::kRecompute ? problem.recompute_capacity
                                                                    : problem.prefill_capacity);
    total += CallLatency(problem, call.kind);
    next = call.end;
  }
  EXPECT_EQ(next, static_cast<int>(kinds.size()));
  EXPECT_DOUBLE_EQ(total, schedule.total_latency_ms);
}

Problem RandomProblem(Random& random, int max_runs) {
  static constexpr Fraction kRatios[] = {{1, 4}, {1, 2}, {3, 4},  {1, 1},  {3, 10},
                                         {1, 3}, {2, 3}, {7, 10}, {1, 10}, {3, 5}};
  // Multiples of 1/4, so that sums of latencies are exact in double.
  static constexpr double kLatencies[] = {0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0};
  Problem problem;
  problem.recompute_capacity = 2 + static_cast<int>(random.NextBelow(7));
  problem.prefill_capacity = 2 + static_cast<int>(random.NextBelow(7));
  problem.recompute_latency_ms = kLatencies[random.NextBelow(std::size(kLatencies))];
  problem.prefill_latency_ms = kLatencies[random.NextBelow(std::size(kLatencies))];
  problem.ratio = kRatios[random.NextBelow(std::size(kRatios))];
  int position = 0;
  if (random.NextBelow(2) == 0) {
    const int length = 1 + static_cast<int>(random.NextBelow(5));
    problem.runs.push_back({RunKind::kPrefix, 0, length});
    position = length;
  }
  const int num_runs = 1 + static_cast<int>(random.NextBelow(static_cast<uint64_t>(max_runs)));
  for (int k = 0; k < num_runs; ++k) {
    const int length = 1 + static_cast<int>(random.NextBelow(12));
    // Adjacent runs of one kind happen too (two reused chunks in a row).
    const RunKind kind = random.NextBelow(2) == 0 ? RunKind::kNonPrefix : RunKind::kNew;
    problem.runs.push_back({kind, position, position + length});
    position += length;
  }
  return problem;
}

int FirstNonPrefixToken(const Problem& problem) {
  return !problem.runs.empty() && problem.runs[0].kind == RunKind::kPrefix ? problem.runs[0].end
                                                                           : 0;
}

// The DP's latency equals the least over every partition into valid calls.
TEST(ChunkMergeSchedulerTest, MatchesPartitionEnumeration) {
  Random random(31337);
  int num_checked = 0;
  for (int trial = 0; trial < 6000 && num_checked < 2500; ++trial) {
    const Problem problem = RandomProblem(random, 4);
    const std::vector<RunKind> kinds = TokenKinds(problem.runs);
    const int first = FirstNonPrefixToken(problem);
    if (static_cast<int>(kinds.size()) - first > 14) continue;  // keep the enumeration small
    ++num_checked;
    const ChunkSchedule schedule = MustSchedule(problem.options(), problem.runs);
    ExpectWellFormed(problem, schedule);
    const double brute_force = EnumeratePartitions(problem, kinds, first);
    ASSERT_DOUBLE_EQ(schedule.total_latency_ms, brute_force) << schedule.ToString();
  }
  EXPECT_GE(num_checked, 2000);
}

// Longer prompts (up to ~100 tokens, more runs) against the shortest path over all calls.
TEST(ChunkMergeSchedulerTest, MatchesShortestPathOverAllCalls) {
  Random random(4242);
  for (int trial = 0; trial < 400; ++trial) {
    const Problem problem = RandomProblem(random, 8);
    const std::vector<RunKind> kinds = TokenKinds(problem.runs);
    const ChunkSchedule schedule = MustSchedule(problem.options(), problem.runs);
    ExpectWellFormed(problem, schedule);
    ASSERT_DOUBLE_EQ(schedule.total_latency_ms,
                     ShortestPathOverAllCalls(problem, kinds, FirstNonPrefixToken(problem)))
        << schedule.ToString();
  }
}

// Long prompts with realistic capacities against the paper's algorithm run literally.
TEST(ChunkMergeSchedulerTest, MatchesLiteralAlgorithmOnLongPrompts) {
  Random random(777);
  static constexpr Fraction kRatios[] = {{1, 4}, {3, 10}, {1, 3}, {1, 2}, {1, 1}};
  for (int trial = 0; trial < 60; ++trial) {
    Problem problem;
    problem.recompute_capacity = 8 << random.NextBelow(7);  // 8 .. 512
    problem.prefill_capacity = 8 << random.NextBelow(7);
    problem.recompute_latency_ms = 0.25 * static_cast<double>(1 + random.NextBelow(400));
    problem.prefill_latency_ms = 0.25 * static_cast<double>(1 + random.NextBelow(400));
    problem.ratio = kRatios[random.NextBelow(std::size(kRatios))];
    const int max_run = 1 + static_cast<int>(random.NextBelow(300));
    int position = static_cast<int>(random.NextBelow(500));
    if (position > 0) problem.runs.push_back({RunKind::kPrefix, 0, position});
    while (position < 3000) {
      const int length = 1 + static_cast<int>(random.NextBelow(static_cast<uint64_t>(max_run)));
      const RunKind kind = random.NextBelow(2) == 0 ? RunKind::kNonPrefix : RunKind::kNew;
      problem.runs.push_back({kind, position, position + length});
      position += length;
    }
    const ChunkSchedule schedule = MustSchedule(problem.options(), problem.runs);
    ExpectWellFormed(problem, schedule);
    ASSERT_DOUBLE_EQ(schedule.total_latency_ms, LiteralAlgorithmLatency(problem))
        << "trial " << trial;
  }
}

// The ablation's baselines make valid schedules under the same rules, and never beat the DP.
TEST(ChunkMergeSchedulerTest, GreedyAndNaiveAreValidAndNeverBeatTheDp) {
  Random random(2718);
  int greedy_worse = 0, naive_worse = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    const Problem problem = RandomProblem(random, 8);
    const ChunkSchedule dp = MustSchedule(problem.options(), problem.runs);
    for (ScheduleStrategy strategy : {ScheduleStrategy::kGreedy, ScheduleStrategy::kNaive}) {
      ChunkMergeOptions options = problem.options();
      options.strategy = strategy;
      const ChunkSchedule schedule = MustSchedule(options, problem.runs);
      SCOPED_TRACE(std::string(ScheduleStrategyName(strategy)) + "\n" + schedule.ToString());
      ExpectWellFormed(problem, schedule);
      ASSERT_GE(schedule.total_latency_ms, dp.total_latency_ms);
      (strategy == ScheduleStrategy::kGreedy ? greedy_worse : naive_worse) +=
          schedule.total_latency_ms > dp.total_latency_ms;
    }
  }
  // The DP is not trivially equal to them.
  EXPECT_GT(greedy_worse, 100);
  EXPECT_GT(naive_worse, greedy_worse);
}

TEST(ChunkMergeSchedulerTest, StrategiesOnOneDocumentPrompt) {
  // Two reused documents (given as two runs), 8 new tokens between them, capacities 64:
  // naive gives each run its calls; greedy fills a recompute call with the first document,
  // takes 6 of the new tokens into it (24 units left: floor(0.25 * 24) = 6), prefills the
  // other 2 and opens a recompute call for the second document; the DP recomputes the first
  // document and prefills the new tokens together with the second (48 tokens <= Lp).
  const std::vector<TokenRun> runs = {{RunKind::kPrefix, 0, 10},
                                      {RunKind::kNonPrefix, 10, 50},
                                      {RunKind::kNew, 50, 58},
                                      {RunKind::kNonPrefix, 58, 78},
                                      {RunKind::kNonPrefix, 78, 98}};
  ChunkMergeOptions options = {.recompute_capacity = 64,
                               .recompute_latency_ms = 1,
                               .prefill_capacity = 64,
                               .prefill_latency_ms = 1,
                               .recompute_ratio = 0.25};
  const ChunkSchedule dp = MustSchedule(options, runs);
  ASSERT_EQ(dp.calls.size(), 2u) << dp.ToString();
  EXPECT_EQ(dp.total_latency_ms, 2);
  options.strategy = ScheduleStrategy::kGreedy;
  const ChunkSchedule greedy = MustSchedule(options, runs);
  ASSERT_EQ(greedy.calls.size(), 3u) << greedy.ToString();
  EXPECT_EQ(greedy.calls[0].kind, CallKind::kRecompute);
  EXPECT_EQ(greedy.calls[0].end, 56);
  EXPECT_EQ(greedy.calls[0].num_new, 6);
  EXPECT_EQ(greedy.calls[1].kind, CallKind::kPrefill);
  EXPECT_EQ(greedy.calls[1].end, 58);
  EXPECT_EQ(greedy.calls[2].kind, CallKind::kRecompute);
  EXPECT_EQ(greedy.calls[2].end, 98);
  options.strategy = ScheduleStrategy::kNaive;
  const ChunkSchedule naive = MustSchedule(options, runs);
  ASSERT_EQ(naive.calls.size(), 4u) << naive.ToString();
  EXPECT_EQ(naive.calls[2].begin, 58);
  EXPECT_EQ(naive.calls[2].end, 78);
  EXPECT_EQ(naive.calls[3].kind, CallKind::kRecompute);
  EXPECT_EQ(naive.total_latency_ms, 4);
}

TEST(ChunkMergeSchedulerTest, StrategyNames) {
  for (ScheduleStrategy s :
       {ScheduleStrategy::kDp, ScheduleStrategy::kGreedy, ScheduleStrategy::kNaive}) {
    auto parsed = ParseScheduleStrategy(ScheduleStrategyName(s));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, s);
  }
  EXPECT_FALSE(ParseScheduleStrategy("optimal").ok());
}

TEST(ChunkMergeSchedulerTest, MergesNewTokensIntoRecompute) {
  // 6 reused tokens then 1 new one. Scanning back from the new token: floor(0.25 * 12) = 3
  // new tokens fit, the one uses ceil(1 / 0.25) = 4 units, 8 remain for the 6 reused tokens.
  const std::vector<TokenRun> runs = {
      {RunKind::kPrefix, 0, 10}, {RunKind::kNonPrefix, 10, 16}, {RunKind::kNew, 16, 17}};
  const ChunkSchedule schedule = MustSchedule({.recompute_capacity = 12,
                                               .recompute_latency_ms = 2,
                                               .prefill_capacity = 16,
                                               .prefill_latency_ms = 3,
                                               .recompute_ratio = 0.25},
                                              runs);
  ASSERT_EQ(schedule.calls.size(), 1u);
  const GraphCall& call = schedule.calls[0];
  EXPECT_EQ(call.kind, CallKind::kRecompute);
  EXPECT_EQ(call.begin, 10);
  EXPECT_EQ(call.end, 17);
  EXPECT_EQ(call.num_nonprefix, 6);
  EXPECT_EQ(call.num_new, 1);
  EXPECT_EQ(call.capacity_used, 10);
  EXPECT_EQ(schedule.total_latency_ms, 2);
  EXPECT_NE(schedule.ToString().find("recompute [10, 17) tokens=7 nonprefix=6 new=1"),
            std::string::npos)
      << schedule.ToString();
}

TEST(ChunkMergeSchedulerTest, NewTokensBeyondTheRatioGoToPrefill) {
  // The reversed order: scanning back, 6 reused tokens leave 6 units, so floor(0.25 * 6) = 1
  // of the 2 new tokens fits (using 4 units); token 0 would need a call of its own.
  const std::vector<TokenRun> runs = {{RunKind::kNew, 0, 2}, {RunKind::kNonPrefix, 2, 8}};
  const ChunkSchedule schedule = MustSchedule({.recompute_capacity = 12,
                                               .recompute_latency_ms = 2,
                                               .prefill_capacity = 16,
                                               .prefill_latency_ms = 3,
                                               .recompute_ratio = 0.25},
                                              runs);
  // One prefill call for all 8 tokens (3 ms) beats recompute [1, 8) + a call for token 0.
  ASSERT_EQ(schedule.calls.size(), 1u);
  EXPECT_EQ(schedule.calls[0].kind, CallKind::kPrefill);
  EXPECT_EQ(schedule.total_latency_ms, 3);
}

TEST(ChunkMergeSchedulerTest, TiesPreferPrefill) {
  const std::vector<TokenRun> runs = {{RunKind::kNonPrefix, 0, 3}};
  const ChunkSchedule schedule = MustSchedule({.recompute_capacity = 4,
                                               .recompute_latency_ms = 1,
                                               .prefill_capacity = 4,
                                               .prefill_latency_ms = 1,
                                               .recompute_ratio = 0.5},
                                              runs);
  ASSERT_EQ(schedule.calls.size(), 1u);
  EXPECT_EQ(schedule.calls[0].kind, CallKind::kPrefill);
}

TEST(ChunkMergeSchedulerTest, EdgeCases) {
  const ChunkMergeOptions options = {.recompute_capacity = 4,
                                     .recompute_latency_ms = 1,
                                     .prefill_capacity = 4,
                                     .prefill_latency_ms = 2,
                                     .recompute_ratio = 0.5};
  // Nothing to schedule.
  EXPECT_TRUE(MustSchedule(options, {}).calls.empty());
  const std::vector<TokenRun> all_prefix = {{RunKind::kPrefix, 0, 5}, {RunKind::kPrefix, 5, 9}};
  const ChunkSchedule prefix_only = MustSchedule(options, all_prefix);
  EXPECT_TRUE(prefix_only.calls.empty());
  EXPECT_EQ(prefix_only.total_latency_ms, 0);
  // No prefix, and runs that start past 0. Recompute is slow here, so 9 new tokens take 3
  // prefill calls of up to 4.
  const std::vector<TokenRun> offset = {{RunKind::kNew, 100, 109}};
  ChunkMergeOptions slow_recompute = options;
  slow_recompute.recompute_latency_ms = 3;
  const ChunkSchedule new_only = MustSchedule(slow_recompute, offset);
  ASSERT_EQ(new_only.calls.size(), 3u);
  EXPECT_EQ(new_only.calls.front().begin, 100);
  EXPECT_EQ(new_only.calls.back().end, 109);
  EXPECT_EQ(new_only.total_latency_ms, 6);
  // Adjacent runs of one kind behave as one run.
  const std::vector<TokenRun> split = {
      {RunKind::kNew, 0, 2}, {RunKind::kNew, 2, 4}, {RunKind::kNonPrefix, 4, 6}};
  const std::vector<TokenRun> merged = {{RunKind::kNew, 0, 4}, {RunKind::kNonPrefix, 4, 6}};
  EXPECT_EQ(MustSchedule(options, split).ToString(), MustSchedule(options, merged).ToString());
}

TEST(ChunkMergeSchedulerTest, RejectsMalformedRuns) {
  auto scheduler = ChunkMergeScheduler::Create({.recompute_capacity = 4,
                                                .recompute_latency_ms = 1,
                                                .prefill_capacity = 4,
                                                .prefill_latency_ms = 2,
                                                .recompute_ratio = 0.5});
  ASSERT_TRUE(scheduler.ok());
  const std::vector<std::vector<TokenRun>> malformed = {
      {{RunKind::kNew, 0, 0}},                               // empty run
      {{RunKind::kNew, 0, 2}, {RunKind::kNonPrefix, 2, 2}},  // empty run
      {{RunKind::kNew, 0, 2}, {RunKind::kNonPrefix, 3, 5}},  // gap
      {{RunKind::kNew, 0, 2}, {RunKind::kNonPrefix, 1, 5}},  // overlap
      {{RunKind::kNew, 0, 2}, {RunKind::kPrefix, 2, 5}},     // prefix after non-prefix
      {{RunKind::kNonPrefix, -3, 2}},                        // negative position
      {{static_cast<RunKind>(9), 0, 2}},                     // no such kind
  };
  for (const auto& runs : malformed) {
    auto schedule = scheduler->Schedule(runs);
    ASSERT_FALSE(schedule.ok());
    EXPECT_EQ(schedule.error().code(), StatusCode::kInvalidArgument);
  }
}

TEST(ChunkMergeSchedulerTest, RejectsBadOptions) {
  const ChunkMergeOptions good = {.recompute_capacity = 4,
                                  .recompute_latency_ms = 1,
                                  .prefill_capacity = 4,
                                  .prefill_latency_ms = 2,
                                  .recompute_ratio = 0.5};
  EXPECT_TRUE(ChunkMergeScheduler::Create(good).ok());
  ChunkMergeOptions bad = good;
  bad.recompute_capacity = 0;
  EXPECT_FALSE(ChunkMergeScheduler::Create(bad).ok());
  bad = good;
  bad.prefill_capacity = -1;
  EXPECT_FALSE(ChunkMergeScheduler::Create(bad).ok());
  bad = good;
  bad.prefill_latency_ms = -1;
  EXPECT_FALSE(ChunkMergeScheduler::Create(bad).ok());
  bad = good;
  bad.recompute_latency_ms = kInfinity;
  EXPECT_FALSE(ChunkMergeScheduler::Create(bad).ok());
  for (double ratio : {0.0, -0.5, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    bad = good;
    bad.recompute_ratio = ratio;
    EXPECT_FALSE(ChunkMergeScheduler::Create(bad).ok()) << ratio;
  }
}

TEST(ChunkMergeSchedulerTest, RatioArithmeticIsExactForDecimalRatios) {
  auto scheduler = [](double ratio) {
    return *ChunkMergeScheduler::Create({.recompute_capacity = 100,
                                         .recompute_latency_ms = 1,
                                         .prefill_capacity = 100,
                                         .prefill_latency_ms = 1,
                                         .recompute_ratio = ratio});
  };
  EXPECT_EQ(scheduler(0.3).MaxNewTokens(10), 3);
  EXPECT_EQ(scheduler(0.3).NewTokenUnits(3), 10);
  EXPECT_EQ(scheduler(0.7).NewTokenUnits(7), 10);
  EXPECT_EQ(scheduler(0.7).MaxNewTokens(10), 7);
  EXPECT_EQ(scheduler(1.0 / 3).NewTokenUnits(1), 3);
  EXPECT_EQ(scheduler(1.0 / 3).MaxNewTokens(3), 1);
  EXPECT_EQ(scheduler(0.1).MaxNewTokens(9), 0);
  EXPECT_EQ(scheduler(0.1).NewTokenUnits(1), 10);
  EXPECT_EQ(scheduler(1).MaxNewTokens(7), 7);
  EXPECT_EQ(scheduler(0.25).NewTokenUnits(0), 0);
  EXPECT_EQ(scheduler(0.25).MaxNewTokens(0), 0);
}

// 100k-token prompts: realistic runs, and the worst case of alternating 1-token runs.
TEST(ChunkMergeSchedulerTest, LargePromptsScheduleQuickly) {
  const ChunkMergeOptions options = {.recompute_capacity = 512,
                                     .recompute_latency_ms = 60,
                                     .prefill_capacity = 512,
                                     .prefill_latency_ms = 100,
                                     .recompute_ratio = 0.25};
  Random random(8);
  for (bool alternating : {false, true}) {
    std::vector<TokenRun> runs = {{RunKind::kPrefix, 0, 1000}};
    int position = 1000;
    while (position < 100000) {
      const int length = alternating ? 1 : 1 + static_cast<int>(random.NextBelow(600));
      const RunKind kind =
          alternating ? (runs.back().kind == RunKind::kNew ? RunKind::kNonPrefix : RunKind::kNew)
                      : (random.NextBelow(2) ? RunKind::kNew : RunKind::kNonPrefix);
      runs.push_back({kind, position, position + length});
      position += length;
    }
    const auto start = std::chrono::steady_clock::now();
    const ChunkSchedule schedule = MustSchedule(options, runs);
    const double elapsed_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ASSERT_FALSE(schedule.calls.empty());
    EXPECT_EQ(schedule.calls.front().begin, 1000);
    EXPECT_EQ(schedule.calls.back().end, position);
    for (size_t k = 1; k < schedule.calls.size(); ++k) {
      ASSERT_EQ(schedule.calls[k].begin, schedule.calls[k - 1].end);
    }
    std::printf("%d tokens in %zu runs (%s): %zu calls, %.0f ms latency, scheduled in %.2f ms\n",
                position, runs.size(), alternating ? "alternating 1-token runs" : "random runs",
                schedule.calls.size(), schedule.total_latency_ms, elapsed_ms);
  }
}

}  // namespace
}  // namespace reprise::reuse
