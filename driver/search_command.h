// `dit-ar search "<terms>" [--limit N] [--json] [--index PATH]`: ranks handbook sections for
// any query text and prints titles, paths with anchors and line numbers, scores and
// highlighted snippets. Exit codes: 0 something matched, 1 nothing matched (an empty query or
// one without letters or digits included), 2 setup error (thrown as dit::Error).
#pragma once

#include <cstddef>
#include <filesystem>
#include <ostream>
#include <string>

namespace dit::ar {

inline constexpr int kExitNoMatch = 1;
inline constexpr size_t kDefaultSearchLimit = 10;

struct SearchRequest {
  std::string query;
  size_t limit = kDefaultSearchLimit;
  bool json = false;
  std::filesystem::path handbook_dir;  // the folder that is indexed
  std::filesystem::path index_path;    // the SQLite file (created or refreshed as needed)
  std::filesystem::path display_root;  // printed paths are relative to it (the repository root)
};

// Refreshes the index when the handbook changed (saying so on `log`), searches, and prints the
// results to `out`: readable text ending in a `---` block, or one JSON object with --json.
// Returns 0 or kExitNoMatch; throws dit::Error on setup errors.
int run_search(const SearchRequest& request, std::ostream& out, std::ostream& log);

}  // namespace dit::ar
