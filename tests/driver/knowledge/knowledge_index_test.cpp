// The knowledge index: Markdown sections, query text to FTS5 phrases, ranking of known queries
// on the real handbook, and re-indexing of a handbook that changed.
#include "driver/knowledge_index.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "tests/support/scratch_directory.h"

namespace dit::ar {
namespace {

const std::filesystem::path kHandbook = DIT_HANDBOOK_DIR;

TEST(KnowledgeSections, SplitsAtHeadingsWithTitlePathsAnchorsAndLines) {
  const std::string chapter =
      "# Attention on Ampere\n"
      "Intro text.\n"
      "\n"
      "## Head size 72: padding\n"
      "Pad to 96 in FlashAttention-2.\n"
      "```sh\n"
      "# not a heading inside a fence\n"
      "```\n"
      "### Bank conflicts\n"
      "None at 144 bytes.\n"
      "## Head size 72: padding\n"
      "A second section with the same heading.\n"
      "#NoSpaceIsNotAHeading\n";
  std::vector<HandbookSection> sections = split_sections(chapter, "03_single_gpu/02_attention.md");
  ASSERT_EQ(sections.size(), 4u);

  EXPECT_EQ(sections[0].title, "Attention on Ampere");
  EXPECT_EQ(sections[0].anchor, "attention-on-ampere");
  EXPECT_EQ(sections[0].line, 1);
  EXPECT_EQ(sections[0].body, "Intro text.\n\n");

  EXPECT_EQ(sections[1].title, "Attention on Ampere > Head size 72: padding");
  EXPECT_EQ(sections[1].anchor, "head-size-72-padding");
  EXPECT_EQ(sections[1].line, 4);
  EXPECT_NE(sections[1].body.find("# not a heading inside a fence"), std::string::npos);

  EXPECT_EQ(sections[2].title, "Attention on Ampere > Head size 72: padding > Bank conflicts");
  EXPECT_EQ(sections[2].anchor, "bank-conflicts");
  EXPECT_EQ(sections[2].line, 9);

  EXPECT_EQ(sections[3].title, "Attention on Ampere > Head size 72: padding");
  EXPECT_EQ(sections[3].anchor, "head-size-72-padding-1");
  EXPECT_EQ(sections[3].line, 11);
  EXPECT_NE(sections[3].body.find("#NoSpaceIsNotAHeading"), std::string::npos);
  for (const HandbookSection& section : sections) {
    EXPECT_EQ(section.path, "03_single_gpu/02_attention.md");
  }
}

TEST(KnowledgeSections, ChapterWithoutTitleIsNamedAfterItsFile) {
  std::vector<HandbookSection> sections = split_sections("plain text\r\n## Part\r\nmore\r\n", "x/07_notes.md");
  ASSERT_EQ(sections.size(), 2u);
  EXPECT_EQ(sections[0].title, "07_notes");
  EXPECT_EQ(sections[0].anchor, "");
  EXPECT_EQ(sections[1].title, "07_notes > Part");
  EXPECT_EQ(sections[1].body, "more\n");
}

TEST(KnowledgeSections, AnchorsFollowGitHub) {
  EXPECT_EQ(heading_anchor("Always pass --clock-control none"), "always-pass---clock-control-none");
  EXPECT_EQ(heading_anchor("Rung 1: host overhead (exact)"), "rung-1-host-overhead-exact");
  EXPECT_EQ(heading_anchor("`mma.sync` and sm_86"), "mmasync-and-sm_86");
}

TEST(KnowledgeQuery, EveryWordBecomesAQuotedPhrase) {
  EXPECT_TRUE(query_phrases("").empty());
  EXPECT_TRUE(query_phrases("   \t\n").empty());
  EXPECT_TRUE(query_phrases("!!! *** \"\" ^ : ( )").empty());
  EXPECT_EQ(query_phrases("head size 72"), (std::vector<std::string>{"\"head\"", "\"size\"", "\"72\""}));
  EXPECT_EQ(query_phrases("Mann-Whitney"), (std::vector<std::string>{"\"Mann Whitney\""}));
  EXPECT_EQ(query_phrases("\"head size\" AND NOT 72* ^pad title:attention NEAR(a b)"),
            (std::vector<std::string>{"\"head\"", "\"size\"", "\"AND\"", "\"NOT\"", "\"72\"", "\"pad\"", "\"title\"",
                                      "\"attention\"", "\"NEAR\"", "\"a\"", "\"b\""}));
  EXPECT_EQ(query_phrases("--clock-control sm_86 mma.sync A/A"),
            (std::vector<std::string>{"\"clock control\"", "\"sm 86\"", "\"mma sync\"", "\"A A\""}));
  // Repeated words (in any case) are searched once.
  EXPECT_EQ(query_phrases("GEMM gemm Gemm"), (std::vector<std::string>{"\"GEMM\""}));
}

TEST(KnowledgeQuery, Fts5StringDoublesEmbeddedQuotes) {
  EXPECT_EQ(fts5_string("a\"b"), "\"a\"\"b\"");
  EXPECT_EQ(fts5_string(""), "\"\"");
}

class HandbookSearch : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    folder_ = new test::ScratchDirectory();
    index_ = new KnowledgeIndex(kHandbook, folder_->path() / "state" / "knowledge.sqlite");
    IndexStatus status = index_->refresh();
    ASSERT_TRUE(status.rebuilt);
    ASSERT_GE(status.chapters, 25u) << "the handbook must hold at least 25 chapters";
  }
  static void TearDownTestSuite() {
    delete index_;
    delete folder_;
  }
  static SearchHit first(const std::string& query) {
    std::vector<SearchHit> hits = index_->search(query, 5);
    EXPECT_FALSE(hits.empty()) << query;
    return hits.empty() ? SearchHit{} : hits.front();
  }
  static test::ScratchDirectory* folder_;
  static KnowledgeIndex* index_;
};
test::ScratchDirectory* HandbookSearch::folder_ = nullptr;
KnowledgeIndex* HandbookSearch::index_ = nullptr;

TEST_F(HandbookSearch, KnownQueriesRankTheExpectedSectionFirst) {
  struct Case {
    const char* query;
    const char* path;
    const char* anchor;  // empty: any section of the chapter
  };
  const Case cases[] = {
      {"head size 72 padding", "03_single_gpu/03_head_size_72_and_padding.md", ""},
      {"Mann-Whitney", "00_foundations/03_noise_and_statistics.md",
       "mann-whitney-u-in-numbers-calculated-exact-distribution-no-ties"},
      {"shared memory per block", "00_foundations/04_target_hardware_and_quality_contract.md",
       "memory-bandwidth-l2-shared-memory-per-sm-and-per-block-registers"},
      {"tensor rates dense sparse", "00_foundations/04_target_hardware_and_quality_contract.md",
       "compute-sms-clocks-tensor-rates-dense-and-sparse"},
      {"A/A noise floor", "00_foundations/03_noise_and_statistics.md", "the-aa-noise-floor"},
      {"--clock-control none", "02_bottlenecks/05_nsight_a5500_profiling_workflow.md",
       "always-pass---clock-control-none"},
      {"cuBLASLt epilogue GELU bias", "03_single_gpu/01_gemms_and_cublaslt_epilogues.md", ""},
      {"precompute adaLN modulations", "03_single_gpu/09_adaln_precompute.md", ""},
      {"NVLink classifier-free guidance parallelism", "05_multi_gpu/01_two_gpu_strategies_and_nvlink.md", ""},
      {"H200 measurement A5500", "09_reference/08_h200_is_not_an_a5500.md", ""},
      {"Learning-to-Cache FID", "04_approximate/01_caching_and_step_reduction.md", ""},
      {"CUDA Graphs capture", "03_single_gpu/05_cuda_graphs.md", ""},
  };
  for (const Case& c : cases) {
    SearchHit hit = first(c.query);
    EXPECT_EQ(hit.path, c.path) << "query: " << c.query << "\nfirst hit: " << hit.title;
    if (*c.anchor != '\0') {
      EXPECT_EQ(hit.anchor, c.anchor) << "query: " << c.query;
    }
    EXPECT_TRUE(hit.matched_all_terms) << c.query;
    EXPECT_GT(hit.score, 0.0) << c.query;
  }
}

TEST_F(HandbookSearch, HitsCarryHighlightsLinesAndDescendingScores) {
  std::vector<SearchHit> hits = index_->search("Mann-Whitney", 10);
  ASSERT_GE(hits.size(), 2u);
  for (size_t i = 1; i < hits.size(); ++i) {
    if (hits[i].matched_all_terms == hits[i - 1].matched_all_terms) {
      EXPECT_LE(hits[i].score, hits[i - 1].score);
    }
  }
  const SearchHit& best = hits.front();
  EXPECT_NE(best.title_highlighted.find("**Mann-Whitney**"), std::string::npos) << best.title_highlighted;
  EXPECT_EQ(best.snippet.find('\n'), std::string::npos);
  // The line points at the section's heading in the chapter file.
  std::ifstream chapter(kHandbook / best.path);
  std::string line;
  for (int n = 0; n < best.line; ++n) std::getline(chapter, line);
  EXPECT_EQ(line.rfind("## Mann-Whitney U", 0), 0u) << line;
}

TEST_F(HandbookSearch, PartialMatchesComeAfterFullMatches) {
  std::vector<SearchHit> hits = index_->search("head size 72 qwertyuiopnotaword", 5);
  ASSERT_FALSE(hits.empty());
  for (const SearchHit& hit : hits) EXPECT_FALSE(hit.matched_all_terms);
  EXPECT_EQ(hits.front().path, "03_single_gpu/03_head_size_72_and_padding.md");
}

TEST_F(HandbookSearch, LimitIsRespected) {
  EXPECT_EQ(index_->search("the", 3).size(), 3u);
  EXPECT_EQ(index_->search("A5500", 1).size(), 1u);
  EXPECT_TRUE(index_->search("A5500", 0).empty());
}

void write_file(const std::filesystem::path& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  ASSERT_TRUE(out.good()) << path;
}

TEST(KnowledgeReindex, ChangedAddedAndRemovedChaptersAreReindexed) {
  test::ScratchDirectory folder;
  std::filesystem::path handbook = folder.path() / "handbook";
  std::filesystem::copy(kHandbook, handbook, std::filesystem::copy_options::recursive);
  std::filesystem::path index_path = folder.path() / "index.sqlite";
  const std::string chapter = "03_single_gpu/05_cuda_graphs.md";

  {
    KnowledgeIndex index(handbook, index_path);
    EXPECT_TRUE(index.refresh().rebuilt);
    EXPECT_FALSE(index.refresh().rebuilt) << "an unchanged handbook must not be rebuilt";
    EXPECT_TRUE(index.search("zanzibarquux", 5).empty());
  }

  // An appended section is found by a new process opening the same index file.
  {
    std::ofstream out(handbook / chapter, std::ios::app);
    out << "\n## Zanzibarquux replay\nThe zanzibarquux trick.\n";
  }
  {
    KnowledgeIndex index(handbook, index_path);
    IndexStatus status = index.refresh();
    EXPECT_TRUE(status.rebuilt);
    std::vector<SearchHit> hits = index.search("zanzibarquux", 5);
    ASSERT_EQ(hits.size(), 1u);
    EXPECT_EQ(hits[0].path, chapter);
    EXPECT_EQ(hits[0].anchor, "zanzibarquux-replay");
  }

  // A same-size edit (one letter) is noticed through the content hash.
  {
    KnowledgeIndex index(handbook, index_path);
    std::ifstream in(handbook / chapter, std::ios::binary);
    std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t at = content.find("zanzibarquux trick");
    ASSERT_NE(at, std::string::npos);
    content.replace(at, 12, "zanzibarquuy");
    write_file(handbook / chapter, content);
    EXPECT_TRUE(index.refresh().rebuilt);
    std::vector<SearchHit> hits = index.search("zanzibarquuy", 5);
    ASSERT_EQ(hits.size(), 1u);
    EXPECT_EQ(hits[0].anchor, "zanzibarquux-replay");
  }

  // A new chapter in a new topic folder, and a removed chapter.
  {
    std::filesystem::create_directories(handbook / "06_new_topic");
    write_file(handbook / "06_new_topic/01_fresh.md", "# Fresh chapter\n## Plover section\nplover words\n");
    std::filesystem::remove(handbook / chapter);
    KnowledgeIndex index(handbook, index_path);
    EXPECT_TRUE(index.refresh().rebuilt);
    std::vector<SearchHit> hits = index.search("plover", 5);
    ASSERT_EQ(hits.size(), 1u);
    EXPECT_EQ(hits[0].path, "06_new_topic/01_fresh.md");
    EXPECT_EQ(hits[0].title, "Fresh chapter > Plover section");
    EXPECT_TRUE(index.search("zanzibarquuy", 5).empty());
    for (const SearchHit& hit : index.search("CUDA Graphs capture replay", 20)) {
      EXPECT_NE(hit.path, chapter);
    }
  }
}

TEST(KnowledgeReindex, FolderReadmesAreNotChapters) {
  test::ScratchDirectory folder;
  write_file(folder.path() / "README.md", "# Handbook index\nkestrel\n");
  write_file(folder.path() / "01_one.md", "# One\nosprey\n");
  KnowledgeIndex index(folder.path(), folder.path() / "index.sqlite");
  IndexStatus status = index.refresh();
  EXPECT_EQ(status.chapters, 1u);
  EXPECT_TRUE(index.search("kestrel", 5).empty());
  EXPECT_EQ(index.search("osprey", 5).size(), 1u);
}

TEST(KnowledgeSetup, MissingOrEmptyHandbookIsAnIoError) {
  test::ScratchDirectory folder;
  KnowledgeIndex missing(folder.path() / "nope", folder.path() / "index.sqlite");
  try {
    missing.refresh();
    FAIL() << "expected dit::Error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::io);
    EXPECT_NE(std::string(error.what()).find("nope"), std::string::npos);
  }
  std::filesystem::create_directories(folder.path() / "empty");
  KnowledgeIndex empty(folder.path() / "empty", folder.path() / "index.sqlite");
  EXPECT_THROW(empty.refresh(), Error);
}

TEST(KnowledgeSetup, AFileThatIsNotAnIndexIsRefusedNotOverwritten) {
  test::ScratchDirectory folder;
  std::filesystem::path bogus = folder.path() / "notes.txt";
  const std::string content(4096, 'x');
  write_file(bogus, content);
  try {
    KnowledgeIndex index(kHandbook, bogus);
    FAIL() << "expected dit::Error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::invalid_file) << error.what();
    EXPECT_NE(std::string(error.what()).find("--index"), std::string::npos) << error.what();
  }
  std::ifstream in(bogus, std::ios::binary);
  std::string after((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(after, content);
}

}  // namespace
}  // namespace dit::ar
