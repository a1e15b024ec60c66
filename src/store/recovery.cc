#include "store/recovery.h"

#include <unordered_set>
#include <vector>

#include "store/kv_file.h"

namespace reprise::store {
namespace {

bool EndsWith(const std::string& name, std::string_view suffix) {
  return name.size() >= suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Result<RecoveryReport> RecoverStore(FileSystem& fs, Catalog& catalog, const std::string& dir) {
  RecoveryReport report;
  REPRISE_ASSIGN_OR_RETURN(const std::vector<std::string> names, fs.ListDir(dir));
  const std::unordered_set<std::string> present(names.begin(), names.end());
  REPRISE_ASSIGN_OR_RETURN(const std::vector<CatalogRow> rows, catalog.ListRows(std::nullopt));

  // Rows first: a row without its intact file is removed before any file is, so that no
  // surviving row ever names a removed file.
  std::vector<int64_t> bad_rows;
  std::vector<std::string> bad_files;
  std::unordered_set<std::string> referenced;
  std::unordered_set<std::string> wrong_size;
  for (const CatalogRow& row : rows) {
    ++report.num_rows_checked;
    if (present.count(row.file_name) == 0) {
      ++report.num_rows_missing_file;
      bad_rows.push_back(row.row_id);
      continue;
    }
    Result<uint64_t> size = fs.FileSize(dir + "/" + row.file_name);
    if (!size.ok() && size.status().code() != StatusCode::kNotFound) return size.status();
    if (!size.ok() || *size != row.file_bytes) {
      ++report.num_rows_size_mismatch;
      bad_rows.push_back(row.row_id);
      if (size.ok()) {
        bad_files.push_back(row.file_name);
        wrong_size.insert(row.file_name);
        report.bytes_removed += static_cast<int64_t>(*size);
      }
      continue;
    }
    referenced.insert(row.file_name);
  }
  REPRISE_RETURN_IF_ERROR(catalog.Delete(bad_rows));

  const std::string temp_suffix = std::string(kKvFileSuffix) + std::string(kTempFileSuffix);
  for (const std::string& name : names) {
    const bool is_temp = EndsWith(name, temp_suffix);
    if (!is_temp && !EndsWith(name, kKvFileSuffix)) continue;
    if (!is_temp && referenced.count(name) != 0) continue;
    if (wrong_size.count(name) != 0) continue;  // already listed with its row
    Result<uint64_t> size = fs.FileSize(dir + "/" + name);
    if (size.ok()) report.bytes_removed += static_cast<int64_t>(*size);
    bad_files.push_back(name);
    ++(is_temp ? report.num_temp_files_removed : report.num_orphan_files_removed);
  }
  for (const std::string& name : bad_files) {
    const Status removed = fs.Remove(dir + "/" + name);
    if (!removed.ok() && removed.code() != StatusCode::kNotFound) return removed;
  }
  if (!bad_files.empty()) REPRISE_RETURN_IF_ERROR(fs.SyncDir(dir));
  return report;
}

}  // namespace reprise::store
