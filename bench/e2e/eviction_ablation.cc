// Eviction ablation: replays the real workloads' request traces through a simulated KV store
// under a byte budget, with LRU and with the cost-aware policy of src/store (locality score x
// eviction cost, docs/design.md §6), with and without prefetch, and prints hit rates and a modeled
// TTFT per request: the seed paper's Figure 17 "w/o cost-aware eviction" row, without a model.
//
// The store model mirrors the engine's ReuseSession + ChunkCache. Every segment with a
// source_id is a chunk (its document: the source_id before '#', or before the last ':'); a
// prompt's chunks form a path of the prefix tree (node id = hash of parent node and content).
// A chunk is reused by prefix when its node is stored and exact and every chunk before it
// was; else non-prefix when any node with its content is stored; else computed. After the
// request its nodes not stored yet are stored, exact until the first non-prefix reuse, except
// (by default) a non-exact node whose content is already stored: a second copy that serves no
// request the first cannot (--store_duplicates=1 stores it, as the engine does today).
// Modeled TTFT: prefix reuse from the pool 0, from flash the load (bytes / read bandwidth,
// exposed); non-prefix reuse the selective recompute per token (its load overlaps); computed
// chunks and the question the full compute per token.
//
// Stores: (1) memory only, budget = pool_fraction of the working set (the bytes of every
// distinct content), a victim is lost, so the cost-aware policy uses flash costs (recompute +
// cascade); (2) a pool of that budget over a flash tier of flash_fraction, chunks used from
// flash promoted to the pool, optional prefetch after each request; (3) a budget sweep of (1).
// Belady (evict the content used again last) bounds what any online policy could reach.
//
// A plain program (no Google Benchmark), built with -DREPRISE_BUILD_BENCHMARKS=ON:
//   eviction_ablation [--data=DIR] [--workloads=docqa,chat] [--pool_fraction=0.333]
//                     [--interleave=1] ...
// --interleave=1 replays chat as a user switching between conversations (round-robin):
// in file order one conversation's chunks fit any budget and every policy ties.
// (an unknown flag lists them all). --report=FILE.html also writes the tables as charts on a
// self-contained HTML page (cli/html_report.h).
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "base/check.h"
#include "base/file_util.h"
#include "cli/html_report.h"
#include "store/eviction_policy.h"
#include "store/locality.h"
#include "store/prefetch_policy.h"
#include "workload/named_workload.h"

namespace reprise::bench {
namespace {

using store::ChunkInfo;

// ---- Flags ----------------------------------------------------------------------------

struct Flags {
  std::string data = "/work/shared/data";
  std::string workloads = "docqa,chat";
  std::string report;  // an HTML page of the results; empty = none
  int num_queries = 0;
  int store_duplicates = 0;
  int content_keys = 1;  // pass content hashes to the locality model
  // Interleave the requests of different sessions (chat: conversations) round-robin, as a
  // user who switches between chats; 0 = the workload's order (one conversation after another).
  int interleave = 0;
  double pool_fraction = 1.0 / 3;
  double flash_fraction = 2.0 / 3;
  double bytes_per_token = 114688;   // f16 K+V of Qwen3-0.6B: 28 layers x 8 heads x 128 x 2 x 2
  double compute_ms_per_token = 25;  // ~40 tok/s prefill of a 0.6B model on the 2-core host
  double recompute_ratio = 0.25;
  int num_layers = 28;
  double read_mb_per_s = 1000;
  double interval_s = 30;  // between requests
  // The locality model's defaults.
  double half_life_s = store::LocalityOptions{}.recency_half_life_s;
  double frequency_half_life_s = store::LocalityOptions{}.frequency_half_life_s;
  double frequency_half_saturation = store::LocalityOptions{}.frequency_half_saturation;
  double recency_share = store::LocalityOptions{}.recency_share;
  double weight_spatial = store::LocalityOptions{}.weight_spatial;
  double weight_temporal = store::LocalityOptions{}.weight_temporal;
  double weight_semantic = store::LocalityOptions{}.weight_semantic;
  double prefetch_fraction = 0.1;  // of the pool budget, per idle period
  double prefetch_threshold = store::PrefetchOptions{}.threshold;
};

bool ParseFlags(int argc, char** argv, Flags& flags) {
  std::map<std::string, std::string*> strings = {{"data", &flags.data},
                                                 {"workloads", &flags.workloads},
                                                 {"report", &flags.report}};
  std::map<std::string, double*> doubles = {
      {"pool_fraction", &flags.pool_fraction},
      {"flash_fraction", &flags.flash_fraction},
      {"bytes_per_token", &flags.bytes_per_token},
      {"compute_ms_per_token", &flags.compute_ms_per_token},
      {"recompute_ratio", &flags.recompute_ratio},
      {"read_mb_per_s", &flags.read_mb_per_s},
      {"interval_s", &flags.interval_s},
      {"half_life_s", &flags.half_life_s},
      {"frequency_half_life_s", &flags.frequency_half_life_s},
      {"frequency_half_saturation", &flags.frequency_half_saturation},
      {"recency_share", &flags.recency_share},
      {"weight_spatial", &flags.weight_spatial},
      {"weight_temporal", &flags.weight_temporal},
      {"weight_semantic", &flags.weight_semantic},
      {"prefetch_fraction", &flags.prefetch_fraction},
      {"prefetch_threshold", &flags.prefetch_threshold}};
  std::map<std::string, int*> ints = {{"num_queries", &flags.num_queries},
                                      {"num_layers", &flags.num_layers},
                                      {"store_duplicates", &flags.store_duplicates},
                                      {"content_keys", &flags.content_keys},
                                      {"interleave", &flags.interleave}};
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    const size_t eq = arg.find('=');
    if (!arg.starts_with("--") || eq == std::string_view::npos) {
      std::fprintf(stderr, "usage: eviction_ablation [--name=value ...]; flags:");
      for (auto& [name, p] : strings) std::fprintf(stderr, " --%s", name.c_str());
      for (auto& [name, p] : doubles) std::fprintf(stderr, " --%s", name.c_str());
      for (auto& [name, p] : ints) std::fprintf(stderr, " --%s", name.c_str());
      std::fprintf(stderr, "\n");
      return false;
    }
    const std::string name(arg.substr(2, eq - 2));
    const std::string value(arg.substr(eq + 1));
    char* end = nullptr;
    if (auto s = strings.find(name); s != strings.end()) {
      *s->second = value;
    } else if (auto d = doubles.find(name); d != doubles.end()) {
      *d->second = std::strtod(value.c_str(), &end);
      if (end == value.c_str() || *end != '\0') return false;
    } else if (auto n = ints.find(name); n != ints.end()) {
      *n->second = static_cast<int>(std::strtol(value.c_str(), &end, 10));
      if (end == value.c_str() || *end != '\0') return false;
    } else {
      std::fprintf(stderr, "unknown flag --%s (try --help)\n", name.c_str());
      return false;
    }
  }
  return true;
}

// ---- Traces ---------------------------------------------------------------------------

uint64_t Fnv1a(std::string_view text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h == 0 ? 1 : h;
}

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t ChainId(uint64_t parent, uint64_t content) {
  const uint64_t id = Mix(parent ^ Mix(content));
  return id == 0 ? 1 : id;
}

struct TraceChunk {
  uint64_t content = 0;
  uint64_t document = 0;
  int num_tokens = 0;
};

struct TraceRequest {
  std::vector<TraceChunk> chunks;  // the segments with a source_id, in prompt order
  int question_tokens = 0;         // the rest: always computed
};

// next_uses[content]: the indices of the requests that use it, ascending (for Belady).
using NextUses = std::unordered_map<uint64_t, std::vector<int64_t>>;

NextUses IndexUses(const std::vector<TraceRequest>& trace) {
  NextUses uses;
  for (size_t i = 0; i < trace.size(); ++i) {
    for (const TraceChunk& c : trace[i].chunks) {
      std::vector<int64_t>& list = uses[c.content];
      if (list.empty() || list.back() != static_cast<int64_t>(i)) {
        list.push_back(static_cast<int64_t>(i));
      }
    }
  }
  return uses;
}

// "hotpot:<title>#<chunk>" -> "hotpot:<title>"; "locomo:<conv>:<chunk>" -> "locomo:<conv>".
std::string_view DocumentOf(std::string_view source_id) {
  if (size_t hash = source_id.find('#'); hash != std::string_view::npos) {
    return source_id.substr(0, hash);
  }
  if (size_t colon = source_id.rfind(':'); colon != std::string_view::npos) {
    return source_id.substr(0, colon);
  }
  return source_id;
}

int CountWords(std::string_view text) {
  int words = 0;
  bool in_word = false;
  for (char c : text) {
    const bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    if (!space && !in_word) ++words;
    in_word = !space;
  }
  return words;
}

Result<std::vector<TraceRequest>> BuildTrace(std::string_view name, const Flags& flags) {
  workload::WorkloadOptions options;
  options.data_dir = flags.data;
  options.num_queries = flags.num_queries;
  options.count_tokens = [](std::string_view text) { return CountWords(text); };
  REPRISE_ASSIGN_OR_RETURN(workload::Workload built, workload::BuildNamedWorkload(name, options));
  std::vector<const workload::Request*> order;
  for (const workload::Request& request : built.requests) order.push_back(&request);
  if (flags.interleave) {
    // Session = the request id up to its last ':' ("chat:<conversation>:q7").
    std::vector<std::string> sessions;
    std::map<std::string, std::vector<const workload::Request*>> by_session;
    for (const workload::Request* r : order) {
      const std::string session = r->id.substr(0, r->id.rfind(':'));
      if (!by_session.count(session)) sessions.push_back(session);
      by_session[session].push_back(r);
    }
    order.clear();
    for (size_t round = 0; order.size() < built.requests.size(); ++round) {
      for (const std::string& s : sessions) {
        if (round < by_session[s].size()) order.push_back(by_session[s][round]);
      }
    }
  }
  std::vector<TraceRequest> trace;
  for (const workload::Request* request_ptr : order) {
    const workload::Request& request = *request_ptr;
    TraceRequest r;
    for (const workload::Segment& segment : request.segments) {
      const int tokens = CountWords(segment.text);
      if (segment.source_id.empty()) {
        r.question_tokens += tokens;
      } else {
        r.chunks.push_back(
            {Fnv1a(segment.source_id), Fnv1a(DocumentOf(segment.source_id)), tokens});
      }
    }
    trace.push_back(std::move(r));
  }
  return trace;
}

// ---- The simulated store --------------------------------------------------------------

enum class PolicyKind { kLru, kCostAware, kCostAwareSxC, kBelady };

// The offline optimum for hit counts (Belady's MIN): evicts the chunk whose content is used
// again last (or never) — spare copies of a content first (all but one, exact first, then
// the lowest id) — ties by id. Needs the future, so it only bounds (nearly: it ignores
// costs and prefix positions) what an online policy could reach.
class BeladyPolicy final : public store::EvictionPolicy {
 public:
  // next_use(id): the index of the next request that uses the node's content;
  // content_of(id): the node's content.
  BeladyPolicy(std::function<int64_t(uint64_t)> next_use,
               std::function<uint64_t(uint64_t)> content_of)
      : next_use_(std::move(next_use)), content_of_(std::move(content_of)) {}
  std::string_view name() const override { return "belady"; }
  void Touch(uint64_t, double) override {}
  void Forget(uint64_t) override {}
  store::VictimSelection SelectVictims(std::span<const ChunkInfo> chunks, int64_t bytes_to_free,
                                       double) const override {
    std::unordered_map<uint64_t, const ChunkInfo*> primary;  // content -> kept copy
    for (const ChunkInfo& c : chunks) {
      auto [it, inserted] = primary.try_emplace(content_of_(c.id), &c);
      if (!inserted &&
          std::make_tuple(!c.exact, c.id) < std::make_tuple(!it->second->exact, it->second->id)) {
        it->second = &c;
      }
    }
    std::vector<std::pair<int64_t, uint64_t>> order;  // (-next use, id)
    std::unordered_map<uint64_t, int64_t> bytes;
    for (const ChunkInfo& c : chunks) {
      if (c.pinned) continue;
      const bool spare = primary.find(content_of_(c.id))->second != &c;
      order.emplace_back(spare ? std::numeric_limits<int64_t>::min() : -next_use_(c.id), c.id);
      bytes[c.id] = c.bytes;
    }
    std::sort(order.begin(), order.end());
    store::VictimSelection selection;
    for (const auto& [neg_next, id] : order) {
      if (selection.bytes_freed >= bytes_to_free) break;
      selection.ids.push_back(id);
      selection.bytes_freed += bytes[id];
    }
    return selection;
  }

 private:
  std::function<int64_t(uint64_t)> next_use_;
  std::function<uint64_t(uint64_t)> content_of_;
};

struct SimConfig {
  PolicyKind policy = PolicyKind::kLru;
  bool two_tier = false;
  bool prefetch = false;
  int64_t pool_budget_bytes = 0;
  int64_t flash_budget_bytes = 0;
};

struct Metrics {
  int64_t chunk_uses = 0, prefix_hits = 0, nonprefix_hits = 0, pool_hits = 0;
  int64_t tokens = 0, hit_tokens = 0;
  int64_t prefetched = 0, prefetch_used = 0;
  std::vector<double> ttft_ms;
};

struct Node {
  ChunkInfo info;
  uint64_t content = 0;
  bool in_flash = false;
  bool prefetched = false;  // in the pool by prefetch, not used since
};

class StoreSim {
 public:
  StoreSim(const SimConfig& config, const Flags& flags, const store::CostModel& costs,
           const store::LocalityOptions& locality, const NextUses* uses)
      : config_(config),
        flags_(flags),
        costs_(costs),
        uses_(uses),
        model_(std::move(store::LocalityModel::Create(locality)).value()) {
    pool_policy_ = MakePolicy(config.two_tier ? store::StoreTier::kPool : store::StoreTier::kFlash);
    flash_policy_ = MakePolicy(store::StoreTier::kFlash);
  }

  void Run(const TraceRequest& request, int64_t index, double now_s, Metrics& metrics) {
    index_ = index;
    double ttft_ms = request.question_tokens * costs_.compute_ms_per_token;
    std::vector<ChunkInfo> used;
    std::vector<uint64_t> new_nodes;
    uint64_t parent = 0;
    bool on_prefix = true;
    bool inexact = false;
    for (const TraceChunk& chunk : request.chunks) {
      const uint64_t id = ChainId(parent, chunk.content);
      auto it = nodes_.find(id);
      ++metrics.chunk_uses;
      metrics.tokens += chunk.num_tokens;
      Node* source = nullptr;
      if (on_prefix && it != nodes_.end() && it->second.info.exact) {
        source = &it->second;
        ++metrics.prefix_hits;
        if (!source->info.in_pool) ttft_ms += source->info.bytes / costs_.read_bytes_per_ms;
      } else {
        on_prefix = false;
        source = FindByContent(chunk.content);
        if (source != nullptr) {
          ++metrics.nonprefix_hits;
          ttft_ms += chunk.num_tokens * costs_.nonprefix_extra_ms_per_token;
          inexact = true;
        } else {
          ttft_ms += chunk.num_tokens * costs_.compute_ms_per_token;
        }
        const bool duplicate = inexact && source != nullptr;
        if (it == nodes_.end() && (!duplicate || flags_.store_duplicates != 0)) {
          Node node;
          node.info.id = id;
          node.info.parent = parent;
          node.info.document = chunk.document;
          if (flags_.content_keys != 0) node.info.content = chunk.content;
          node.info.num_tokens = chunk.num_tokens;
          node.info.bytes = static_cast<int64_t>(chunk.num_tokens * flags_.bytes_per_token);
          node.info.exact = !inexact;
          node.content = chunk.content;
          nodes_.emplace(id, node);
          by_content_[chunk.content].push_back(id);
          new_nodes.push_back(id);
        }
      }
      if (source != nullptr) {
        metrics.hit_tokens += chunk.num_tokens;
        if (source->info.in_pool) ++metrics.pool_hits;
        if (source->prefetched) ++metrics.prefetch_used;
        source->prefetched = false;
        used.push_back(source->info);
      }
      parent = id;
    }
    metrics.ttft_ms.push_back(ttft_ms);

    // After the request: chunks used from flash are in memory now (promoted); new chunks go
    // to the pool and are written back to flash before the next request.
    for (const ChunkInfo& u : used) {
      Node& node = NodeAt(u.id);
      node.info.in_pool = true;
      pool_policy_->Touch(u.id, now_s);
      if (node.in_flash) flash_policy_->Touch(u.id, now_s);
    }
    for (uint64_t id : new_nodes) {
      Node& node = NodeAt(id);
      node.info.in_pool = true;
      pool_policy_->Touch(id, now_s);
      if (config_.two_tier) {
        node.in_flash = true;
        flash_policy_->Touch(id, now_s);
      }
      used.push_back(node.info);
    }
    model_.RecordRequest(used, now_s);
    if (config_.two_tier) EvictFlash(now_s);
    EvictPool(now_s);
    if (config_.prefetch && config_.two_tier) Prefetch(now_s, metrics);
  }

 private:
  std::unique_ptr<store::EvictionPolicy> MakePolicy(store::StoreTier tier) {
    if (config_.policy == PolicyKind::kLru) return std::make_unique<store::LruEvictionPolicy>();
    if (config_.policy == PolicyKind::kBelady) {
      return std::make_unique<BeladyPolicy>([this](uint64_t id) { return NextUse(id); },
                                            [this](uint64_t id) { return NodeAt(id).content; });
    }
    store::CostAwareOptions options;
    options.tier = tier;
    options.costs = costs_;
    options.rank_per_byte = config_.policy == PolicyKind::kCostAware;
    return std::make_unique<store::CostAwareEvictionPolicy>(
        std::move(store::CostAwareEvictionPolicy::Create(&model_, options)).value());
  }

  int64_t NextUse(uint64_t id) {
    auto found = uses_->find(NodeAt(id).content);
    REPRISE_CHECK(found != uses_->end());
    const std::vector<int64_t>& list = found->second;
    auto it = std::upper_bound(list.begin(), list.end(), index_);
    return it == list.end() ? std::numeric_limits<int64_t>::max() : *it;
  }

  Node& NodeAt(uint64_t id) {
    auto it = nodes_.find(id);
    REPRISE_CHECK(it != nodes_.end()) << "unknown node " << id;
    return it->second;
  }

  // A stored node with this content: one in the pool first, then an exact one, then the
  // lowest id.
  Node* FindByContent(uint64_t content) {
    auto it = by_content_.find(content);
    if (it == by_content_.end()) return nullptr;
    Node* best = nullptr;
    const auto key = [](const Node& n) {
      return std::make_tuple(!n.info.in_pool, !n.info.exact, n.info.id);
    };
    for (uint64_t id : it->second) {
      Node& node = NodeAt(id);
      if (best == nullptr || key(node) < key(*best)) best = &node;
    }
    return best;
  }

  std::vector<ChunkInfo> Tier(bool pool) const {
    std::vector<ChunkInfo> chunks;
    for (const auto& [id, node] : nodes_) {
      if (pool ? node.info.in_pool : node.in_flash) chunks.push_back(node.info);
    }
    // Deterministic input order (the policies do not need it; the sums below do).
    std::sort(chunks.begin(), chunks.end(),
              [](const ChunkInfo& a, const ChunkInfo& b) { return a.id < b.id; });
    return chunks;
  }

  static int64_t Bytes(const std::vector<ChunkInfo>& chunks) {
    int64_t total = 0;
    for (const ChunkInfo& c : chunks) total += c.bytes;
    return total;
  }

  void EvictFlash(double now_s) {
    const std::vector<ChunkInfo> chunks = Tier(false);
    const int64_t excess = Bytes(chunks) - config_.flash_budget_bytes;
    for (uint64_t id : flash_policy_->SelectVictims(chunks, excess, now_s).ids) {
      NodeAt(id).in_flash = false;
      flash_policy_->Forget(id);
      DropIfGone(id);
    }
  }

  void EvictPool(double now_s) {
    const std::vector<ChunkInfo> chunks = Tier(true);
    const int64_t excess = Bytes(chunks) - config_.pool_budget_bytes;
    for (uint64_t id : pool_policy_->SelectVictims(chunks, excess, now_s).ids) {
      Node& node = NodeAt(id);
      node.info.in_pool = false;
      node.prefetched = false;
      pool_policy_->Forget(id);
      DropIfGone(id);
    }
  }

  void DropIfGone(uint64_t id) {
    auto it = nodes_.find(id);
    if (it->second.info.in_pool || it->second.in_flash) return;
    std::vector<uint64_t>& same = by_content_[it->second.content];
    std::erase(same, id);
    if (same.empty()) by_content_.erase(it->second.content);
    model_.Forget(id);
    nodes_.erase(it);
  }

  void Prefetch(double now_s, Metrics& metrics) {
    std::vector<ChunkInfo> candidates;
    for (const ChunkInfo& c : Tier(false)) {
      if (!c.in_pool) candidates.push_back(c);
    }
    store::PrefetchOptions options;
    options.threshold = flags_.prefetch_threshold;
    const auto budget = static_cast<int64_t>(flags_.prefetch_fraction * config_.pool_budget_bytes);
    for (uint64_t id : store::SelectPrefetch(candidates, model_, now_s, budget, options).ids) {
      Node& node = NodeAt(id);
      node.info.in_pool = true;
      node.prefetched = true;
      pool_policy_->Touch(id, now_s);
      ++metrics.prefetched;
    }
    EvictPool(now_s);
  }

  SimConfig config_;
  const Flags& flags_;
  store::CostModel costs_;
  const NextUses* uses_;  // not owned
  int64_t index_ = 0;     // of the request being run
  store::LocalityModel model_;
  std::unique_ptr<store::EvictionPolicy> pool_policy_;
  std::unique_ptr<store::EvictionPolicy> flash_policy_;
  std::unordered_map<uint64_t, Node> nodes_;
  std::unordered_map<uint64_t, std::vector<uint64_t>> by_content_;
};

// ---- Report ---------------------------------------------------------------------------

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t i = std::min(values.size() - 1, static_cast<size_t>(p * values.size()));
  return values[i];
}

double Mean(const std::vector<double>& values) {
  if (values.empty()) return 0;
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

Metrics Simulate(const std::vector<TraceRequest>& trace, const SimConfig& config,
                 const Flags& flags, const store::CostModel& costs,
                 const store::LocalityOptions& locality) {
  const NextUses uses = IndexUses(trace);
  StoreSim sim(config, flags, costs, locality, &uses);
  Metrics metrics;
  for (size_t i = 0; i < trace.size(); ++i) {
    sim.Run(trace[i], static_cast<int64_t>(i), static_cast<double>(i) * flags.interval_s, metrics);
  }
  return metrics;
}

void PrintHeader() {
  std::printf("  %-26s %6s %7s %7s %7s %7s %10s %10s %10s %7s %9s\n", "policy", "hit%", "prefix%",
              "nonpfx%", "pool%", "tokhit%", "TTFT mean", "p50", "p90", "vs LRU", "prefetch");
}

void PrintRow(const std::string& label, const Metrics& m, double lru_mean_ms) {
  const double uses = std::max<int64_t>(m.chunk_uses, 1);
  const double mean = Mean(m.ttft_ms);
  char prefetch[32] = "-";
  if (m.prefetched > 0) {
    std::snprintf(prefetch, sizeof(prefetch), "%lld/%lld", static_cast<long long>(m.prefetch_used),
                  static_cast<long long>(m.prefetched));
  }
  std::printf("  %-26s %6.1f %7.1f %7.1f %7.1f %7.1f %10.0f %10.0f %10.0f %7.3f %9s\n",
              label.c_str(), 100.0 * (m.prefix_hits + m.nonprefix_hits) / uses,
              100.0 * m.prefix_hits / uses, 100.0 * m.nonprefix_hits / uses,
              100.0 * m.pool_hits / uses,
              100.0 * static_cast<double>(m.hit_tokens) / std::max<int64_t>(m.tokens, 1), mean,
              Percentile(m.ttft_ms, 0.5), Percentile(m.ttft_ms, 0.9),
              lru_mean_ms > 0 ? mean / lru_mean_ms : 0.0, prefetch);
}

// What one workload's run found, for the HTML report: the rows of tables (1) and (2) and the
// budget sweep (3).
struct WorkloadRecord {
  std::string name;
  std::vector<std::pair<std::string, Metrics>> memory_only, two_tier;
  std::vector<double> sweep_fractions;
  std::vector<std::array<Metrics, 4>> sweep;  // lru, cost-aware, paper S x C, belady
};

double HitPercent(const Metrics& m) {
  return 100.0 * static_cast<double>(m.prefix_hits + m.nonprefix_hits) /
         static_cast<double>(std::max<int64_t>(m.chunk_uses, 1));
}

// The page: per table, the mean modeled TTFT and the chunk hit rate of each policy, one
// series per workload; per workload, the budget sweep.
std::string ReportHtml(const std::vector<WorkloadRecord>& records, const Flags& flags) {
  cli::HtmlReport page("Reprise: eviction ablation (trace-driven, modeled TTFT)");
  page.AddParagraph("Made by: eviction_ablation --workloads=" + flags.workloads +
                    " --pool_fraction=" + std::to_string(flags.pool_fraction) +
                    " --interleave=" + std::to_string(flags.interleave));
  page.AddParagraph(
      "A replay of the real request traces through a simulated KV store; TTFT is modeled from "
      "the cost model (compute, non-prefix recompute, flash reads), not measured.");
  using Rows = std::vector<std::pair<std::string, Metrics>>;
  const auto table_charts = [&](const char* title, Rows WorkloadRecord::*rows) {
    if (records.empty()) return;
    cli::BarChart ttft{std::string(title) + ": mean modeled TTFT", "ms", {}, {}, false, 620, 320};
    cli::BarChart hits{std::string(title) + ": chunk uses reused", "%", {}, {}, false, 620, 320};
    for (const auto& [label, metrics] : records.front().*rows) ttft.categories.push_back(label);
    hits.categories = ttft.categories;
    for (const WorkloadRecord& r : records) {
      cli::BarSeries t{r.name, {}}, h{r.name, {}};
      for (const auto& [label, metrics] : r.*rows) {
        t.values.push_back(Mean(metrics.ttft_ms));
        h.values.push_back(HitPercent(metrics));
      }
      ttft.series.push_back(t);
      hits.series.push_back(h);
    }
    page.AddChart(ttft);
    page.AddChart(hits);
  };
  page.AddHeading("(1) Memory-only store; a victim is lost");
  table_charts("memory-only", &WorkloadRecord::memory_only);
  page.AddHeading("(2) Pool over flash, with and without prefetch");
  table_charts("pool over flash", &WorkloadRecord::two_tier);
  page.AddHeading("(3) Memory-only store, budget sweep");
  static constexpr const char* kPolicies[] = {"lru", "cost-aware", "paper S x C", "belady"};
  for (const WorkloadRecord& r : records) {
    cli::BarChart ttft{r.name + ": mean modeled TTFT by budget (share of the working set)",
                       "ms", {}, {}, false, 620, 320};
    cli::BarChart hits{r.name + ": chunk uses reused by budget (share of the working set)",
                       "%", {}, {}, false, 620, 320};
    for (double fraction : r.sweep_fractions) {
      char label[32];
      std::snprintf(label, sizeof(label), "%.3f", fraction);
      ttft.categories.push_back(label);
    }
    hits.categories = ttft.categories;
    for (size_t p = 0; p < std::size(kPolicies); ++p) {
      cli::BarSeries t{kPolicies[p], {}}, h{kPolicies[p], {}};
      for (const std::array<Metrics, 4>& results : r.sweep) {
        t.values.push_back(Mean(results[p].ttft_ms));
        h.values.push_back(HitPercent(results[p]));
      }
      ttft.series.push_back(t);
      hits.series.push_back(h);
    }
    page.AddChart(ttft);
    page.AddChart(hits);
  }
  return page.Render();
}

int RunWorkload(std::string_view name, const Flags& flags, const store::CostModel& costs,
                const store::LocalityOptions& locality, WorkloadRecord& record) {
  record.name = std::string(name);
  Result<std::vector<TraceRequest>> built = BuildTrace(name, flags);
  if (!built.ok()) {
    std::fprintf(stderr, "workload %.*s: %s\n", static_cast<int>(name.size()), name.data(),
                 built.status().ToString().c_str());
    return 1;
  }
  const std::vector<TraceRequest>& trace = *built;

  // The working set: every distinct content's bytes (what a store that never evicts and keeps
  // one copy per content holds).
  std::unordered_map<uint64_t, int64_t> node_bytes;
  std::unordered_map<uint64_t, int64_t> content_bytes;
  int64_t chunk_uses = 0;
  for (const TraceRequest& r : trace) {
    uint64_t parent = 0;
    for (const TraceChunk& c : r.chunks) {
      parent = ChainId(parent, c.content);
      const auto bytes = static_cast<int64_t>(c.num_tokens * flags.bytes_per_token);
      node_bytes[parent] = bytes;
      content_bytes[c.content] = bytes;
      ++chunk_uses;
    }
  }
  const auto sum = [](const auto& m) {
    int64_t total = 0;
    for (const auto& [k, v] : m) total += v;
    return total;
  };
  const int64_t working_set = sum(content_bytes);
  std::printf(
      "\n== %.*s: %zu requests, %lld chunk uses; %zu distinct contents (%.0f MB) = the "
      "working set; %zu distinct prefix-tree paths (%.0f MB)\n",
      static_cast<int>(name.size()), name.data(), trace.size(), static_cast<long long>(chunk_uses),
      content_bytes.size(), working_set / 1e6, node_bytes.size(), sum(node_bytes) / 1e6);

  const auto pool = static_cast<int64_t>(flags.pool_fraction * working_set);
  const auto flash = static_cast<int64_t>(flags.flash_fraction * working_set);
  const auto run = [&](PolicyKind policy, bool two_tier, bool prefetch, int64_t pool_bytes,
                       int64_t flash_bytes) {
    return Simulate(trace, {policy, two_tier, prefetch, pool_bytes, flash_bytes}, flags, costs,
                    locality);
  };
  Metrics none;  // no reuse: every token computed
  for (const TraceRequest& r : trace) {
    int tokens = r.question_tokens;
    for (const TraceChunk& c : r.chunks) tokens += c.num_tokens;
    none.ttft_ms.push_back(tokens * costs.compute_ms_per_token);
  }
  none.chunk_uses = chunk_uses;
  const Metrics unbounded = run(PolicyKind::kLru, false, false, sum(node_bytes) * 2, 0);

  std::printf(
      "\n  (1) memory-only store, budget %.0f MB (%.2f of the working set); a victim is "
      "lost\n",
      pool / 1e6, flags.pool_fraction);
  PrintHeader();
  const Metrics lru1 = run(PolicyKind::kLru, false, false, pool, 0);
  const double lru1_ms = Mean(lru1.ttft_ms);
  const auto row1 = [&](const std::string& label, const Metrics& m) {
    PrintRow(label, m, lru1_ms);
    record.memory_only.emplace_back(label, m);
  };
  row1("no reuse", none);
  row1("unbounded store", unbounded);
  row1("lru", lru1);
  row1("cost-aware", run(PolicyKind::kCostAware, false, false, pool, 0));
  row1("cost-aware, paper's S x C", run(PolicyKind::kCostAwareSxC, false, false, pool, 0));
  row1("belady (offline bound)", run(PolicyKind::kBelady, false, false, pool, 0));

  std::printf(
      "\n  (2) pool %.0f MB (%.2f) over flash %.0f MB (%.2f); prefetch: up to %.2f of "
      "the pool after each request, threshold %.2f\n",
      pool / 1e6, flags.pool_fraction, flash / 1e6, flags.flash_fraction, flags.prefetch_fraction,
      flags.prefetch_threshold);
  PrintHeader();
  const Metrics lru2 = run(PolicyKind::kLru, true, false, pool, flash);
  const double lru2_ms = Mean(lru2.ttft_ms);
  const auto row2 = [&](const std::string& label, const Metrics& m) {
    PrintRow(label, m, lru2_ms);
    record.two_tier.emplace_back(label, m);
  };
  row2("lru", lru2);
  row2("lru + prefetch", run(PolicyKind::kLru, true, true, pool, flash));
  row2("cost-aware", run(PolicyKind::kCostAware, true, false, pool, flash));
  row2("cost-aware + prefetch", run(PolicyKind::kCostAware, true, true, pool, flash));
  row2("cost-aware S x C + prefetch", run(PolicyKind::kCostAwareSxC, true, true, pool, flash));

  std::printf("\n  (3) memory-only store, budget sweep: chunk hit %% and mean TTFT (ms)\n");
  std::printf("  %8s %14s %14s %14s %14s %9s %9s\n", "budget", "lru", "cost-aware", "paper S x C",
              "belady", "ca/lru", "SxC/lru");
  for (double fraction : {1.0 / 3, 0.2, 0.1, 0.05}) {
    const auto bytes = static_cast<int64_t>(fraction * working_set);
    const std::array<Metrics, 4> results = {run(PolicyKind::kLru, false, false, bytes, 0),
                                            run(PolicyKind::kCostAware, false, false, bytes, 0),
                                            run(PolicyKind::kCostAwareSxC, false, false, bytes, 0),
                                            run(PolicyKind::kBelady, false, false, bytes, 0)};
    record.sweep_fractions.push_back(fraction);
    record.sweep.push_back(results);
    std::printf("  %8.3f", fraction);
    for (const Metrics& m : results) {
      std::printf(" %5.1f%% %7.0f",
                  100.0 * (m.prefix_hits + m.nonprefix_hits) / std::max<int64_t>(m.chunk_uses, 1),
                  Mean(m.ttft_ms));
    }
    const double lru_ms = Mean(results[0].ttft_ms);
    std::printf(" %9.3f %9.3f\n", Mean(results[1].ttft_ms) / lru_ms,
                Mean(results[2].ttft_ms) / lru_ms);
  }
  return 0;
}

int Main(int argc, char** argv) {
  Flags flags;
  if (!ParseFlags(argc, argv, flags)) return 2;
  store::CostModel costs;
  costs.compute_ms_per_token = flags.compute_ms_per_token;
  // Non-prefix reuse: layer 0 in full plus the recompute ratio of the other layers.
  costs.nonprefix_extra_ms_per_token =
      flags.compute_ms_per_token *
      (1.0 / flags.num_layers + flags.recompute_ratio * (flags.num_layers - 1) / flags.num_layers);
  costs.read_bytes_per_ms = flags.read_mb_per_s * 1e6 / 1e3;
  if (Status s = store::ValidateCostModel(costs); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 2;
  }
  store::LocalityOptions locality;
  locality.weight_spatial = flags.weight_spatial;
  locality.weight_temporal = flags.weight_temporal;
  locality.weight_semantic = flags.weight_semantic;
  locality.recency_half_life_s = flags.half_life_s;
  locality.frequency_half_life_s = flags.frequency_half_life_s;
  locality.frequency_half_saturation = flags.frequency_half_saturation;
  locality.recency_share = flags.recency_share;
  if (Status s = store::LocalityModel::Create(locality).status(); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 2;
  }

  std::printf("eviction ablation (trace-driven; tokens = whitespace words)\n");
  std::printf(
      "cost model: compute %.3f ms/token; non-prefix reuse %.3f ms/token (recompute "
      "ratio %.2f of %d layers + layer 0); KV %.0f B/token; flash read %.0f MB/s -> "
      "load %.4f ms/token\n",
      costs.compute_ms_per_token, costs.nonprefix_extra_ms_per_token, flags.recompute_ratio,
      flags.num_layers, flags.bytes_per_token, flags.read_mb_per_s,
      flags.bytes_per_token / costs.read_bytes_per_ms);
  std::printf("store: %s\n", flags.store_duplicates != 0
                                 ? "every new prefix-tree node stored (engine today)"
                                 : "one copy per content unless exact (default)");
  std::printf(
      "locality: ws %.2f wt %.2f wm %.2f, recency share %.2f, half-lives %.0f s "
      "(recency) %.0f s (counts); history per content: %s; a request every %.0f s\n",
      flags.weight_spatial, flags.weight_temporal, flags.weight_semantic, flags.recency_share,
      flags.half_life_s, flags.frequency_half_life_s,
      flags.content_keys != 0 ? "yes" : "no (per node)", flags.interval_s);
  std::printf(
      "columns: hit%% = chunk uses reused (prefix + non-prefix); pool%% = reused from "
      "memory; tokhit%% = tokens reused; TTFT modeled, ms; vs LRU = mean TTFT ratio to "
      "the LRU row of the same store; prefetch = prefetched chunks used later / "
      "prefetched\n");

  if (!flags.report.empty()) {
    if (Status s = cli::CheckReportPath(flags.report); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 2;
    }
  }
  int rc = 0;
  std::vector<WorkloadRecord> records;
  std::string_view list = flags.workloads;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view name = list.substr(0, comma);
    if (!name.empty()) {
      WorkloadRecord record;
      const int workload_rc = RunWorkload(name, flags, costs, locality, record);
      rc |= workload_rc;
      if (workload_rc == 0) records.push_back(std::move(record));
    }
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  if (!flags.report.empty()) {
    if (Status s = WriteFileAtomically(flags.report, ReportHtml(records, flags)); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
    std::fprintf(stderr, "wrote the report %s\n", flags.report.c_str());
  }
  return rc;
}

}  // namespace
}  // namespace reprise::bench

int main(int argc, char** argv) { return reprise::bench::Main(argc, argv); }
