// `reprise cache stats|ls|pin|gc|clear`: looks after a persistent KV store.
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <utility>

#include "cli/command.h"
#include "cli/commands.h"
#include "cli/json_output.h"
#include "cli/option_checks.h"
#include "cli/paths.h"
#include "cli/progress_bar.h"
#include "cli/remote_metrics.h"
#include "cli/store_names.h"
#include "reprise/store_admin.h"

namespace reprise::cli {
namespace {

// As the store names its codecs (`reprise cache ls` has always printed these).
const char* StoredCodecName(KvCodec codec) {
  return codec == KvCodec::kInt8 ? "int8-hadamard" : "f16";
}

class CacheCommand : public Command {
 public:
  CLI::App* Register(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand("cache", "Inspect and maintain a persistent KV store");
    sub->require_subcommand(1);
    stats_ = sub->add_subcommand("stats", "Chunks, bytes, namespaces, corruption counts");
    ls_ = sub->add_subcommand("ls", "List the stored chunks");
    pin_ = sub->add_subcommand("pin", "Pin (or unpin) a chunk or a whole namespace");
    gc_ = sub->add_subcommand("gc", "Remove orphans, verify every file, enforce the budget");
    clear_ = sub->add_subcommand("clear", "Delete the chunks of a namespace, or all");
    for (CLI::App* s : {stats_, ls_, pin_, gc_, clear_}) {
      s->add_option("--store", dir_,
                    "Store folder (default: <cache folder>/store; the cache folder is "
                    "$XDG_CACHE_HOME/reprise or ~/.cache/reprise)")
          ->check(NonEmptyFolder());
      ns_options_.push_back(s->add_option("--namespace", name_space_, "Only this namespace")
                                ->check(ExistingNamespaceName()));
      s->add_flag("--json", json_, "Print JSON");
    }
    stats_->add_option("--server", server_,
                       "Also what this running server's remote tier did (HOST:PORT; its "
                       "/metrics): hits, misses, bad values, bytes");
    pin_->add_option("--chunk", chunk_hex_, "Chunk id (hex); default: the whole namespace")
        ->check(ChunkIdText());
    pin_->add_flag("--unpin", unpin_, "Unpin instead");
    gc_->add_option("--disk-mb", disk_mb_, "Flash budget to enforce, MiB")
        ->default_val(8192)
        ->check(BudgetMib());
    clear_->add_flag("--all", all_, "Clear every namespace");
    return sub;
  }

  int Run() override {
    if (dir_.empty()) {
      Result<std::string> cache_dir = FindCacheDir();
      if (!cache_dir.ok()) return PrintError("cache", cache_dir.error());
      dir_ = *cache_dir + "/store";
    }
    // "--namespace not given" means every namespace; "--namespace ''" was rejected by the
    // parser.
    std::optional<std::string> ns;
    for (const CLI::Option* o : ns_options_) {
      if (o->count() > 0) ns = name_space_;
    }
    StoreAdminOptions options;
    options.dir = dir_;
    options.disk_mb = disk_mb_;
    options.read_only = stats_->parsed() || ls_->parsed();
    Result<std::unique_ptr<StoreAdmin>> opened = StoreAdmin::Open(options);
    if (!opened.ok()) return PrintError("cache", opened.error());
    StoreAdmin& store = **opened;
    // A name that no namespace may have (what `serve --namespace` refuses) is refused too,
    // unless an older version stored chunks under it: those stay listable and clearable.
    if (ns) {
      if (Status valid = CheckNamespaceName(*ns); !valid.ok()) {
        Result<StoreStatus> held = store.Status(ns);
        if (!held.ok() || held->chunks == 0) {
          PrintError("cache", valid.WithContext("--namespace"));
          return kExitUsage;
        }
      }
    }
    if (stats_->parsed()) return Stats(store, ns);
    if (ls_->parsed()) return List(store, ns);
    if (pin_->parsed()) return Pin(store, ns);
    if (gc_->parsed()) return Gc(store);
    if (!ns && !all_) {
      return PrintError("cache clear", InvalidArgumentError("give --namespace NS or --all"));
    }
    Status s = store.Clear(ns);
    if (!s.ok()) return PrintError("cache clear", s);
    std::printf("cleared %s\n", ns ? ("namespace " + EscapeName(*ns)).c_str() : "the whole store");
    return kExitOk;
  }

 private:
  int Stats(StoreAdmin& store, const std::optional<std::string>& ns) {
    Result<StoreStatus> status = store.Status(ns);
    if (!status.ok()) return PrintError("cache stats", status.error());
    const StoreStatus& s = *status;
    const int64_t chunks = s.chunks, bytes = s.bytes_on_disk;
    nlohmann::json j;
    j["store"] = dir_;
    if (ns) j["namespace"] = *ns;
    j["chunks"] = chunks;
    j["bytes_on_disk"] = bytes;
    j["bytes_in_pool"] = s.bytes_in_memory;
    j["namespaces"] = s.namespaces;
    j["corrupt_dropped"] = s.corrupt_dropped;
    j["bad_rows_dropped"] = s.bad_rows_dropped;
    j["catalog_rebuilds"] = s.catalog_rebuilds;
    j["catalog_rebuilt"] = s.catalog_rebuilt;
    if (s.catalog_rebuilt) {
      j["catalog_set_aside"] = s.catalog_set_aside;
      j["rows_restored"] = s.rows_restored;
    }
    j["recovery_skipped"] = s.recovery_skipped;
    j["dir_mode_fixed"] = s.dir_mode_fixed;
    if (!s.catalog_error.empty()) j["catalog_error"] = s.catalog_error;
    std::map<std::string, double> remote;
    if (!server_.empty()) {
      Result<std::string> metrics = FetchMetrics(server_);
      if (!metrics.ok()) return PrintError("cache stats", metrics.error());
      remote = ParseRemoteMetrics(*metrics);
      nlohmann::json r = nlohmann::json::object();
      for (const auto& [name, value] : remote) r[name] = value;
      j["server"] = server_;
      j["remote"] = r;
    }
    const auto sample = [&](const std::string& name) {
      const auto found = remote.find(name);
      return found == remote.end() ? 0.0 : found->second;
    };
    if (json_) {
      std::printf("%s\n", DumpJson(j).c_str());
    } else {
      std::printf(
          "store %s%s\n%lld chunks, %.2f MiB on disk, %lld namespaces, %.2f MiB in "
          "memory, %lld corrupt dropped, %lld bad catalog rows dropped, %lld catalog rebuilds\n",
          EscapeName(dir_).c_str(), ns ? (" namespace " + EscapeName(*ns)).c_str() : "",
          static_cast<long long>(chunks), bytes / 1048576.0, static_cast<long long>(s.namespaces),
          s.bytes_in_memory / 1048576.0, static_cast<long long>(s.corrupt_dropped),
          static_cast<long long>(s.bad_rows_dropped), static_cast<long long>(s.catalog_rebuilds));
      if (s.catalog_rebuilt) {
        std::printf("the damaged catalog was set aside as %s and rebuilt: %lld rows restored\n",
                    EscapeName(s.catalog_set_aside).c_str(),
                    static_cast<long long>(s.rows_restored));
      }
      if (s.recovery_skipped) {
        std::printf("another process has the store open: leftovers were not cleaned up\n");
      }
      if (!server_.empty() && remote.empty()) {
        std::printf("server %s: no remote tier\n", server_.c_str());
      } else if (!server_.empty()) {
        std::printf(
            "server %s remote tier: %.0f hits, %.0f misses, %.0f bad values, %.0f unavailable, "
            "%.0f chunks sent, %.2f MiB read, %.2f MiB written\n",
            server_.c_str(), sample("reprise_remote_lookups_total{result=\"hit\"}"),
            sample("reprise_remote_lookups_total{result=\"miss\"}"),
            sample("reprise_remote_lookups_total{result=\"bad_value\"}"),
            sample("reprise_remote_unavailable_total"),
            sample("reprise_remote_chunks_sent_total"),
            sample("reprise_remote_bytes_total{direction=\"read\"}") / 1048576.0,
            sample("reprise_remote_bytes_total{direction=\"written\"}") / 1048576.0);
      }
    }
    // A catalog that cannot be read is not an empty store: say so and fail.
    if (!s.catalog_error.empty()) {
      return PrintError("cache stats", CorruptError("the catalog of " + dir_ +
                                                    " cannot be read: " + s.catalog_error));
    }
    return kExitOk;
  }

  int List(StoreAdmin& store, const std::optional<std::string>& ns) {
    Result<std::vector<StoredChunk>> chunks = store.List(ns);
    if (!chunks.ok()) return PrintError("cache ls", chunks.error());
    nlohmann::json list = nlohmann::json::array();
    for (const StoredChunk& c : *chunks) {
      const std::string id = FormatChunkId(c.chunk_id), parent = FormatChunkId(c.parent_id);
      if (json_) {
        list.push_back({{"namespace", c.name_space},
                        {"chunk", id},
                        {"parent", parent},
                        {"tokens", c.tokens},
                        {"bytes", c.bytes},
                        {"exact", c.exact},
                        {"made", c.made},
                        {"pinned", c.pinned},
                        {"codec", StoredCodecName(c.codec)},
                        {"accesses", c.accesses}});
      } else {
        std::printf("%-12s %s parent %s %5d tokens %9lld bytes %s%s %s (%s)\n",
                    EscapeName(c.name_space).c_str(), id.c_str(), parent.c_str(), c.tokens,
                    static_cast<long long>(c.bytes), c.exact ? "exact" : "approx",
                    c.pinned ? " pinned" : "", StoredCodecName(c.codec), c.made.c_str());
      }
    }
    if (json_) std::printf("%s\n", DumpJson(list).c_str());
    return kExitOk;
  }

  int Pin(StoreAdmin& store, const std::optional<std::string>& ns) {
    if (!ns) return PrintError("cache pin", InvalidArgumentError("--namespace is required"));
    std::optional<uint64_t> chunk;
    if (!chunk_hex_.empty()) {
      Result<uint64_t> id = ParseChunkId(chunk_hex_);
      if (!id.ok()) return PrintError("cache pin", id.error().WithContext("--chunk"));
      chunk = *id;
    }
    const std::string what =
        chunk ? "chunk " + EscapeName(chunk_hex_) : "namespace " + EscapeName(*ns);
    Status s = store.SetPinned(*ns, chunk, !unpin_);
    if (!s.ok()) {
      // The catalog names ids in decimal; say it the way the user typed it.
      if (s.code() == StatusCode::kNotFound && chunk) {
        s = NotFoundError("no " + what + " in namespace " + EscapeName(*ns));
      }
      return PrintError("cache pin", s);
    }
    std::printf("%s %s\n", unpin_ ? "unpinned" : "pinned", what.c_str());
    return kExitOk;
  }

  int Gc(StoreAdmin& store) {
    ProgressBar progress(ProgressBar::ForStderr(json_));
    const ProgressCallback bar = progress.Callback();
    Result<StoreGcReport> r = store.Gc([&bar](int64_t done, int64_t total) {
      ReportProgress(bar, "verifying chunk files", done, total, "files");
    });
    progress.Finish();
    if (!r.ok()) return PrintError("cache gc", r.error());
    const int64_t dropped_bytes = r->catalog_bytes_dropped;
    const bool evicted_only = r->evicted_bytes >= 0;
    if (json_) {
      nlohmann::json j;
      j["store"] = dir_;
      j["disk_budget_bytes"] = store.disk_budget_bytes();
      j["rows_missing_file"] = r->rows_missing_file;
      j["orphan_files"] = r->orphan_files;
      j["corrupt"] = r->corrupt;
      j["evicted"] = r->evicted;
      j["evicted_bytes"] = nullptr;  // unknown when other rows were dropped too
      if (evicted_only) j["evicted_bytes"] = dropped_bytes;
      j["catalog_bytes_dropped"] = dropped_bytes;
      j["bytes_freed"] = r->bytes_freed;
      std::printf("%s\n", DumpJson(j).c_str());
      return kExitOk;
    }
    std::printf(
        "gc: %lld rows without a good file, %lld orphan files, %lld corrupt, %.1f MiB "
        "freed by repairs\n",
        static_cast<long long>(r->rows_missing_file), static_cast<long long>(r->orphan_files),
        static_cast<long long>(r->corrupt), r->bytes_freed / 1048576.0);
    if (evicted_only) {
      std::printf("gc: evicted %lld chunks (%lld bytes, %.1f MiB) over the %.1f MiB budget\n",
                  static_cast<long long>(r->evicted), static_cast<long long>(dropped_bytes),
                  dropped_bytes / 1048576.0, store.disk_budget_bytes() / 1048576.0);
    } else {
      std::printf(
          "gc: evicted %lld chunks over the %.1f MiB budget; %lld bytes (%.1f MiB) of "
          "chunks left the catalog in all\n",
          static_cast<long long>(r->evicted), store.disk_budget_bytes() / 1048576.0,
          static_cast<long long>(dropped_bytes), dropped_bytes / 1048576.0);
    }
    return kExitOk;
  }

  CLI::App *stats_ = nullptr, *ls_ = nullptr, *pin_ = nullptr, *gc_ = nullptr, *clear_ = nullptr;
  std::vector<CLI::Option*> ns_options_;
  std::string dir_, name_space_, chunk_hex_, server_;
  bool json_ = false, unpin_ = false, all_ = false;
  int64_t disk_mb_ = 8192;
};

}  // namespace

std::unique_ptr<Command> NewCacheCommand() { return std::make_unique<CacheCommand>(); }

}  // namespace reprise::cli
