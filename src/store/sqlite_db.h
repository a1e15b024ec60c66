// SqliteDb, SqliteStatement and SqliteTransaction: RAII wrappers over the SQLite C API that
// report failures as Status (docs/style.md §4, §5). The catalog is their only user.
//
// Error mapping (SqliteStatus): SQLITE_CORRUPT and SQLITE_NOTADB -> Corrupt; SQLITE_FULL and
// SQLITE_NOMEM -> ResourceExhausted; SQLITE_READONLY, SQLITE_BUSY and SQLITE_LOCKED ->
// Unavailable (the database cannot be written now); SQLITE_CONSTRAINT -> InvalidArgument;
// SQLITE_CANTOPEN -> NotFound when the file is missing and may not be created, else IoError;
// everything else -> IoError. Messages name the operation and carry sqlite3_errmsg.
//
// A SqliteDb is one connection. It is thread-compatible: callers serialise its use (SQLite's
// own mutexes keep a shared connection safe, but statements and transactions are per
// caller). A SqliteStatement must not outlive the SqliteDb that prepared it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace reprise::store {

// A Status for SQLite result code `rc` (extended codes allowed) from `db` (may be null).
Status SqliteStatus(int rc, sqlite3* db, std::string_view what);

class SqliteStatement {
 public:
  SqliteStatement() = default;
  ~SqliteStatement();
  SqliteStatement(SqliteStatement&& other) noexcept;
  SqliteStatement& operator=(SqliteStatement&& other) noexcept;
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;

  bool is_valid() const { return stmt_ != nullptr; }

  // Parameters are numbered from 1. Text and blobs are copied by SQLite.
  Status BindInt64(int index, int64_t value);
  // Stored as the int64 with the same bits (SQLite integers are signed).
  Status BindUint64(int index, uint64_t value) {
    return BindInt64(index, static_cast<int64_t>(value));
  }
  Status BindDouble(int index, double value);
  Status BindText(int index, std::string_view value);
  Status BindBlob(int index, std::span<const uint8_t> value);
  Status BindNull(int index);

  // Runs one step: true when a row is ready to read, false when the statement is done.
  Result<bool> Step();
  // Steps to completion, ignoring rows, then resets.
  Status Run();
  // Resets for another run and clears the bindings. Releases the statement's read lock.
  void Reset();

  // Columns are numbered from 0. Valid after Step() returned true, until the next step/reset.
  int64_t ColumnInt64(int index) const;
  uint64_t ColumnUint64(int index) const { return static_cast<uint64_t>(ColumnInt64(index)); }
  double ColumnDouble(int index) const;
  std::string ColumnText(int index) const;
  std::span<const uint8_t> ColumnBlob(int index) const;
  bool ColumnIsNull(int index) const;

 private:
  friend class SqliteDb;
  SqliteStatement(sqlite3_stmt* stmt, sqlite3* db) : stmt_(stmt), db_(db) {}
  Status BindResult(int rc, int index);

  sqlite3_stmt* stmt_ = nullptr;
  sqlite3* db_ = nullptr;  // borrowed from the SqliteDb
};

// Resets a statement when leaving a scope, so that early returns never leave it mid-step
// (which would hold a read transaction open and block WAL checkpoints).
class ScopedReset {
 public:
  explicit ScopedReset(SqliteStatement& statement) : statement_(statement) {}
  ~ScopedReset() { statement_.Reset(); }
  ScopedReset(const ScopedReset&) = delete;
  ScopedReset& operator=(const ScopedReset&) = delete;

 private:
  SqliteStatement& statement_;
};

struct SqliteOpenOptions {
  bool read_only = false;
  bool create = true;  // create the file when missing (ignored when read_only)
  // With read_only: open as an immutable file (SQLite URI immutable=1): no locks, no -shm or
  // -wal (not even reading them). Only for a database nobody can change meanwhile, e.g. in a
  // folder that is not writable, where a WAL database cannot be opened otherwise.
  bool immutable = false;
  int busy_timeout_ms = 5000;
};

class SqliteDb {
 public:
  // Errors: NotFound (missing and !create), Corrupt (not a database), IoError.
  static Result<SqliteDb> Open(const std::string& path, const SqliteOpenOptions& options);

  SqliteDb() = default;
  ~SqliteDb();
  SqliteDb(SqliteDb&& other) noexcept;
  SqliteDb& operator=(SqliteDb&& other) noexcept;
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  // Runs one or more statements that return no rows needed by the caller.
  Status Exec(std::string_view sql);
  Result<SqliteStatement> Prepare(std::string_view sql);

  // A single integer from a query such as "PRAGMA user_version" (0 when no row).
  Result<int64_t> QueryInt64(std::string_view sql);

  int64_t last_insert_rowid() const;
  int64_t changes() const;
  sqlite3* handle() const { return db_; }

 private:
  explicit SqliteDb(sqlite3* db) : db_(db) {}
  sqlite3* db_ = nullptr;
};

// BEGIN IMMEDIATE on construction (taking the write lock up front, so that a busy database
// fails here rather than at the first write); ROLLBACK on destruction unless committed.
class SqliteTransaction {
 public:
  static Result<SqliteTransaction> Begin(SqliteDb& db);
  ~SqliteTransaction();
  SqliteTransaction(SqliteTransaction&& other) noexcept;
  SqliteTransaction& operator=(SqliteTransaction&&) = delete;
  SqliteTransaction(const SqliteTransaction&) = delete;
  SqliteTransaction& operator=(const SqliteTransaction&) = delete;

  Status Commit();

 private:
  explicit SqliteTransaction(SqliteDb* db) : db_(db) {}
  SqliteDb* db_;  // borrowed; null once committed or rolled back
};

}  // namespace reprise::store
