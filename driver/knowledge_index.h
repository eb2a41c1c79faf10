// The handbook search index behind `dit-ar index` and `dit-ar search`: every chapter of
// knowledge/handbook split into sections at its headings, stored in an SQLite FTS5 table and
// ranked with bm25. The index is a cache: it rebuilds itself whenever a chapter was added,
// removed or changed (it keeps each chapter's path, size and content hash).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "driver/config.h"

namespace dit::ar {

// One searchable unit: the text under one heading of one chapter.
struct HandbookSection {
  std::string path;    // relative to the handbook folder, "/"-separated
  std::string anchor;  // the heading's GitHub-style anchor, unique within the chapter
  int line = 1;        // 1-based line of the heading (1 for text before the first heading)
  std::string title;   // the chapter title, then each enclosing heading, joined by " > "
  std::string body;    // the section's text without its heading line
};

// Splits a Markdown chapter at its ATX headings (`#` to `######`, not inside fenced code).
// The chapter title is its first level-1 heading, or `path`'s file stem without one.
std::vector<HandbookSection> split_sections(std::string_view markdown, const std::string& path);

// GitHub's anchor for a heading: lower case, punctuation dropped, spaces turned into hyphens.
std::string heading_anchor(std::string_view heading);

// The FTS5 string literal for `text`: in double quotes, embedded quotes doubled. FTS5 reads it
// as a phrase of the words it contains, never as an operator or a column filter.
std::string fts5_string(std::string_view text);

// Splits any query text into phrases of letters and digits; `"head size" AND 72*` becomes the
// phrases head, size, AND, 72. Words joined by - _ . / ' + stay one phrase (Mann-Whitney, sm_86,
// mma.sync); other punctuation separates (title:attention is title, attention). Each phrase is
// an FTS5 string literal (fts5_string), so no query text can be read as an operator. Repeats
// are dropped; a query without letters or digits gives nothing.
std::vector<std::string> query_phrases(std::string_view query);

struct SearchHit {
  std::string path;  // relative to the handbook folder
  std::string anchor;
  int line = 1;
  std::string title;
  std::string title_highlighted;   // the title with matched words in **...**
  std::string snippet;             // a window of the body with matched words in **...**, one line
  double score = 0;                // -bm25: higher is better
  bool matched_all_terms = false;  // false for hits that match only some of the query's words
};

struct IndexStatus {
  bool rebuilt = false;  // whether this call rewrote the index
  size_t chapters = 0;
  size_t sections = 0;
};

class KnowledgeIndex {
 public:
  // Opens the index file, creating it (and its folder) when missing. Throws dit::Error(io) when
  // it cannot be opened and dit::Error(invalid_file) when the file is not a knowledge index.
  KnowledgeIndex(std::filesystem::path handbook_dir, std::filesystem::path index_path);
  ~KnowledgeIndex();
  KnowledgeIndex(const KnowledgeIndex&) = delete;
  KnowledgeIndex& operator=(const KnowledgeIndex&) = delete;

  // Re-reads the handbook and rewrites the index when any chapter differs from what the index
  // holds (or always, with `force`). Throws dit::Error(io) when the handbook folder is missing
  // or holds no chapter.
  IndexStatus refresh(bool force = false);

  // The best `limit` sections for `query` (any text; see query_phrases): first the sections
  // matching every word, best bm25 first (title words weigh 4 times body words), then sections
  // matching some of them. Does not refresh.
  std::vector<SearchHit> search(std::string_view query, size_t limit) const;

  const std::filesystem::path& handbook_dir() const { return handbook_dir_; }
  const std::filesystem::path& index_path() const { return index_path_; }

 private:
  struct Database;
  std::filesystem::path handbook_dir_;
  std::filesystem::path index_path_;
  std::unique_ptr<Database> database_;
};

// The folder that is indexed: <knowledge_dir>/handbook when it exists, else <knowledge_dir>.
std::filesystem::path handbook_directory(const Config& config);
// Where the index lives by default: <state_dir>/knowledge.sqlite.
std::filesystem::path default_index_path(const Config& config);

}  // namespace dit::ar
