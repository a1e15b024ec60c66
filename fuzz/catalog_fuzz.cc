// libFuzzer target for the store's catalog recovery: the input is written as `catalog.db`
// into an empty store folder and a ChunkStore is opened on it. Whatever the bytes (a valid
// catalog from make_fuzz_seeds, mutated), Open must succeed or fail with a Status — never
// crash, hang or leak — and an opened store must answer Stats(), List() and Namespaces().
//
// Slow per input (a SQLite database is opened, checked and recovered each time); it is meant
// to be correct, not fast. Uses only ChunkStore's public API.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "base/file_util.h"
#include "base/logging.h"
#include "store/catalog.h"
#include "store/chunk_store.h"

namespace {

constexpr uint64_t kFingerprint = 0x5EED5EED5EED5EEDull;  // the seeds' fingerprint

// One folder per fuzzing process, in /dev/shm when there is one: a RAM file system makes the
// many fsyncs of each input (SQLite, atomic writes) free. Removed at exit; the path is never
// destroyed, so that the exit handler can still read it.
const std::string& WorkDir() {
  static const std::string* dir = [] {
    std::error_code ec;
    const std::filesystem::path parent = std::filesystem::is_directory("/dev/shm", ec)
                                             ? std::filesystem::path("/dev/shm")
                                             : std::filesystem::temp_directory_path();
    auto* path = new std::string((parent / "reprise-catalog-fuzz-XXXXXX").string());
    if (::mkdtemp(path->data()) == nullptr) std::abort();
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(WorkDir(), ignored);
    });
    return path;
  }();
  return *dir;
}

void EmptyDir(const std::string& dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::filesystem::remove_all(entry.path(), ec);
  }
}

// Writes the input as the only file of the store folder.
void WriteCatalog(const uint8_t* data, size_t size) {
  const std::string& dir = WorkDir();
  EmptyDir(dir);
  const std::string path = dir + "/" + std::string(reprise::store::kCatalogFileName);
  if (!reprise::WriteFileAtomically(path,
                                    std::string_view(reinterpret_cast<const char*>(data), size))
           .ok()) {
    std::abort();  // the harness itself failed
  }
}

}  // namespace

// Library warnings (e.g. a dropped special token id) would flood the output, once per input.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  reprise::SetLogLevel(reprise::LogLevel::kSilent);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  reprise::store::StoreOptions options;
  options.dir = WorkDir();
  options.pool_bytes = 1 << 20;
  options.disk_bytes = 1 << 22;
  options.model_fingerprint = kFingerprint;
  options.prefetch = false;
  WriteCatalog(data, size);
  {
    auto store = reprise::store::ChunkStore::Open(options);
    if (store.ok()) {
      (void)(*store)->Stats();
      (void)(*store)->List(std::nullopt);
      auto names = (*store)->Namespaces();
      if (names.ok()) {
        for (const std::string& ns : *names) (void)(*store)->List(ns);
      }
    }
  }
  // Read-only opening takes another path through the catalog (no recovery writes).
  WriteCatalog(data, size);
  options.read_only = true;
  auto reader = reprise::store::ChunkStore::Open(options);
  if (reader.ok()) {
    (void)(*reader)->Stats();
    (void)(*reader)->List(std::nullopt);
  }
  return 0;
}
