// The handbook search index: Markdown sections in an SQLite FTS5 table, rebuilt when the
// handbook changes, and `dit-ar index`.
#include "driver/knowledge_index.h"

#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "driver/subcommands.h"
#include "core/error.h"
#include "core/files.h"

namespace dit::ar {
namespace {

// Bump when the table layout or the way sections are cut changes: an index written by another
// version is then rebuilt instead of misread.
constexpr const char* kSchemaVersion = "knowledge-index-1";
// bm25 column weights: a word in a section's title (chapter title and headings) counts this
// many times as much as one in its body.
constexpr double kTitleWeight = 4.0;
constexpr double kBodyWeight = 1.0;
// Snippet window in tokens, and how long a second process waits for a writer's lock.
constexpr int kSnippetTokens = 24;
constexpr int kBusyTimeoutMilliseconds = 10000;

bool is_word_byte(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}

std::string_view trim(std::string_view text) {
  size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string_view::npos) return {};
  size_t end = text.find_last_not_of(" \t\r");
  return text.substr(begin, end - begin + 1);
}

// A fence line opens or closes a fenced code block: ``` or ~~~ after at most 3 spaces.
std::optional<std::string> fence_of(std::string_view line) {
  size_t indent = line.find_first_not_of(' ');
  if (indent == std::string_view::npos || indent > 3) return std::nullopt;
  line.remove_prefix(indent);
  if (line.size() < 3) return std::nullopt;
  char c = line[0];
  if (c != '`' && c != '~') return std::nullopt;
  size_t run = line.find_first_not_of(c);
  if (run == std::string_view::npos) run = line.size();
  if (run < 3) return std::nullopt;
  return std::string(run, c);
}

struct Heading {
  int level = 0;
  std::string text;
};

std::optional<Heading> heading_of(std::string_view line) {
  size_t indent = line.find_first_not_of(' ');
  if (indent == std::string_view::npos || indent > 3) return std::nullopt;
  line.remove_prefix(indent);
  size_t hashes = line.find_first_not_of('#');
  if (hashes == std::string_view::npos) hashes = line.size();
  if (hashes < 1 || hashes > 6) return std::nullopt;
  if (hashes < line.size() && line[hashes] != ' ' && line[hashes] != '\t') return std::nullopt;
  std::string_view text = trim(line.substr(hashes));
  // An optional closing sequence of #s, separated by a space, is not part of the text.
  size_t closing = text.find_last_not_of('#');
  if (closing == std::string_view::npos) {
    text = {};
  } else if (closing + 1 < text.size() && (text[closing] == ' ' || text[closing] == '\t')) {
    text = trim(text.substr(0, closing));
  }
  return Heading{static_cast<int>(hashes), std::string(text)};
}

std::string file_stem(const std::string& path) { return std::filesystem::path(path).stem().string(); }

// FNV-1a, 64 bits: enough to notice an edited chapter (this is a cache key, not a signature).
std::string content_hash(std::string_view bytes) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  std::ostringstream text;
  text << std::hex;
  text.width(16);
  text.fill('0');
  text << hash;
  return text.str();
}

std::string read_chapter(const std::filesystem::path& path) { return read_text_file(path, "handbook chapter "); }

struct Chapter {
  std::string path;  // relative to the handbook folder
  std::string content;
  std::string hash;
};

// Every *.md file below the handbook folder except folder READMEs, sorted by path.
std::vector<Chapter> read_handbook(const std::filesystem::path& handbook_dir) {
  std::error_code error;
  if (!std::filesystem::is_directory(handbook_dir, error)) {
    throw Error(ErrorKind::io,
                "handbook folder " + handbook_dir.string() + " does not exist (config field knowledge_dir)");
  }
  std::vector<Chapter> chapters;
  for (auto it = std::filesystem::recursive_directory_iterator(handbook_dir, error);
       !error && it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
    if (!it->is_regular_file(error) || it->path().extension() != ".md") continue;
    if (it->path().filename() == "README.md") continue;
    Chapter chapter;
    chapter.path = std::filesystem::relative(it->path(), handbook_dir).generic_string();
    chapter.content = read_chapter(it->path());
    chapter.hash = content_hash(chapter.content);
    chapters.push_back(std::move(chapter));
  }
  if (error) {
    throw Error(ErrorKind::io, "cannot list handbook folder " + handbook_dir.string() + ": " + error.message());
  }
  if (chapters.empty()) {
    throw Error(ErrorKind::io, "handbook folder " + handbook_dir.string() + " holds no chapter (*.md)");
  }
  std::sort(chapters.begin(), chapters.end(), [](const Chapter& a, const Chapter& b) { return a.path < b.path; });
  return chapters;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Markdown sections and query text
// ---------------------------------------------------------------------------------------------

std::string heading_anchor(std::string_view heading) {
  std::string anchor;
  for (unsigned char c : heading) {
    if (c >= 'A' && c <= 'Z') {
      anchor += static_cast<char>(c - 'A' + 'a');
    } else if (is_word_byte(c) || c == '-' || c == '_') {
      anchor += static_cast<char>(c);
    } else if (c == ' ') {
      anchor += '-';
    }
  }
  return anchor;
}

std::vector<HandbookSection> split_sections(std::string_view markdown, const std::string& path) {
  struct Line {
    std::string_view text;
    int number;
    std::optional<Heading> heading;
  };
  std::vector<Line> lines;
  std::optional<std::string> open_fence;
  int number = 0;
  while (!markdown.empty()) {
    size_t end = markdown.find('\n');
    std::string_view text = markdown.substr(0, end);
    markdown.remove_prefix(end == std::string_view::npos ? markdown.size() : end + 1);
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    Line line{text, ++number, std::nullopt};
    if (auto fence = fence_of(text)) {
      if (!open_fence) {
        open_fence = fence;
      } else if (fence->front() == open_fence->front() && fence->size() >= open_fence->size() &&
                 trim(text).find_first_not_of(fence->front()) == std::string_view::npos) {
        open_fence.reset();
      }
    } else if (!open_fence) {
      line.heading = heading_of(text);
    }
    lines.push_back(line);
  }

  std::string chapter_title = file_stem(path);
  for (const Line& line : lines) {
    if (line.heading && line.heading->level == 1 && !line.heading->text.empty()) {
      chapter_title = line.heading->text;
      break;
    }
  }

  std::vector<HandbookSection> sections;
  std::map<std::string, int> anchors_seen;
  std::vector<Heading> stack;  // the enclosing headings below level 1
  HandbookSection current{path, "", 1, chapter_title, ""};
  bool current_has_heading = false;
  auto flush = [&] {
    bool has_text = trim(current.body).size() > 0;
    if (current_has_heading || has_text) sections.push_back(current);
  };
  for (const Line& line : lines) {
    if (!line.heading) {
      current.body.append(line.text);
      current.body += '\n';
      continue;
    }
    flush();
    const Heading& heading = *line.heading;
    while (!stack.empty() && stack.back().level >= heading.level) stack.pop_back();
    std::string title = chapter_title;
    if (heading.level > 1) {
      stack.push_back(heading);
      for (const Heading& enclosing : stack) title += " > " + enclosing.text;
    } else if (heading.text != chapter_title) {
      title += " > " + heading.text;
    }
    std::string anchor = heading_anchor(heading.text);
    int seen = anchors_seen[anchor]++;
    if (seen > 0) anchor += "-" + std::to_string(seen);
    current = HandbookSection{path, anchor, line.number, title, ""};
    current_has_heading = true;
  }
  flush();
  return sections;
}

std::string fts5_string(std::string_view text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  quoted += '"';
  return quoted;
}

std::vector<std::string> query_phrases(std::string_view query) {
  std::vector<std::string> phrases;
  std::set<std::string> seen;
  size_t position = 0;
  while (position < query.size()) {
    size_t word_begin = query.find_first_not_of(" \t\r\n\f\v", position);
    if (word_begin == std::string_view::npos) break;
    size_t word_end = query.find_first_of(" \t\r\n\f\v", word_begin);
    if (word_end == std::string_view::npos) word_end = query.size();
    std::string_view word = query.substr(word_begin, word_end - word_begin);
    position = word_end;
    // Letters and digits joined by - _ . / ' + stay together as one phrase ("Mann-Whitney",
    // "sm_86", "mma.sync"); any other punctuation separates phrases (`title:attention` is
    // title and attention, `NEAR(head` is NEAR and head, `72*` is 72).
    std::string phrase;
    auto finish = [&] {
      std::string text(trim(phrase));
      phrase.clear();
      if (text.empty()) return;
      std::string folded = text;
      std::transform(folded.begin(), folded.end(), folded.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (seen.insert(folded).second) phrases.push_back(fts5_string(text));
    };
    for (unsigned char c : word) {
      if (is_word_byte(c)) {
        phrase += static_cast<char>(c);
      } else if (std::string_view("-_./'+").find(static_cast<char>(c)) != std::string_view::npos) {
        if (!phrase.empty() && phrase.back() != ' ') phrase += ' ';
      } else {
        finish();
      }
    }
    finish();
  }
  return phrases;
}

// ---------------------------------------------------------------------------------------------
// SQLite
// ---------------------------------------------------------------------------------------------

namespace {

// An open SQLite connection with the file name every error message starts with.
struct SqliteConnection {
  sqlite3* handle = nullptr;
  std::string path;

  SqliteConnection() = default;
  SqliteConnection(const SqliteConnection&) = delete;
  SqliteConnection& operator=(const SqliteConnection&) = delete;
  ~SqliteConnection() {
    if (handle != nullptr) sqlite3_close(handle);
  }

  [[noreturn]] void fail(const std::string& what, int code) const {
    std::string message =
        path + ": " + what + ": " + (handle != nullptr ? sqlite3_errmsg(handle) : sqlite3_errstr(code));
    if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT) {
      throw Error(ErrorKind::invalid_file,
                  message + " (not a knowledge index: remove the file or pass another --index)");
    }
    throw Error(ErrorKind::io, message);
  }

  void execute(const char* sql, const std::string& what) const {
    char* message = nullptr;
    int code = sqlite3_exec(handle, sql, nullptr, nullptr, &message);
    if (code != SQLITE_OK) {
      std::string detail = message != nullptr ? message : sqlite3_errstr(code);
      sqlite3_free(message);
      if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT) fail(what, code);
      throw Error(ErrorKind::io, path + ": " + what + ": " + detail);
    }
  }
};

// A prepared statement, finalized on scope exit.
class Statement {
 public:
  Statement(const SqliteConnection& database, const char* sql) : database_(database) {
    int code = sqlite3_prepare_v2(database.handle, sql, -1, &statement_, nullptr);
    if (code != SQLITE_OK) database.fail("cannot prepare a query", code);
  }
  ~Statement() { sqlite3_finalize(statement_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  void bind(int index, const std::string& text) {
    check(sqlite3_bind_text(statement_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT));
  }
  void bind(int index, int64_t value) { check(sqlite3_bind_int64(statement_, index, value)); }

  // True while rows come; false when done.
  bool step() {
    int code = sqlite3_step(statement_);
    if (code == SQLITE_ROW) return true;
    if (code == SQLITE_DONE) return false;
    database_.fail("query failed", code);
  }
  void run() {
    while (step()) {}
    sqlite3_reset(statement_);
    sqlite3_clear_bindings(statement_);
  }

  std::string text(int column) const {
    const unsigned char* value = sqlite3_column_text(statement_, column);
    return value != nullptr ? reinterpret_cast<const char*>(value) : "";
  }
  int64_t integer(int column) const { return sqlite3_column_int64(statement_, column); }
  double real(int column) const { return sqlite3_column_double(statement_, column); }

 private:
  void check(int code) {
    if (code != SQLITE_OK) database_.fail("cannot bind a query parameter", code);
  }
  const SqliteConnection& database_;
  sqlite3_stmt* statement_ = nullptr;
};

std::string collapse_whitespace(std::string_view text) {
  std::string result;
  for (char c : text) {
    bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    if (space) {
      if (!result.empty() && result.back() != ' ') result += ' ';
    } else {
      result += c;
    }
  }
  return std::string(trim(result));
}

}  // namespace

struct KnowledgeIndex::Database : SqliteConnection {};

KnowledgeIndex::KnowledgeIndex(std::filesystem::path handbook_dir, std::filesystem::path index_path)
    : handbook_dir_(std::move(handbook_dir)),
      index_path_(std::move(index_path)),
      database_(std::make_unique<Database>()) {
  database_->path = index_path_.string();
  std::error_code error;
  if (index_path_.has_parent_path()) std::filesystem::create_directories(index_path_.parent_path(), error);
  if (error) {
    throw Error(ErrorKind::io,
                "cannot create the folder of the knowledge index " + index_path_.string() + ": " + error.message());
  }
  int code =
      sqlite3_open_v2(database_->path.c_str(), &database_->handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (code != SQLITE_OK) database_->fail("cannot open the knowledge index", code);
  sqlite3_busy_timeout(database_->handle, kBusyTimeoutMilliseconds);
  database_->execute(
      "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
      "CREATE TABLE IF NOT EXISTS chapters(path TEXT PRIMARY KEY, bytes INTEGER NOT NULL,"
      " hash TEXT NOT NULL);",
      "cannot create the knowledge index tables");
  Statement schema(*database_, "SELECT value FROM meta WHERE key = 'schema'");
  std::string version = schema.step() ? schema.text(0) : "";
  if (version != kSchemaVersion) {
    // Written by another version (or new): start from empty tables; refresh() fills them.
    database_->execute("BEGIN IMMEDIATE", "cannot lock the knowledge index for writing");
    try {
      database_->execute(
          "DROP TABLE IF EXISTS sections;"
          "DELETE FROM chapters;"
          "CREATE VIRTUAL TABLE sections USING fts5(title, body, path UNINDEXED,"
          " anchor UNINDEXED, line UNINDEXED, tokenize = 'porter unicode61');",
          "cannot create the knowledge index's full-text table (does this SQLite have FTS5?)");
      Statement set_version(*database_, "INSERT OR REPLACE INTO meta(key, value) VALUES('schema', ?1)");
      set_version.bind(1, std::string(kSchemaVersion));
      set_version.run();
      database_->execute("COMMIT", "cannot write the knowledge index");
    } catch (...) {
      sqlite3_exec(database_->handle, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }
}

KnowledgeIndex::~KnowledgeIndex() = default;

IndexStatus KnowledgeIndex::refresh(bool force) {
  std::vector<Chapter> chapters = read_handbook(handbook_dir_);
  IndexStatus status;
  status.chapters = chapters.size();

  std::map<std::string, std::pair<int64_t, std::string>> indexed;
  {
    Statement listed(*database_, "SELECT path, bytes, hash FROM chapters");
    while (listed.step()) indexed[listed.text(0)] = {listed.integer(1), listed.text(2)};
  }
  bool same = !force && indexed.size() == chapters.size();
  for (size_t i = 0; same && i < chapters.size(); ++i) {
    auto found = indexed.find(chapters[i].path);
    same = found != indexed.end() && found->second.first == static_cast<int64_t>(chapters[i].content.size()) &&
           found->second.second == chapters[i].hash;
  }
  if (same) {
    Statement counted(*database_, "SELECT count(*) FROM sections");
    status.sections = counted.step() ? static_cast<size_t>(counted.integer(0)) : 0;
    return status;
  }

  database_->execute("BEGIN IMMEDIATE", "cannot lock the knowledge index for writing");
  try {
    database_->execute("DELETE FROM sections; DELETE FROM chapters;", "cannot clear the knowledge index");
    Statement add_section(*database_,
                          "INSERT INTO sections(title, body, path, anchor, line) VALUES(?1, ?2, ?3, ?4, ?5)");
    Statement add_chapter(*database_, "INSERT INTO chapters(path, bytes, hash) VALUES(?1, ?2, ?3)");
    for (const Chapter& chapter : chapters) {
      for (const HandbookSection& section : split_sections(chapter.content, chapter.path)) {
        add_section.bind(1, section.title);
        add_section.bind(2, section.body);
        add_section.bind(3, section.path);
        add_section.bind(4, section.anchor);
        add_section.bind(5, static_cast<int64_t>(section.line));
        add_section.run();
        ++status.sections;
      }
      add_chapter.bind(1, chapter.path);
      add_chapter.bind(2, static_cast<int64_t>(chapter.content.size()));
      add_chapter.bind(3, chapter.hash);
      add_chapter.run();
    }
    database_->execute("COMMIT", "cannot write the knowledge index");
  } catch (...) {
    sqlite3_exec(database_->handle, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  status.rebuilt = true;
  return status;
}

std::vector<SearchHit> KnowledgeIndex::search(std::string_view query, size_t limit) const {
  std::vector<std::string> phrases = query_phrases(query);
  std::vector<SearchHit> hits;
  if (phrases.empty() || limit == 0) return hits;

  std::string all_terms;
  std::string any_term;
  for (const std::string& phrase : phrases) {
    all_terms += (all_terms.empty() ? "" : " AND ") + phrase;
    any_term += (any_term.empty() ? "" : " OR ") + phrase;
  }
  std::vector<std::pair<std::string, bool>> passes = {{all_terms, true}};
  if (phrases.size() > 1) passes.emplace_back(any_term, false);

  static const std::string sql =
      "SELECT rowid, path, anchor, line, title,"
      " highlight(sections, 0, '**', '**'),"
      " snippet(sections, 1, '**', '**', ' ... ', " +
      std::to_string(kSnippetTokens) +
      "),"
      " bm25(sections, " +
      std::to_string(kTitleWeight) + ", " + std::to_string(kBodyWeight) +
      ") AS rank"
      " FROM sections WHERE sections MATCH ?1 ORDER BY rank, rowid LIMIT ?2";
  std::set<int64_t> seen;
  for (const auto& [expression, matched_all] : passes) {
    if (hits.size() >= limit) break;
    Statement statement(*database_, sql.c_str());
    statement.bind(1, expression);
    statement.bind(2, static_cast<int64_t>(limit + seen.size()));
    while (hits.size() < limit && statement.step()) {
      if (!seen.insert(statement.integer(0)).second) continue;
      SearchHit hit;
      hit.path = statement.text(1);
      hit.anchor = statement.text(2);
      hit.line = static_cast<int>(statement.integer(3));
      hit.title = statement.text(4);
      hit.title_highlighted = statement.text(5);
      hit.snippet = collapse_whitespace(statement.text(6));
      hit.score = -statement.real(7);
      hit.matched_all_terms = matched_all;
      hits.push_back(std::move(hit));
    }
  }
  return hits;
}

// ---------------------------------------------------------------------------------------------
// Config and `dit-ar index`
// ---------------------------------------------------------------------------------------------

std::filesystem::path handbook_directory(const Config& config) {
  std::filesystem::path knowledge = config.source_dir / config.knowledge_dir;
  std::error_code error;
  if (std::filesystem::is_directory(knowledge / "handbook", error)) return knowledge / "handbook";
  return knowledge;
}

std::filesystem::path default_index_path(const Config& config) { return config.state_dir / "knowledge.sqlite"; }

void rebuild_knowledge_index(const Config& config, std::ostream& log) {
  KnowledgeIndex index(handbook_directory(config), default_index_path(config));
  IndexStatus status = index.refresh(/*force=*/true);
  log << "knowledge index: " << status.chapters << " chapters, " << status.sections << " sections -> "
      << index.index_path().string() << "\n";
}

void add_index_command(CLI::App& app, CommonOptions& options) {
  CLI::App* command =
      app.add_subcommand("index", "Rebuild the handbook search index (search also rebuilds it when a chapter changed)");
  auto index_path = std::make_shared<std::string>();
  command->add_option("--index", *index_path, "Index file (default: <state_dir>/knowledge.sqlite)");
  add_common_options(*command, options, /*with_json=*/true);
  command->callback([&options, index_path] {
    Config config = load_session_config(options);
    std::filesystem::path path = index_path->empty() ? default_index_path(config) : std::filesystem::path(*index_path);
    KnowledgeIndex index(handbook_directory(config), path);
    IndexStatus status = index.refresh(/*force=*/true);
    if (options.json) {
      nlohmann::json report = {{"index", index.index_path().string()},
                               {"handbook", index.handbook_dir().string()},
                               {"chapters", status.chapters},
                               {"sections", status.sections}};
      std::cout << report.dump(2) << "\n";
    } else {
      std::cout << "indexed " << status.chapters << " chapters, " << status.sections << " sections of "
                << index.handbook_dir().string() << "\n"
                << "---\nindex: " << index.index_path().string() << "\n";
    }
  });
}

}  // namespace dit::ar
