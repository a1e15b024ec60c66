// SqliteDb wrappers: statements, transactions, error mapping; and that this SQLite has FTS5.
#include "store/sqlite_db.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>

#include "support/temp_dir.h"

namespace reprise::store {
namespace {

SqliteDb OpenOrDie(const std::string& path, SqliteOpenOptions options = {}) {
  auto db = SqliteDb::Open(path, options);
  EXPECT_TRUE(db.ok()) << db.status().ToString();
  return std::move(db).value();
}

TEST(SqliteDbTest, HasFts5AndFts5Vocab) {
  testing_support::TempDir temp;
  SqliteDb db = OpenOrDie(temp.path() + "/t.db");
  std::printf("SQLite %s\n", sqlite3_libversion());
  ASSERT_TRUE(db.Exec("CREATE VIRTUAL TABLE f USING fts5(text); "
                      "CREATE VIRTUAL TABLE v USING fts5vocab(f, row); "
                      "INSERT INTO f (rowid, text) VALUES (7, 'hello quokka world')")
                  .ok());
  auto s = db.Prepare("SELECT rowid FROM f WHERE f MATCH ?1 ORDER BY bm25(f)");
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(s->BindText(1, "\"quokka\"").ok());
  ASSERT_TRUE(*s->Step());
  EXPECT_EQ(s->ColumnInt64(0), 7);
  EXPECT_EQ(*db.QueryInt64("SELECT doc FROM v WHERE term = 'world'"), 1);
}

TEST(SqliteDbTest, BindsStepsAndReadsColumns) {
  testing_support::TempDir temp;
  SqliteDb db = OpenOrDie(temp.path() + "/t.db");
  ASSERT_TRUE(db.Exec("CREATE TABLE t (a INTEGER, b TEXT, c BLOB, d REAL, e)").ok());
  auto insert = db.Prepare("INSERT INTO t VALUES (?1, ?2, ?3, ?4, ?5)");
  ASSERT_TRUE(insert.ok());
  const std::vector<uint8_t> blob = {1, 2, 0, 255};
  ASSERT_TRUE(insert->BindUint64(1, UINT64_MAX).ok());
  ASSERT_TRUE(insert->BindText(2, std::string_view("with\0nul", 8)).ok());
  ASSERT_TRUE(insert->BindBlob(3, blob).ok());
  ASSERT_TRUE(insert->BindDouble(4, 2.5).ok());
  ASSERT_TRUE(insert->BindNull(5).ok());
  ASSERT_TRUE(insert->Run().ok());
  EXPECT_EQ(db.last_insert_rowid(), 1);
  EXPECT_EQ(db.changes(), 1);
  // An empty blob stays a blob, not NULL.
  ASSERT_TRUE(insert->BindInt64(1, -5).ok());
  ASSERT_TRUE(insert->BindBlob(3, {}).ok());
  ASSERT_TRUE(insert->Run().ok());

  auto select = db.Prepare("SELECT a, b, c, d, e FROM t ORDER BY rowid");
  ASSERT_TRUE(select.ok());
  ASSERT_TRUE(*select->Step());
  EXPECT_EQ(select->ColumnUint64(0), UINT64_MAX);
  EXPECT_EQ(select->ColumnText(1), std::string("with\0nul", 8));
  const auto column = select->ColumnBlob(2);
  EXPECT_EQ(std::vector<uint8_t>(column.begin(), column.end()), blob);
  EXPECT_EQ(select->ColumnDouble(3), 2.5);
  EXPECT_TRUE(select->ColumnIsNull(4));
  ASSERT_TRUE(*select->Step());
  EXPECT_EQ(select->ColumnInt64(0), -5);
  EXPECT_FALSE(select->ColumnIsNull(2));
  EXPECT_TRUE(select->ColumnBlob(2).empty());
  EXPECT_FALSE(*select->Step());
  select->Reset();
  EXPECT_TRUE(*select->Step());  // runs again after a reset
}

TEST(SqliteDbTest, MapsErrors) {
  testing_support::TempDir temp;
  SqliteDb db = OpenOrDie(temp.path() + "/t.db");
  ASSERT_TRUE(db.Exec("CREATE TABLE t (a INTEGER PRIMARY KEY)").ok());
  ASSERT_TRUE(db.Exec("INSERT INTO t VALUES (1)").ok());
  EXPECT_EQ(db.Exec("INSERT INTO t VALUES (1)").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(db.Prepare("SELEKT 1").status().code(), StatusCode::kIoError);

  // Not a database.
  const std::string junk = temp.path() + "/junk.db";
  std::ofstream(junk) << std::string(4096, 'x');
  auto opened = SqliteDb::Open(junk, {});
  Status status = opened.ok() ? opened->Exec("SELECT * FROM sqlite_master") : opened.status();
  EXPECT_EQ(status.code(), StatusCode::kCorrupt) << status.ToString();

  // Missing and not to be created.
  SqliteOpenOptions no_create;
  no_create.create = false;
  EXPECT_EQ(SqliteDb::Open(temp.path() + "/none.db", no_create).status().code(),
            StatusCode::kNotFound);
  SqliteOpenOptions read_only;
  read_only.read_only = true;
  EXPECT_EQ(SqliteDb::Open(temp.path() + "/none.db", read_only).status().code(),
            StatusCode::kNotFound);

  // Writes through a read-only connection.
  SqliteDb reader = OpenOrDie(temp.path() + "/t.db", read_only);
  EXPECT_EQ(reader.Exec("INSERT INTO t VALUES (2)").code(), StatusCode::kUnavailable);
  EXPECT_EQ(*reader.QueryInt64("SELECT COUNT(*) FROM t"), 1);
}

TEST(SqliteDbTest, BusyDatabaseIsUnavailableAfterTheTimeout) {
  testing_support::TempDir temp;
  SqliteDb first = OpenOrDie(temp.path() + "/t.db");
  ASSERT_TRUE(first.Exec("PRAGMA journal_mode = WAL; CREATE TABLE t (a)").ok());
  SqliteOpenOptions quick;
  quick.busy_timeout_ms = 20;
  SqliteDb second = OpenOrDie(temp.path() + "/t.db", quick);
  auto holding = SqliteTransaction::Begin(first);
  ASSERT_TRUE(holding.ok());
  auto waiting = SqliteTransaction::Begin(second);
  EXPECT_EQ(waiting.status().code(), StatusCode::kUnavailable);
  // Readers are not blocked by the writer in WAL mode.
  EXPECT_EQ(*second.QueryInt64("SELECT COUNT(*) FROM t"), 0);
}

TEST(SqliteDbTest, TransactionRollsBackUnlessCommitted) {
  testing_support::TempDir temp;
  SqliteDb db = OpenOrDie(temp.path() + "/t.db");
  ASSERT_TRUE(db.Exec("CREATE TABLE t (a)").ok());
  {
    auto transaction = SqliteTransaction::Begin(db);
    ASSERT_TRUE(transaction.ok());
    ASSERT_TRUE(db.Exec("INSERT INTO t VALUES (1)").ok());
  }
  EXPECT_EQ(*db.QueryInt64("SELECT COUNT(*) FROM t"), 0);
  {
    auto transaction = SqliteTransaction::Begin(db);
    ASSERT_TRUE(transaction.ok());
    ASSERT_TRUE(db.Exec("INSERT INTO t VALUES (1)").ok());
    ASSERT_TRUE(transaction->Commit().ok());
    EXPECT_EQ(transaction->Commit().code(), StatusCode::kInternal);
  }
  EXPECT_EQ(*db.QueryInt64("SELECT COUNT(*) FROM t"), 1);
}

TEST(SqliteDbTest, ErrorMessagesCarryTheWholeStatementAndSqliteMessage) {
  testing_support::TempDir temp;
  SqliteDb db = OpenOrDie(temp.path() + "/t.db");
  // A long statement whose error is at its very end: the message used to stop after 80
  // characters, mid-word.
  const std::string sql =
      "SELECT 1 AS first_column_with_a_long_name, 2 AS second_column_with_a_long_name,\n"
      "       3 AS third_column_with_a_long_name FROM no_such_table_anywhere_in_this_database";
  const Status prepared = db.Prepare(sql).status();
  ASSERT_FALSE(prepared.ok());
  EXPECT_NE(prepared.ToString().find("FROM no_such_table_anywhere_in_this_database'"),
            std::string::npos)
      << prepared.ToString();
  EXPECT_NE(prepared.ToString().find("no such table: no_such_table_anywhere_in_this_database"),
            std::string::npos)
      << prepared.ToString();
  const Status executed = db.Exec(sql);
  EXPECT_NE(executed.ToString().find("second_column_with_a_long_name, 3 AS third"),
            std::string::npos)
      << executed.ToString();
}

}  // namespace
}  // namespace reprise::store
