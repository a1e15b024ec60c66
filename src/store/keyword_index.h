// KeywordIndex: the catalog's keyword candidates for sub-chunk reuse (DESIGN.md §6) — FTS5
// over chunk text, with document frequencies kept beside it so that a query can pick its
// rarest words cheaply.
//
// Tables (catalog_schema.h): chunk_text, an FTS5 table whose rowid is chunks.row_id; and
// chunk_terms (term -> number of indexed texts holding it), counted with SplitQueryWords so
// that queries look words up exactly as they were counted; meta 'num_texts' holds the number
// of indexed texts.
//
// Search: the query's distinct words are looked up in chunk_terms; words known to be absent
// are dropped; the `max_terms` rarest are kept (words missing from chunk_terms, e.g. rows
// written by another tool, come last). Each kept word runs one quoted FTS5 MATCH — no query
// syntax reaches the parser — reading at most `max_term_postings` rowids. A row's score is
// the sum of the BM25 IDFs, ln(1 + (N - df + 0.5) / (df + 0.5)), of the kept words it holds:
// BM25 with k1 = 0 (a word counts once, whatever its frequency and the text's length).
// FTS5's own bm25() costs ~3.5 µs per matching row plus ~150 µs per query on this machine,
// which would exceed the 5 ms lookup budget at 100,000 chunks; summing IDFs over the rowids
// costs ~0.1 µs per posting.
//
// Thread-compatible: a writer and a reader are each used under their connection's lock.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "store/sqlite_db.h"

namespace reprise::store {

struct KeywordMatch {
  int64_t row_id = 0;
  double score = 0.0;
};

// Maintains the index; every call runs inside the caller's transaction on `db`.
class KeywordIndexWriter {
 public:
  // `db` is borrowed and must outlive the writer.
  static Result<KeywordIndexWriter> Create(SqliteDb& db);

  // Indexes `text` under `row_id` (nothing for empty text). Requires: no text under row_id.
  Status Add(int64_t row_id, std::string_view text);
  // Removes the text of `row_id`, if any, and its word counts.
  Status Remove(int64_t row_id);
  // Merges the FTS5 segments into one (slow: seconds at 100k texts; for idle time).
  Status Optimize();

 private:
  KeywordIndexWriter() = default;
  Status CountWords(std::string_view text, int64_t delta);

  SqliteStatement insert_text_, read_text_, delete_text_, add_term_, prune_terms_, count_texts_,
      optimize_;
};

class KeywordIndexReader {
 public:
  // `db` is borrowed and must outlive the reader.
  static Result<KeywordIndexReader> Create(SqliteDb& db);

  // Rows sharing words with `query`, best first (ties: higher row id first). All namespaces.
  Result<std::vector<KeywordMatch>> Search(std::string_view query, int max_terms,
                                           int max_term_postings);

 private:
  KeywordIndexReader() = default;

  SqliteStatement term_docs_, num_texts_, postings_;
};

}  // namespace reprise::store
