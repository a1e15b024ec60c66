#include "reuse/chunk_merge_scheduler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "base/check.h"

namespace reprise::reuse {
namespace {

// r arrives as a double, and r = 0.3 is not exactly 3/10: 3 / 0.3 may land a hair above 10.
// Values within 1e-9 (relative) of an integer are taken as that integer.
bool NearInteger(double x, double* nearest) {
  *nearest = std::round(x);
  return std::abs(x - *nearest) <= 1e-9 * std::max(1.0, std::abs(x));
}

int64_t FloorTolerant(double x) {
  double nearest = 0;
  return static_cast<int64_t>(NearInteger(x, &nearest) ? nearest : std::floor(x));
}

int64_t CeilTolerant(double x) {
  double nearest = 0;
  return static_cast<int64_t>(NearInteger(x, &nearest) ? nearest : std::ceil(x));
}

const char* CallKindName(CallKind kind) {
  return kind == CallKind::kRecompute ? "recompute" : "prefill";
}

}  // namespace

Result<ChunkMergeScheduler> ChunkMergeScheduler::Create(const ChunkMergeOptions& options) {
  if (options.recompute_capacity < 1 || options.prefill_capacity < 1) {
    return InvalidArgumentError("chunk merge: graph capacities must be at least 1");
  }
  if (!std::isfinite(options.recompute_latency_ms) || options.recompute_latency_ms < 0 ||
      !std::isfinite(options.prefill_latency_ms) || options.prefill_latency_ms < 0) {
    return InvalidArgumentError("chunk merge: graph latencies must be finite and >= 0");
  }
  if (!(options.recompute_ratio > 0 && options.recompute_ratio <= 1)) {
    return InvalidArgumentError("chunk merge: recompute ratio must be in (0, 1]");
  }
  return ChunkMergeScheduler(options);
}

int ChunkMergeScheduler::NewTokenUnits(int num_new) const {
  if (num_new <= 0) return 0;
  const int64_t units = CeilTolerant(num_new / options_.recompute_ratio);
  // r <= 1, so a NEW token never costs less than one unit.
  return static_cast<int>(std::clamp<int64_t>(units, num_new, std::numeric_limits<int>::max()));
}

int ChunkMergeScheduler::MaxNewTokens(int remaining_capacity) const {
  if (remaining_capacity <= 0) return 0;
  // The most tokens whose units fit: floor(r * c), corrected so that it agrees exactly with
  // NewTokenUnits whatever the rounding did.
  int64_t fit = FloorTolerant(options_.recompute_ratio * remaining_capacity);
  fit = std::clamp<int64_t>(fit, 0, remaining_capacity);
  while (fit > 0 && NewTokenUnits(static_cast<int>(fit)) > remaining_capacity) --fit;
  while (fit < remaining_capacity &&
         NewTokenUnits(static_cast<int>(fit) + 1) <= remaining_capacity) {
    ++fit;
  }
  return static_cast<int>(fit);
}

Result<ChunkSchedule> ChunkMergeScheduler::Schedule(std::span<const TokenRun> runs) const {
  ChunkSchedule schedule;
  if (runs.empty()) return schedule;

  // Validate, and collect the non-prefix runs with adjacent runs of one kind merged.
  // Invariant of `work`: consecutive, non-empty, kinds alternate, work[0].begin == prefix_end.
  std::vector<TokenRun> work;
  std::vector<TokenRun> given;  // the non-prefix runs as given, for kNaive
  int prefix_end = runs[0].begin;
  if (prefix_end < 0) return InvalidArgumentError("chunk merge: negative run position");
  int expected_begin = runs[0].begin;
  for (size_t k = 0; k < runs.size(); ++k) {
    const TokenRun& run = runs[k];
    if (run.begin != expected_begin) {
      return InvalidArgumentError("chunk merge: run " + std::to_string(k) +
                                  " does not start where the previous one ended");
    }
    if (run.end <= run.begin) {
      return InvalidArgumentError("chunk merge: run " + std::to_string(k) + " is empty");
    }
    expected_begin = run.end;
    switch (run.kind) {
      case RunKind::kPrefix:
        if (!work.empty()) {
          return InvalidArgumentError("chunk merge: prefix run " + std::to_string(k) +
                                      " follows a non-prefix run");
        }
        prefix_end = run.end;
        break;
      case RunKind::kNonPrefix:
      case RunKind::kNew:
        given.push_back(run);
        if (!work.empty() && work.back().kind == run.kind) {
          work.back().end = run.end;
        } else {
          work.push_back(run);
        }
        break;
      default:
        return InvalidArgumentError("chunk merge: run " + std::to_string(k) + " has no kind");
    }
  }
  if (work.empty()) return schedule;  // everything is prefix-reused

  switch (options_.strategy) {
    case ScheduleStrategy::kDp:
      schedule.calls = DpCalls(work, prefix_end);
      break;
    case ScheduleStrategy::kGreedy:
      schedule.calls = GreedyCalls(work);
      break;
    case ScheduleStrategy::kNaive:
      schedule.calls = NaiveCalls(given);
      break;
  }
  const ChunkMergeOptions& o = options_;
  // Token counts and capacity of each call: its pieces are its intersections with the
  // (merged) runs.
  size_t run_index = 0;
  for (GraphCall& call : schedule.calls) {
    while (work[run_index].end <= call.begin) ++run_index;
    for (size_t j = run_index; j < work.size() && work[j].begin < call.end; ++j) {
      const int piece = std::min(call.end, work[j].end) - std::max(call.begin, work[j].begin);
      if (work[j].kind == RunKind::kNew) {
        call.num_new += piece;
        call.capacity_used += call.kind == CallKind::kRecompute ? NewTokenUnits(piece) : piece;
      } else {
        call.num_nonprefix += piece;
        call.capacity_used += piece;
      }
    }
    REPRISE_CHECK_LE(call.capacity_used,
                     call.kind == CallKind::kRecompute ? o.recompute_capacity : o.prefill_capacity);
    schedule.total_latency_ms +=
        call.kind == CallKind::kRecompute ? o.recompute_latency_ms : o.prefill_latency_ms;
  }
  return schedule;
}

std::vector<GraphCall> ChunkMergeScheduler::DpCalls(const std::vector<TokenRun>& work,
                                                    int prefix_end) const {
  const ChunkMergeOptions& o = options_;
  const int num_tokens = work.back().end - prefix_end;
  // Indexed by the number x of non-prefix tokens processed, i.e. tokens [0, prefix_end + x):
  // least_latency[x] is F of the paper at position prefix_end + x - 1 (0 for x == 0, the
  // prefix region), and the last call of that best schedule is [call_begin[x], x) of kind
  // call_kind[x]. F is non-decreasing in x (a schedule for x tokens, cut at x' < x, is a
  // schedule for x' tokens of no greater latency, because any prefix of a valid call is
  // valid), so taking the longest call ending at x of each kind is optimal.
  std::vector<double> least_latency(static_cast<size_t>(num_tokens) + 1, 0.0);
  std::vector<int> call_begin(static_cast<size_t>(num_tokens) + 1, 0);
  std::vector<CallKind> call_kind(static_cast<size_t>(num_tokens) + 1, CallKind::kPrefill);

  // a_s by a sliding window instead of Algorithm 3's scan back over runs. The scan takes, at
  // a NEW stretch with c units left, d = min(floor(r c), available) tokens; for integers d
  // and c, d <= floor(r c) <=> d / r <= c <=> ceil(d / r) <= c, so it simply takes the most
  // tokens whose units fit. Hence a recompute call is valid iff its total units (NONPREFIX
  // tokens plus ceil(d / r) per NEW stretch of d tokens) are <= Ls, whatever their order;
  // and since dropping a call's first token never adds units, the start of the longest valid
  // call ending at `token` never moves backwards. Invariant after each step: the window
  // [window_begin, token] is that call (possibly empty), window_units its units, and
  // work[first_run] the run holding window_begin.
  auto piece_units = [this](const TokenRun& run, int begin, int end) {
    return run.kind == RunKind::kNew ? NewTokenUnits(end - begin) : end - begin;
  };
  int window_begin = prefix_end;
  size_t first_run = 0;
  int64_t window_units = 0;

  for (size_t k = 0; k < work.size(); ++k) {
    const TokenRun& run = work[k];
    for (int token = run.begin; token < run.end; ++token) {
      // Extend the window by `token`: its last piece, in `run`, grows by one token.
      const int last_piece_begin = std::max(window_begin, run.begin);
      window_units +=
          piece_units(run, last_piece_begin, token + 1) - piece_units(run, last_piece_begin, token);
      // Shrink from the front until the units fit (an empty window has none).
      while (window_units > o.recompute_capacity) {
        const TokenRun& front = work[first_run];
        const int front_end = std::min(front.end, token + 1);
        window_units -= piece_units(front, window_begin, front_end) -
                        piece_units(front, window_begin + 1, front_end);
        if (++window_begin == front.end) ++first_run;
      }
      REPRISE_DCHECK(window_begin <= token + 1 && window_units >= 0);
      const int recompute_length = token + 1 - window_begin;

      const int x = token + 1 - prefix_end;
      // a_p: prefill takes any tokens, up to Lp, back to the prefix region.
      const int prefill_length = std::min(o.prefill_capacity, x);
      least_latency[x] = least_latency[x - prefill_length] + o.prefill_latency_ms;
      call_begin[x] = x - prefill_length;
      call_kind[x] = CallKind::kPrefill;
      if (recompute_length > 0) {  // 0 when even `token` alone does not fit
        const double via_recompute = least_latency[x - recompute_length] + o.recompute_latency_ms;
        if (via_recompute < least_latency[x]) {  // ties go to prefill, which is exact
          least_latency[x] = via_recompute;
          call_begin[x] = x - recompute_length;
          call_kind[x] = CallKind::kRecompute;
        }
      }
    }
  }

  // Walk the decisions back from the end, then restore token order.
  std::vector<GraphCall> calls;
  for (int x = num_tokens; x > 0; x = call_begin[x]) {
    GraphCall call;
    call.kind = call_kind[x];
    call.begin = prefix_end + call_begin[x];
    call.end = prefix_end + x;
    calls.push_back(call);
  }
  std::reverse(calls.begin(), calls.end());
  return calls;
}

std::vector<GraphCall> ChunkMergeScheduler::GreedyCalls(const std::vector<TokenRun>& work) const {
  const ChunkMergeOptions& o = options_;
  std::vector<GraphCall> calls;
  int used = 0;  // units (recompute) or tokens (prefill) of calls.back()
  const auto open = [&](CallKind kind, int begin) {
    calls.push_back(GraphCall{kind, begin, begin});
    used = 0;
  };
  for (const TokenRun& run : work) {
    for (int t = run.begin; t < run.end;) {
      const int left = run.end - t;
      int take = 0;
      if (run.kind == RunKind::kNonPrefix) {
        if (calls.empty() || calls.back().kind != CallKind::kRecompute ||
            used >= o.recompute_capacity) {
          open(CallKind::kRecompute, t);
        }
        take = std::min(left, o.recompute_capacity - used);
        used += take;
      } else {
        // A NEW stretch rides along in the open recompute call as far as the ratio lets it
        // (taken whole here: a stretch's units are counted once), the rest is prefilled.
        if (!calls.empty() && calls.back().kind == CallKind::kRecompute) {
          take = std::min(left, MaxNewTokens(o.recompute_capacity - used));
          used += NewTokenUnits(take);
        }
        if (take == 0) {
          if (calls.empty() || calls.back().kind != CallKind::kPrefill ||
              used >= o.prefill_capacity) {
            open(CallKind::kPrefill, t);
          }
          take = std::min(left, o.prefill_capacity - used);
          used += take;
        }
      }
      t += take;
      calls.back().end = t;
      // A recompute call that took part of a NEW stretch is closed: the rest of the stretch
      // goes to a prefill call, and units of one stretch are counted once.
      if (run.kind == RunKind::kNew && calls.back().kind == CallKind::kRecompute && t < run.end) {
        used = o.recompute_capacity;
      }
    }
  }
  return calls;
}

std::vector<GraphCall> ChunkMergeScheduler::NaiveCalls(const std::vector<TokenRun>& given) const {
  std::vector<GraphCall> calls;
  for (const TokenRun& run : given) {
    const bool reused = run.kind == RunKind::kNonPrefix;
    const CallKind kind = reused ? CallKind::kRecompute : CallKind::kPrefill;
    const int capacity = reused ? options_.recompute_capacity : options_.prefill_capacity;
    for (int t = run.begin; t < run.end; t += capacity) {
      calls.push_back(GraphCall{kind, t, std::min(run.end, t + capacity)});
    }
  }
  return calls;
}

std::string ChunkSchedule::ToString() const {
  char line[160];
  std::snprintf(line, sizeof(line), "chunk schedule: %zu graph calls, %.3f ms\n", calls.size(),
                total_latency_ms);
  std::string text = line;
  for (const GraphCall& call : calls) {
    std::snprintf(line, sizeof(line),
                  "  %-9s [%d, %d) tokens=%d nonprefix=%d new=%d capacity_used=%d\n",
                  CallKindName(call.kind), call.begin, call.end, call.end - call.begin,
                  call.num_nonprefix, call.num_new, call.capacity_used);
    text += line;
  }
  return text;
}

}  // namespace reprise::reuse
