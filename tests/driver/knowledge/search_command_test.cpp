// `dit-ar search`: exit codes, odd query text, the readable and the JSON output, and the
// command-line wiring (positional words, --limit, --index, --json).
#include "driver/search_command.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "driver/subcommands.h"
#include "tests/support/scratch_directory.h"

namespace dit::ar {
namespace {

const std::filesystem::path kHandbookDir = DIT_HANDBOOK_DIR;
const std::filesystem::path kRepository = kHandbookDir.parent_path().parent_path();

struct Outcome {
  int code = -1;
  std::string out;
  std::string log;
};

class SearchCommand : public ::testing::Test {
 protected:
  Outcome search(const std::string& query, bool json = false, size_t limit = kDefaultSearchLimit) {
    SearchRequest request;
    request.query = query;
    request.json = json;
    request.limit = limit;
    request.handbook_dir = kHandbookDir;
    request.index_path = folder_.path() / "knowledge.sqlite";
    request.display_root = kRepository;
    std::ostringstream out;
    std::ostringstream log;
    Outcome outcome;
    outcome.code = run_search(request, out, log);
    outcome.out = out.str();
    outcome.log = log.str();
    return outcome;
  }

  test::ScratchDirectory folder_;
};

TEST_F(SearchCommand, ReadableOutputNamesTitlePathLineScoreAndSnippet) {
  Outcome first = search("head size 72 padding", false, 3);
  EXPECT_EQ(first.code, 0);
  EXPECT_NE(first.log.find("knowledge index rebuilt"), std::string::npos) << first.log;
  EXPECT_EQ(first.out.rfind("1. Head size 72: padding, tiles and alignment > ", 0), 0u) << first.out;
  EXPECT_NE(first.out.find("\n   knowledge/handbook/03_single_gpu/03_head_size_72_and_padding.md#"), std::string::npos)
      << first.out;
  EXPECT_NE(first.out.find(" (line "), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("score "), std::string::npos);
  EXPECT_NE(first.out.find("**padding**"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("\n---\nresults: 3\n"), std::string::npos) << first.out;

  Outcome second = search("head size 72 padding", false, 3);
  EXPECT_EQ(second.log, "") << "an unchanged handbook must not be re-indexed";
  EXPECT_EQ(second.out, first.out);
}

TEST_F(SearchCommand, NothingMatchingExitsOne) {
  Outcome outcome = search("xylophonezebraquagga");
  EXPECT_EQ(outcome.code, kExitNoMatch);
  EXPECT_NE(outcome.out.find("no handbook section matches"), std::string::npos) << outcome.out;
  EXPECT_NE(outcome.out.find("---\nresults: 0\n"), std::string::npos);
}

TEST_F(SearchCommand, QueriesWithoutWordsExitOneAndSaySo) {
  for (const std::string query : {"", "   ", "\"", "***", "^", "()", ":", "-- -", "\"\"\"\""}) {
    Outcome outcome = search(query);
    EXPECT_EQ(outcome.code, kExitNoMatch) << "query [" << query << "]";
    EXPECT_NE(outcome.out.find("no search terms"), std::string::npos) << "query [" << query << "]";
  }
}

TEST_F(SearchCommand, OperatorsQuotesAndFiltersAreSearchedAsPlainWords) {
  const std::vector<std::string> queries = {
      "\"head size",                      // unbalanced quote
      "head\" size\" 72\"",               // quotes inside words
      "head AND size OR 72 NOT padding",  // FTS5 boolean operators
      "NEAR(head size, 2)",               // FTS5 NEAR group
      "title:attention",                  // FTS5 column filter
      "body: {title body}: gemm",         // column sets
      "attent* ^head",                    // prefix and initial-token operators
      "+gemm -fusion",                    // signs
      "'); DROP TABLE sections; --",      // SQL in the query text
      "head\tsize\n72",                   // other white space
      "Ünïcödé ✓ 72",                     // non-ASCII
      "AND",
      "OR",
      "NOT",
      "NEAR",  // operators alone
  };
  for (const std::string& query : queries) {
    Outcome outcome;
    ASSERT_NO_THROW(outcome = search(query)) << "query [" << query << "]";
    EXPECT_TRUE(outcome.code == 0 || outcome.code == kExitNoMatch) << "query [" << query << "]";
  }
  // A very long query, and one with a NUL byte inside a word.
  std::string long_query;
  for (int i = 0; i < 3000; ++i) {
    long_query += 'w';
    long_query += std::to_string(i);
    long_query += i % 7 == 0 ? " AND " : " ";
  }
  EXPECT_EQ(search(long_query + "gemm").code, 0);
  EXPECT_EQ(search(std::string("ge\0mm head", 11)).code, 0);
  // The operators were words, not operators: "NOT padding" did not exclude the padding section.
  EXPECT_EQ(search("head AND size OR 72 NOT padding").code, 0);
  EXPECT_EQ(search("title:attention").code, 0);
  // The index survived the SQL in a query.
  EXPECT_EQ(search("Mann-Whitney").code, 0);
}

TEST_F(SearchCommand, JsonOutputParsesAndCarriesEveryField) {
  Outcome outcome = search("Mann-Whitney", true, 4);
  ASSERT_EQ(outcome.code, 0);
  nlohmann::json report = nlohmann::json::parse(outcome.out);
  EXPECT_EQ(report.at("query"), "Mann-Whitney");
  EXPECT_EQ(report.at("terms"), nlohmann::json::array({"\"Mann Whitney\""}));
  EXPECT_TRUE(report.at("index_rebuilt").get<bool>());
  const nlohmann::json& results = report.at("results");
  ASSERT_TRUE(results.is_array());
  ASSERT_GE(results.size(), 1u);
  ASSERT_LE(results.size(), 4u);
  const nlohmann::json& best = results.at(0);
  EXPECT_EQ(best.at("rank"), 1);
  EXPECT_EQ(best.at("file"), "knowledge/handbook/00_foundations/03_noise_and_statistics.md");
  EXPECT_EQ(best.at("path"), best.at("file").get<std::string>() + "#" + best.at("anchor").get<std::string>());
  EXPECT_GT(best.at("line").get<int>(), 1);
  EXPECT_GT(best.at("score").get<double>(), 0.0);
  EXPECT_TRUE(best.at("matched_all_terms").get<bool>());
  EXPECT_FALSE(best.at("snippet").get<std::string>().empty());
  EXPECT_NE(best.at("title_highlighted").get<std::string>().find("**Mann-Whitney**"), std::string::npos);
  for (size_t i = 0; i < results.size(); ++i) EXPECT_EQ(results[i].at("rank"), i + 1);

  Outcome none = search("\"(", true);
  EXPECT_EQ(none.code, kExitNoMatch);
  nlohmann::json empty = nlohmann::json::parse(none.out);
  EXPECT_TRUE(empty.at("results").empty());
  EXPECT_TRUE(empty.at("terms").empty());
}

TEST_F(SearchCommand, JsonSurvivesInvalidUtf8InTheQuery) {
  Outcome outcome = search(std::string("gemm \xff\xfe"), true);
  nlohmann::json parsed;
  EXPECT_NO_THROW(parsed = nlohmann::json::parse(outcome.out));
  EXPECT_TRUE(parsed.at("results").is_array());
}

// Runs `dit-ar search ...` through the registered CLI11 subcommand, as main() does.
Outcome run_command_line(const std::vector<std::string>& arguments) {
  CLI::App app("dit-ar");
  CommonOptions options;
  add_search_commands(app, options);
  std::vector<std::string> reversed(arguments.rbegin(), arguments.rend());
  Outcome outcome;
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  try {
    app.parse(reversed);
    outcome.code = 0;
  } catch (const CLI::ParseError& error) {
    outcome.code = error.get_exit_code();
  }
  outcome.out = testing::internal::GetCapturedStdout();
  outcome.log = testing::internal::GetCapturedStderr();
  return outcome;
}

TEST_F(SearchCommand, CommandLineJoinsWordsAndHonoursLimitIndexAndJson) {
  if (!std::filesystem::exists(kRepository / ".git")) {
    GTEST_SKIP() << "the source tree is not a git checkout, so dit-ar cannot find its config";
  }
  const std::string index = (folder_.path() / "cli.sqlite").string();
  Outcome found = run_command_line({"search", "--repo", kRepository.string(), "--json", "--index", index, "--limit",
                                    "2", "shared", "memory", "per", "block"});
  ASSERT_EQ(found.code, 0) << found.out << found.log;
  nlohmann::json report = nlohmann::json::parse(found.out);
  EXPECT_EQ(report.at("query"), "shared memory per block");
  EXPECT_EQ(report.at("results").size(), 2u);
  EXPECT_EQ(report.at("results").at(0).at("file"),
            "knowledge/handbook/00_foundations/04_target_hardware_and_quality_contract.md");
  EXPECT_TRUE(std::filesystem::exists(index));

  Outcome missing =
      run_command_line({"search", "--repo", kRepository.string(), "--index", index, "--", "--nothing-like-this-qqq"});
  EXPECT_EQ(missing.code, kExitNoMatch) << missing.out;

  Outcome bad_limit = run_command_line({"search", "--repo", kRepository.string(), "--limit", "0", "gemm"});
  EXPECT_NE(bad_limit.code, 0);
  EXPECT_NE(bad_limit.code, kExitNoMatch);
}

}  // namespace
}  // namespace dit::ar
