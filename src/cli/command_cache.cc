// `reprise cache stats|ls|pin|gc|clear`: looks after a persistent KV store.
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/commands.h"
#include "cli/paths.h"
#include "store/chunk_store.h"

namespace reprise::cli {
namespace {

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
      s->add_option("--store", dir_, "Store folder (default: " + CacheDir() + "/store)");
      s->add_option("--namespace", name_space_, "Only this namespace");
      s->add_flag("--json", json_, "Print JSON");
    }
    pin_->add_option("--chunk", chunk_hex_, "Chunk id (hex); default: the whole namespace");
    pin_->add_flag("--unpin", unpin_, "Unpin instead");
    gc_->add_option("--disk-mb", disk_mb_, "Flash budget to enforce, MiB")->default_val(8192);
    clear_->add_flag("--all", all_, "Clear every namespace");
    return sub;
  }

  int Run() override {
    if (dir_.empty()) dir_ = CacheDir() + "/store";
    store::StoreOptions options;
    options.dir = dir_;
    options.disk_bytes = disk_mb_ << 20;
    options.read_only = stats_->parsed() || ls_->parsed();
    if (options.read_only && !std::filesystem::exists(dir_ + "/catalog.db")) {
      return PrintError("cache", NotFoundError("no store at " + dir_));
    }
    Result<std::unique_ptr<store::ChunkStore>> opened = store::ChunkStore::Open(options);
    if (!opened.ok()) return PrintError("cache", opened.error());
    store::ChunkStore& store = **opened;
    const std::optional<std::string> ns =
        name_space_.empty() ? std::nullopt : std::optional<std::string>(name_space_);
    if (stats_->parsed()) return Stats(store, ns);
    if (ls_->parsed()) return List(store, ns);
    if (pin_->parsed()) {
      if (!ns) return PrintError("cache pin", InvalidArgumentError("--namespace is required"));
      std::optional<kv::ChunkId> chunk;
      if (!chunk_hex_.empty()) chunk = std::stoull(chunk_hex_, nullptr, 16);
      Status s = store.SetPinned(*ns, chunk, !unpin_);
      if (!s.ok()) return PrintError("cache pin", s);
      std::printf("%s %s\n", unpin_ ? "unpinned" : "pinned",
                  chunk ? ("chunk " + chunk_hex_).c_str() : ("namespace " + *ns).c_str());
      return kExitOk;
    }
    if (gc_->parsed()) {
      Result<store::GcReport> r = store.Gc();
      if (!r.ok()) return PrintError("cache gc", r.error());
      std::printf("gc: %lld rows without a good file, %lld orphan files, %lld corrupt, %lld "
                  "evicted over budget, %.1f MiB freed\n",
                  static_cast<long long>(r->rows_missing_file),
                  static_cast<long long>(r->orphan_files), static_cast<long long>(r->corrupt),
                  static_cast<long long>(r->evicted), r->bytes_freed / 1048576.0);
      return kExitOk;
    }
    if (!ns && !all_) {
      return PrintError("cache clear", InvalidArgumentError("give --namespace NS or --all"));
    }
    Status s = store.Clear(ns);
    if (!s.ok()) return PrintError("cache clear", s);
    std::printf("cleared %s\n", ns ? ("namespace " + *ns).c_str() : "the whole store");
    return kExitOk;
  }

 private:
  int Stats(store::ChunkStore& store, const std::optional<std::string>& ns) {
    store::StoreStats s = store.Stats();
    int64_t chunks = s.chunks, bytes = s.bytes_on_disk;
    if (ns) {
      Result<std::vector<store::CatalogRow>> rows = store.List(ns);
      if (!rows.ok()) return PrintError("cache stats", rows.error());
      chunks = static_cast<int64_t>(rows->size());
      bytes = 0;
      for (const auto& r : *rows) bytes += static_cast<int64_t>(r.file_bytes);
    }
    nlohmann::json j;
    j["store"] = dir_;
    if (ns) j["namespace"] = *ns;
    j["chunks"] = chunks;
    j["bytes_on_disk"] = bytes;
    j["bytes_in_pool"] = s.bytes_in_pool;
    j["namespaces"] = s.namespaces;
    j["corrupt_dropped"] = s.corrupt_dropped;
    if (json_) {
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      std::printf("store %s%s\n%lld chunks, %.2f MiB on disk, %lld namespaces, %.2f MiB in "
                  "memory, %lld corrupt dropped\n",
                  dir_.c_str(), ns ? (" namespace " + *ns).c_str() : "",
                  static_cast<long long>(chunks), bytes / 1048576.0,
                  static_cast<long long>(s.namespaces), s.bytes_in_pool / 1048576.0,
                  static_cast<long long>(s.corrupt_dropped));
    }
    return kExitOk;
  }

  int List(store::ChunkStore& store, const std::optional<std::string>& ns) {
    Result<std::vector<store::CatalogRow>> rows = store.List(ns);
    if (!rows.ok()) return PrintError("cache ls", rows.error());
    nlohmann::json list = nlohmann::json::array();
    for (const store::CatalogRow& r : *rows) {
      char id[20], parent[20];
      std::snprintf(id, sizeof(id), "%016llx", static_cast<unsigned long long>(r.chunk_id));
      std::snprintf(parent, sizeof(parent), "%016llx", static_cast<unsigned long long>(r.parent_id));
      if (json_) {
        list.push_back({{"namespace", r.name_space}, {"chunk", id}, {"parent", parent},
                        {"tokens", r.num_tokens}, {"bytes", r.file_bytes}, {"exact", r.exact},
                        {"pinned", r.pinned}, {"codec", std::string(store::KvCodecName(r.codec))},
                        {"accesses", r.access_count}});
      } else {
        std::printf("%-12s %s parent %s %5d tokens %9llu bytes %s%s %s\n", r.name_space.c_str(),
                    id, parent, r.num_tokens, static_cast<unsigned long long>(r.file_bytes),
                    r.exact ? "exact" : "approx", r.pinned ? " pinned" : "",
                    std::string(store::KvCodecName(r.codec)).c_str());
      }
    }
    if (json_) std::printf("%s\n", list.dump(2).c_str());
    return kExitOk;
  }

  CLI::App *stats_ = nullptr, *ls_ = nullptr, *pin_ = nullptr, *gc_ = nullptr, *clear_ = nullptr;
  std::string dir_, name_space_, chunk_hex_;
  bool json_ = false, unpin_ = false, all_ = false;
  int64_t disk_mb_ = 8192;
};

}  // namespace

std::unique_ptr<Command> NewCacheCommand() { return std::make_unique<CacheCommand>(); }

}  // namespace reprise::cli
