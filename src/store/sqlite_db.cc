#include "store/sqlite_db.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <cstdio>
#include <utility>

namespace reprise::store {
namespace {

// The SQL of a statement for an error message: whole (never cut mid-word), with runs of
// whitespace (newlines of multi-line scripts) collapsed to one space.
std::string SqlForMessage(std::string_view sql) {
  std::string out;
  out.reserve(sql.size());
  bool in_space = false;
  for (const char c : sql) {
    const bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    if (space) {
      in_space = true;
      continue;
    }
    if (in_space && !out.empty()) out += ' ';
    in_space = false;
    out += c;
  }
  return out;
}

// A file: URI for `path` (RFC 3986 escaping of what SQLite's URI parser treats specially).
std::string FileUri(const std::string& path, std::string_view query) {
  std::string uri = "file:";
  for (const char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      char escaped[4];
      std::snprintf(escaped, sizeof(escaped), "%%%02X", static_cast<unsigned char>(c));
      uri += escaped;
    } else {
      uri += c;
    }
  }
  uri += '?';
  uri += query;
  return uri;
}

}  // namespace

Status SqliteStatus(int rc, sqlite3* db, std::string_view what) {
  std::string message(what);
  message += ": ";
  message += db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  switch (rc & 0xff) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return CorruptError(std::move(message));
    case SQLITE_FULL:
    case SQLITE_NOMEM:
      return ResourceExhaustedError(std::move(message));
    case SQLITE_READONLY:
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return UnavailableError(std::move(message));
    case SQLITE_CONSTRAINT:
      return InvalidArgumentError(std::move(message));
    default:
      return IoError(std::move(message));
  }
}

SqliteStatement::~SqliteStatement() { sqlite3_finalize(stmt_); }

SqliteStatement::SqliteStatement(SqliteStatement&& other) noexcept
    : stmt_(std::exchange(other.stmt_, nullptr)), db_(std::exchange(other.db_, nullptr)) {}

SqliteStatement& SqliteStatement::operator=(SqliteStatement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    stmt_ = std::exchange(other.stmt_, nullptr);
    db_ = std::exchange(other.db_, nullptr);
  }
  return *this;
}

Status SqliteStatement::BindResult(int rc, int index) {
  if (rc == SQLITE_OK) return Status::Ok();
  return SqliteStatus(rc, db_, "bind parameter " + std::to_string(index));
}

Status SqliteStatement::BindInt64(int index, int64_t value) {
  return BindResult(sqlite3_bind_int64(stmt_, index, value), index);
}

Status SqliteStatement::BindDouble(int index, double value) {
  return BindResult(sqlite3_bind_double(stmt_, index, value), index);
}

Status SqliteStatement::BindText(int index, std::string_view value) {
  return BindResult(
      sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8),
      index);
}

Status SqliteStatement::BindBlob(int index, std::span<const uint8_t> value) {
  // A null pointer would bind NULL; an empty blob must stay a blob.
  static const uint8_t kEmpty = 0;
  const void* data = value.empty() ? &kEmpty : value.data();
  return BindResult(sqlite3_bind_blob64(stmt_, index, data, value.size(), SQLITE_TRANSIENT), index);
}

Status SqliteStatement::BindNull(int index) {
  return BindResult(sqlite3_bind_null(stmt_, index), index);
}

Result<bool> SqliteStatement::Step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  const char* sql = sqlite3_sql(stmt_);
  return SqliteStatus(rc, db_, "step '" + SqlForMessage(sql ? sql : "") + "'");
}

Status SqliteStatement::Run() {
  ScopedReset reset(*this);
  while (true) {
    REPRISE_ASSIGN_OR_RETURN(const bool has_row, Step());
    if (!has_row) return Status::Ok();
  }
}

void SqliteStatement::Reset() {
  if (stmt_ == nullptr) return;
  // sqlite3_reset repeats the error of the last step, which that step already reported.
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

int64_t SqliteStatement::ColumnInt64(int index) const { return sqlite3_column_int64(stmt_, index); }

double SqliteStatement::ColumnDouble(int index) const {
  return sqlite3_column_double(stmt_, index);
}

std::string SqliteStatement::ColumnText(int index) const {
  const unsigned char* text = sqlite3_column_text(stmt_, index);
  const int bytes = sqlite3_column_bytes(stmt_, index);
  if (text == nullptr) return std::string();
  return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(bytes));
}

std::span<const uint8_t> SqliteStatement::ColumnBlob(int index) const {
  const void* data = sqlite3_column_blob(stmt_, index);
  const int bytes = sqlite3_column_bytes(stmt_, index);
  if (data == nullptr || bytes <= 0) return {};
  return {static_cast<const uint8_t*>(data), static_cast<size_t>(bytes)};
}

bool SqliteStatement::ColumnIsNull(int index) const {
  return sqlite3_column_type(stmt_, index) == SQLITE_NULL;
}

Result<SqliteDb> SqliteDb::Open(const std::string& path, const SqliteOpenOptions& options) {
  int flags = SQLITE_OPEN_NOMUTEX;  // callers serialise each connection (class comment)
  if (options.read_only) {
    flags |= SQLITE_OPEN_READONLY;
  } else {
    flags |= SQLITE_OPEN_READWRITE;
    if (options.create) flags |= SQLITE_OPEN_CREATE;
  }
  sqlite3* raw = nullptr;
  int rc = 0;
  if (options.read_only && options.immutable) {
    const std::string uri = FileUri(path, "mode=ro&immutable=1");
    rc = sqlite3_open_v2(uri.c_str(), &raw, flags | SQLITE_OPEN_URI, nullptr);
  } else {
    rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  }
  SqliteDb db(raw);  // closes `raw` on every path, also when open failed
  if (rc != SQLITE_OK) {
    struct stat info;
    if ((rc & 0xff) == SQLITE_CANTOPEN && ::stat(path.c_str(), &info) != 0 &&
        (options.read_only || !options.create)) {
      return NotFoundError("open " + path + ": no such database");
    }
    return SqliteStatus(rc, raw, "open " + path);
  }
  sqlite3_extended_result_codes(raw, 1);
  const int busy = sqlite3_busy_timeout(raw, options.busy_timeout_ms);
  if (busy != SQLITE_OK) return SqliteStatus(busy, raw, "busy timeout " + path);
  return db;
}

SqliteDb::~SqliteDb() { sqlite3_close_v2(db_); }

SqliteDb::SqliteDb(SqliteDb&& other) noexcept : db_(std::exchange(other.db_, nullptr)) {}

SqliteDb& SqliteDb::operator=(SqliteDb&& other) noexcept {
  if (this != &other) {
    sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
  }
  return *this;
}

Status SqliteDb::Exec(std::string_view sql) {
  const std::string text(sql);
  char* error = nullptr;
  const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &error);
  sqlite3_free(error);  // the same text sqlite3_errmsg gives
  if (rc != SQLITE_OK) return SqliteStatus(rc, db_, "exec '" + SqlForMessage(text) + "'");
  return Status::Ok();
}

Result<SqliteStatement> SqliteDb::Prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                                    SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return SqliteStatus(rc, db_, "prepare '" + SqlForMessage(sql) + "'");
  }
  if (stmt == nullptr) return InvalidArgumentError("prepare: empty SQL");
  return SqliteStatement(stmt, db_);
}

Result<int64_t> SqliteDb::QueryInt64(std::string_view sql) {
  REPRISE_ASSIGN_OR_RETURN(SqliteStatement statement, Prepare(sql));
  ScopedReset reset(statement);
  REPRISE_ASSIGN_OR_RETURN(const bool has_row, statement.Step());
  return has_row ? statement.ColumnInt64(0) : int64_t{0};
}

int64_t SqliteDb::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

int64_t SqliteDb::changes() const { return sqlite3_changes64(db_); }

Result<SqliteTransaction> SqliteTransaction::Begin(SqliteDb& db) {
  REPRISE_RETURN_IF_ERROR(db.Exec("BEGIN IMMEDIATE"));
  return SqliteTransaction(&db);
}

SqliteTransaction::~SqliteTransaction() {
  // Nothing to report to: the error that made us leave early is already on its way up.
  if (db_ != nullptr) db_->Exec("ROLLBACK").IgnoreError();
}

SqliteTransaction::SqliteTransaction(SqliteTransaction&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)) {}

Status SqliteTransaction::Commit() {
  SqliteDb* db = std::exchange(db_, nullptr);
  if (db == nullptr) return InternalError("commit of a finished transaction");
  Status status = db->Exec("COMMIT");
  if (!status.ok()) db->Exec("ROLLBACK").IgnoreError();
  return status;
}

}  // namespace reprise::store
