#include "store/keyword_index.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>

#include "store/text_query.h"

namespace reprise::store {
namespace {

// A query's words beyond this many are ignored (each costs one term lookup).
constexpr size_t kMaxQueryWords = 256;

}  // namespace

Result<KeywordIndexWriter> KeywordIndexWriter::Create(SqliteDb& db) {
  KeywordIndexWriter w;
  REPRISE_ASSIGN_OR_RETURN(w.insert_text_,
                           db.Prepare("INSERT INTO chunk_text (rowid, text) VALUES (?1, ?2)"));
  REPRISE_ASSIGN_OR_RETURN(w.read_text_,
                           db.Prepare("SELECT text FROM chunk_text WHERE rowid = ?1"));
  REPRISE_ASSIGN_OR_RETURN(w.delete_text_, db.Prepare("DELETE FROM chunk_text WHERE rowid = ?1"));
  REPRISE_ASSIGN_OR_RETURN(w.add_term_,
                           db.Prepare("INSERT INTO chunk_terms (term, num_docs) VALUES (?1, ?2) "
                                      "ON CONFLICT (term) DO UPDATE SET "
                                      "num_docs = num_docs + excluded.num_docs"));
  REPRISE_ASSIGN_OR_RETURN(w.prune_terms_,
                           db.Prepare("DELETE FROM chunk_terms WHERE num_docs <= 0"));
  REPRISE_ASSIGN_OR_RETURN(w.count_texts_,
                           db.Prepare("INSERT INTO meta (key, value) VALUES ('num_texts', ?1) "
                                      "ON CONFLICT (key) DO UPDATE SET "
                                      "value = MAX(0, value + excluded.value)"));
  REPRISE_ASSIGN_OR_RETURN(w.optimize_,
                           db.Prepare("INSERT INTO chunk_text (chunk_text) VALUES ('optimize')"));
  return w;
}

Status KeywordIndexWriter::CountWords(std::string_view text, int64_t delta) {
  for (const std::string& word : SplitQueryWords(text)) {
    REPRISE_RETURN_IF_ERROR(add_term_.BindText(1, word));
    REPRISE_RETURN_IF_ERROR(add_term_.BindInt64(2, delta));
    REPRISE_RETURN_IF_ERROR(add_term_.Run());
  }
  REPRISE_RETURN_IF_ERROR(count_texts_.BindInt64(1, delta));
  return count_texts_.Run();
}

Status KeywordIndexWriter::Add(int64_t row_id, std::string_view text) {
  if (text.empty()) return Status::Ok();
  REPRISE_RETURN_IF_ERROR(insert_text_.BindInt64(1, row_id));
  REPRISE_RETURN_IF_ERROR(insert_text_.BindText(2, text));
  REPRISE_RETURN_IF_ERROR(insert_text_.Run());
  return CountWords(text, +1);
}

Status KeywordIndexWriter::Remove(int64_t row_id) {
  std::string text;
  {
    ScopedReset reset(read_text_);
    REPRISE_RETURN_IF_ERROR(read_text_.BindInt64(1, row_id));
    REPRISE_ASSIGN_OR_RETURN(const bool has_row, read_text_.Step());
    if (!has_row) return Status::Ok();
    text = read_text_.ColumnText(0);
  }
  REPRISE_RETURN_IF_ERROR(CountWords(text, -1));
  REPRISE_RETURN_IF_ERROR(delete_text_.BindInt64(1, row_id));
  return delete_text_.Run();
}

Status KeywordIndexWriter::Optimize() {
  REPRISE_RETURN_IF_ERROR(prune_terms_.Run());
  return optimize_.Run();
}

Result<KeywordIndexReader> KeywordIndexReader::Create(SqliteDb& db) {
  KeywordIndexReader r;
  REPRISE_ASSIGN_OR_RETURN(r.term_docs_,
                           db.Prepare("SELECT num_docs FROM chunk_terms WHERE term = ?1"));
  REPRISE_ASSIGN_OR_RETURN(r.num_texts_,
                           db.Prepare("SELECT value FROM meta WHERE key = 'num_texts'"));
  REPRISE_ASSIGN_OR_RETURN(
      r.postings_, db.Prepare("SELECT rowid FROM chunk_text WHERE chunk_text MATCH ?1 LIMIT ?2"));
  return r;
}

Result<std::vector<KeywordMatch>> KeywordIndexReader::Search(std::string_view query, int max_terms,
                                                             int max_term_postings) {
  std::vector<KeywordMatch> matches;
  std::vector<std::string> words = SplitQueryWords(query);
  if (words.size() > kMaxQueryWords) words.resize(kMaxQueryWords);
  if (words.empty() || max_terms <= 0 || max_term_postings <= 0) return matches;

  struct Term {
    int64_t num_docs;  // -1: not counted (unknown)
    std::string word;
  };
  std::vector<Term> known, unknown;
  for (std::string& word : words) {
    ScopedReset reset(term_docs_);
    REPRISE_RETURN_IF_ERROR(term_docs_.BindText(1, word));
    REPRISE_ASSIGN_OR_RETURN(const bool has_row, term_docs_.Step());
    if (!has_row) {
      unknown.push_back({-1, std::move(word)});
    } else if (const int64_t num_docs = term_docs_.ColumnInt64(0); num_docs > 0) {
      known.push_back({num_docs, std::move(word)});
    }  // counted and now absent: cannot match
  }
  std::stable_sort(known.begin(), known.end(),
                   [](const Term& a, const Term& b) { return a.num_docs < b.num_docs; });
  std::vector<Term> terms = std::move(known);
  for (Term& term : unknown) terms.push_back(std::move(term));
  if (terms.size() > static_cast<size_t>(max_terms)) terms.resize(static_cast<size_t>(max_terms));
  if (terms.empty()) return matches;

  int64_t num_texts = 0;
  {
    ScopedReset reset(num_texts_);
    REPRISE_ASSIGN_OR_RETURN(const bool has_row, num_texts_.Step());
    if (has_row) num_texts = num_texts_.ColumnInt64(0);
  }

  std::unordered_map<int64_t, double> scores;
  std::vector<int64_t> rows;
  for (const Term& term : terms) {
    rows.clear();
    {
      ScopedReset reset(postings_);
      REPRISE_RETURN_IF_ERROR(postings_.BindText(1, QuoteFtsTerm(term.word)));
      REPRISE_RETURN_IF_ERROR(postings_.BindInt64(2, max_term_postings));
      while (true) {
        REPRISE_ASSIGN_OR_RETURN(const bool has_row, postings_.Step());
        if (!has_row) break;
        rows.push_back(postings_.ColumnInt64(0));
      }
    }
    const double df =
        static_cast<double>(term.num_docs >= 0 ? term.num_docs : static_cast<int64_t>(rows.size()));
    const double n = std::max(static_cast<double>(num_texts), df);
    const double idf = std::log(1.0 + (n - df + 0.5) / (df + 0.5));
    for (const int64_t row : rows) scores[row] += idf;
  }
  matches.reserve(scores.size());
  for (const auto& [row, score] : scores) matches.push_back({row, score});
  std::sort(matches.begin(), matches.end(), [](const KeywordMatch& a, const KeywordMatch& b) {
    return a.score != b.score ? a.score > b.score : a.row_id > b.row_id;
  });
  return matches;
}

}  // namespace reprise::store
