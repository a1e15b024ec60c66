#include "reuse/reuse_planner.h"

#include <algorithm>

#include "reuse/common_substring.h"

namespace reprise::reuse {
namespace {

bool SameTokens(const kv::ChunkEntry& entry, std::span<const int32_t> tokens) {
  return entry.tokens.size() == tokens.size() &&
         std::equal(tokens.begin(), tokens.end(), entry.tokens.begin());
}

// An entry the planner may use: present, not excluded, its in-memory KV (if any) the size of
// its tokens.
bool Usable(const std::shared_ptr<const kv::ChunkEntry>& entry, const PlannerOptions& options) {
  if (!entry) return false;
  if (entry->kv && entry->kv->num_tokens != static_cast<int>(entry->tokens.size())) return false;
  return std::find(options.excluded.begin(), options.excluded.end(), entry->id) ==
         options.excluded.end();
}

int AddSource(ReusePlan& plan, std::shared_ptr<const kv::ChunkEntry> entry) {
  for (size_t i = 0; i < plan.sources.size(); ++i) {
    if (plan.sources[i]->id == entry->id) return static_cast<int>(i);
  }
  plan.sources.push_back(std::move(entry));
  return static_cast<int>(plan.sources.size() - 1);
}

void Label(ReusePlan& plan, int begin, int count, TokenKind kind, int source, int source_begin) {
  for (int i = 0; i < count; ++i) {
    plan.tokens[static_cast<size_t>(begin + i)] = TokenSource{kind, source, source_begin + i};
  }
}

// Greedily reuses the longest common substrings between the unmatched tokens
// [begin, end) of the prompt and candidate chunks, recursing into what is left on each side.
void MatchSubstrings(std::span<const int32_t> prompt, int begin, int end,
                     std::span<const std::shared_ptr<const kv::ChunkEntry>> candidates,
                     SuffixAutomaton& automaton, const PlannerOptions& options, ReusePlan& plan,
                     int depth) {
  if (end - begin < options.min_match_tokens || depth > 8) return;
  automaton.Build(prompt.subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin)));
  CommonSubstring best;
  int best_candidate = -1;
  for (size_t c = 0; c < candidates.size(); ++c) {
    const CommonSubstring m = automaton.Match(candidates[c]->tokens);
    if (m.length > best.length) {
      best = m;
      best_candidate = static_cast<int>(c);
    }
  }
  if (best_candidate < 0 || best.length < options.min_match_tokens) return;
  // In the automaton's terms the prompt span is `a`, the candidate `b`.
  const int start = begin + best.a_begin;
  const int source = AddSource(plan, candidates[static_cast<size_t>(best_candidate)]);
  Label(plan, start, best.length, TokenKind::kNonPrefix, source, best.b_begin);
  ++plan.num_substring_matches;
  MatchSubstrings(prompt, begin, start, candidates, automaton, options, plan, depth + 1);
  MatchSubstrings(prompt, start + best.length, end, candidates, automaton, options, plan,
                  depth + 1);
}

}  // namespace

std::vector<TokenRun> ReusePlan::Runs() const {
  std::vector<TokenRun> runs;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const RunKind kind = tokens[i].kind == TokenKind::kPrefix      ? RunKind::kPrefix
                         : tokens[i].kind == TokenKind::kNonPrefix ? RunKind::kNonPrefix
                                                                   : RunKind::kNew;
    const bool extends = !runs.empty() && runs.back().kind == kind &&
                         (kind != RunKind::kNonPrefix ||
                          (tokens[i - 1].source == tokens[i].source &&
                           tokens[i - 1].source_token + 1 == tokens[i].source_token));
    if (extends) {
      runs.back().end = static_cast<int>(i) + 1;
    } else {
      runs.push_back(TokenRun{kind, static_cast<int>(i), static_cast<int>(i) + 1});
    }
  }
  return runs;
}

std::string ReusePlan::Summary() const {
  return "prefix " + std::to_string(num_prefix) +
         (num_prefix_inexact > 0 ? " (" + std::to_string(num_prefix_inexact) + " inexact)" : "") +
         " | nonprefix " + std::to_string(num_nonprefix) +
         " (" + std::to_string(num_whole_chunk_matches) + " whole chunks, " +
         std::to_string(num_substring_matches) + " substrings) | new " + std::to_string(num_new);
}

Result<ReusePlan> PlanReuse(std::span<const int32_t> prompt, std::span<const PromptChunk> chunks,
                            kv::ChunkCache& cache, const PlannerOptions& options) {
  int expected_begin = 0;
  for (const PromptChunk& c : chunks) {
    if (c.begin != expected_begin || c.end <= c.begin) {
      return InvalidArgumentError("prompt chunks are not consecutive and non-empty");
    }
    expected_begin = c.end;
  }
  if (expected_begin != static_cast<int>(prompt.size())) {
    return InvalidArgumentError("prompt chunks do not cover the prompt");
  }
  ReusePlan plan;
  plan.tokens.assign(prompt.size(), TokenSource{});
  kv::ChunkId node = kv::kRootChunkId;
  for (const PromptChunk& c : chunks) {
    node = kv::ChainId(node, c.content);
    plan.chunk_ids.push_back(node);
  }

  // 1. The exact prefix.
  size_t first_unmatched_chunk = 0;
  int first_unmatched_token = 0;
  if (options.use_prefix) {
    const auto exact_enough = [&](const kv::ChunkEntry& e) {
      return e.exact || options.use_inexact_prefix;
    };
    kv::ChunkId parent = kv::kRootChunkId;
    for (size_t i = 0; i < chunks.size(); ++i) {
      const PromptChunk& c = chunks[i];
      const auto tokens = prompt.subspan(static_cast<size_t>(c.begin),
                                         static_cast<size_t>(c.end - c.begin));
      std::shared_ptr<const kv::ChunkEntry> entry = cache.Peek(plan.chunk_ids[i]);
      if (Usable(entry, options) && exact_enough(*entry) && entry->parent == parent &&
          SameTokens(*entry, tokens)) {
        if (!entry->exact && plan.first_inexact_prefix_token < 0) {
          plan.first_inexact_prefix_token = c.begin;
        }
        Label(plan, c.begin, c.end - c.begin, TokenKind::kPrefix, AddSource(plan, entry), 0);
        parent = plan.chunk_ids[i];
        first_unmatched_chunk = i + 1;
        first_unmatched_token = c.end;
        continue;
      }
      // The longest common token prefix with a cached child of `parent`.
      int best = 0;
      std::shared_ptr<const kv::ChunkEntry> best_child;
      for (const auto& child : cache.Children(parent)) {
        if (!Usable(child, options) || !exact_enough(*child)) continue;
        const size_t n = std::min(child->tokens.size(), tokens.size());
        size_t k = 0;
        while (k < n && child->tokens[k] == tokens[k]) ++k;
        if (static_cast<int>(k) > best) {
          best = static_cast<int>(k);
          best_child = child;
        }
      }
      if (best > 0) {
        if (!best_child->exact && plan.first_inexact_prefix_token < 0) {
          plan.first_inexact_prefix_token = c.begin;
        }
        Label(plan, c.begin, best, TokenKind::kPrefix, AddSource(plan, best_child), 0);
        first_unmatched_token = c.begin + best;
      }
      first_unmatched_chunk = i;
      break;
    }
  }

  // 2-3. Non-prefix reuse in the rest.
  if (options.use_nonprefix) {
    SuffixAutomaton automaton;
    for (size_t i = first_unmatched_chunk; i < chunks.size(); ++i) {
      const PromptChunk& c = chunks[i];
      const int begin = std::max(c.begin, first_unmatched_token);
      if (begin >= c.end) continue;
      const auto tokens = prompt.subspan(static_cast<size_t>(c.begin),
                                         static_cast<size_t>(c.end - c.begin));
      if (c.end - c.begin < options.min_whole_chunk_tokens) continue;
      // Of the entries with this content, the one cached right after the chunk that now comes
      // before it (its chain continued) holds the KV of the most similar context: a chat
      // turn whose text recurs (the same reply twice) is taken from this conversation's chain.
      std::shared_ptr<const kv::ChunkEntry> same;
      if (begin == c.begin && begin > 0) {
        const TokenSource& before = plan.tokens[static_cast<size_t>(begin - 1)];
        if (before.kind != TokenKind::kNew && before.source >= 0) {
          const kv::ChunkEntry& previous = *plan.sources[static_cast<size_t>(before.source)];
          if (before.source_token + 1 == static_cast<int>(previous.tokens.size())) {
            same = cache.Peek(kv::ChainId(previous.id, c.content));
            if (!Usable(same, options)) same = nullptr;
          }
        }
      }
      if (!same) same = cache.PeekByContent(c.content);
      if (Usable(same, options) && SameTokens(*same, tokens)) {
        Label(plan, begin, c.end - begin, TokenKind::kNonPrefix, AddSource(plan, same),
              begin - c.begin);
        ++plan.num_whole_chunk_matches;
        continue;
      }
      if (!options.use_substrings || c.end - begin < options.min_match_tokens) continue;
      std::vector<std::shared_ptr<const kv::ChunkEntry>> candidates;
      const auto unmatched = prompt.subspan(static_cast<size_t>(begin),
                                            static_cast<size_t>(c.end - begin));
      for (kv::ChunkCandidate& candidate :
           cache.FindCandidates(unmatched, {}, options.max_candidates)) {
        std::shared_ptr<const kv::ChunkEntry> entry = std::move(candidate.entry);
        if (!entry) entry = cache.Peek(candidate.id);
        if (Usable(entry, options)) candidates.push_back(std::move(entry));
      }
      MatchSubstrings(prompt, begin, c.end, candidates, automaton, options, plan, 0);
    }
  }

  if (options.force_last_token_new && !plan.tokens.empty()) {
    plan.tokens.back() = TokenSource{};
  }
  for (size_t i = 0; i < plan.tokens.size(); ++i) {
    const TokenSource& t = plan.tokens[i];
    if (t.kind == TokenKind::kPrefix) ++plan.num_prefix;
    if (t.kind == TokenKind::kPrefix && plan.first_inexact_prefix_token >= 0 &&
        static_cast<int>(i) >= plan.first_inexact_prefix_token) {
      ++plan.num_prefix_inexact;
    }
    if (t.kind == TokenKind::kNonPrefix) ++plan.num_nonprefix;
    if (t.kind == TokenKind::kNew) ++plan.num_new;
  }
  return plan;
}

}  // namespace reprise::reuse
