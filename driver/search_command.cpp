// `dit-ar search`: the handbook's sections ranked by SQLite FTS5 bm25 (see knowledge_index.h).
#include "driver/search_command.h"

#include <iostream>
#include <memory>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "driver/knowledge_index.h"
#include "driver/subcommands.h"

namespace dit::ar {
namespace {

// The chapter's path relative to the display root (when inside it), then #anchor if any.
std::string display_path(const SearchRequest& request, const std::string& chapter_path, const std::string& anchor) {
  std::filesystem::path chapter = request.handbook_dir / chapter_path;
  std::filesystem::path shown = chapter;
  if (!request.display_root.empty()) {
    std::error_code error;
    std::filesystem::path relative = std::filesystem::relative(chapter, request.display_root, error);
    if (!error && !relative.empty() && *relative.begin() != "..") shown = relative;
  }
  std::string text = shown.generic_string();
  if (!anchor.empty()) text += "#" + anchor;
  return text;
}

std::string format_score(double score) {
  std::ostringstream text;
  text.setf(std::ios::fixed);
  text.precision(2);
  text << score;
  return text.str();
}

}  // namespace

int run_search(const SearchRequest& request, std::ostream& out, std::ostream& log) {
  KnowledgeIndex index(request.handbook_dir, request.index_path);
  IndexStatus status = index.refresh();
  if (status.rebuilt) {
    log << "knowledge index rebuilt: " << status.chapters << " chapters, " << status.sections << " sections\n";
  }
  std::vector<std::string> phrases = query_phrases(request.query);
  std::vector<SearchHit> hits = index.search(request.query, request.limit);

  if (request.json) {
    nlohmann::json results = nlohmann::json::array();
    for (size_t i = 0; i < hits.size(); ++i) {
      const SearchHit& hit = hits[i];
      results.push_back({{"rank", i + 1},
                         {"title", hit.title},
                         {"title_highlighted", hit.title_highlighted},
                         {"path", display_path(request, hit.path, hit.anchor)},
                         {"file", display_path(request, hit.path, "")},
                         {"anchor", hit.anchor},
                         {"line", hit.line},
                         {"score", hit.score},
                         {"matched_all_terms", hit.matched_all_terms},
                         {"snippet", hit.snippet}});
    }
    nlohmann::json report = {{"query", request.query},
                             {"terms", phrases},
                             {"index", index.index_path().string()},
                             {"index_rebuilt", status.rebuilt},
                             {"results", results}};
    // Invalid UTF-8 in the query or a chapter becomes U+FFFD instead of an exception.
    out << report.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    for (size_t i = 0; i < hits.size(); ++i) {
      const SearchHit& hit = hits[i];
      out << i + 1 << ". " << hit.title << "\n"
          << "   " << display_path(request, hit.path, hit.anchor) << " (line " << hit.line << ")  score "
          << format_score(hit.score) << (hit.matched_all_terms ? "" : "  [some terms]") << "\n";
      if (!hit.snippet.empty()) out << "   " << hit.snippet << "\n";
      out << "\n";
    }
    if (phrases.empty()) {
      out << "no search terms: the query holds no letters or digits\n";
    } else if (hits.empty()) {
      out << "no handbook section matches\n";
    }
    out << "---\nresults: " << hits.size() << "\n";
  }
  return hits.empty() ? kExitNoMatch : 0;
}

void add_search_commands(CLI::App& app, CommonOptions& options) {
  struct Arguments {
    std::vector<std::string> words;
    size_t limit = kDefaultSearchLimit;
    std::string index_path;
  };
  auto arguments = std::make_shared<Arguments>();
  CLI::App* command = app.add_subcommand("search", "Rank handbook sections for the given words (SQLite FTS5, bm25)");
  command
      ->add_option("terms", arguments->words,
                   "Words to look for; any text works (operators and quotes are plain words)")
      ->required();
  command->add_option("--limit,-n", arguments->limit, "Most sections to print")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command->add_option("--index", arguments->index_path, "Index file (default: <state_dir>/knowledge.sqlite)");
  add_common_options(*command, options, /*with_json=*/true);
  command->callback([&options, arguments] {
    Config config = load_session_config(options);
    SearchRequest request;
    for (const std::string& word : arguments->words) {
      request.query += (request.query.empty() ? "" : " ") + word;
    }
    request.limit = arguments->limit;
    request.json = options.json;
    request.handbook_dir = handbook_directory(config);
    request.index_path =
        arguments->index_path.empty() ? default_index_path(config) : std::filesystem::path(arguments->index_path);
    request.display_root = config.source_dir;
    finish_with(run_search(request, std::cout, std::cerr));
  });
}

}  // namespace dit::ar
