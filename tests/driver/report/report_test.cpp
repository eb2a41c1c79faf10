// The report's parts in process (results.tsv strictness, the difference heatmap, base64, PNG)
// and dit-ar report as a program on an empty session and on a malformed results.tsv.
#include <gtest/gtest.h>

#include <array>
#include <fstream>

#include "core/files.h"
#include "driver/report.h"
#include "core/error.h"
#include "tests/driver/report/report_fixture.h"
#include "tests/support/scratch_directory.h"

namespace fs = std::filesystem;
using namespace dit;
using namespace dit::ar;
using namespace dit::ar::report_test;

namespace {

using TemporaryFolder = dit::test::ScratchDirectory;

const std::string kHeader =
    "timestamp\tcommit\tparent\tlane\tgpu\tstatus\tclassification\tobjective\tbest_before\tcandidate\t"
    "improvement_percent\tp_value\tpeak_memory\tquality\tdescription\trun_dir\n";

std::string row(const std::string& status, const std::string& candidate, const std::string& description = "d") {
  return "2026-11-29T10:00:00Z\tabc\t\tfixture\tgpu\t" + status + "\texact\tobj\t\t" + candidate + "\t\t\t\tpassed\t" +
         description + "\truns/0001-abc\n";
}

fs::path write_tsv(const fs::path& folder, const std::string& text) {
  fs::path path = folder / "results.tsv";
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::string error_of(const fs::path& path) {
  try {
    read_results_table(path);
  } catch (const dit::Error& error) {
    EXPECT_EQ(error.kind(), dit::ErrorKind::invalid_file);
    return error.what();
  }
  return "";
}

Image solid(int width, int height, unsigned char value) {
  return {width, height, std::vector<unsigned char>(static_cast<std::size_t>(width) * height * 3, value)};
}

}  // namespace

TEST(ReportResults, ReadsEveryRowWithItsLineAndCandidate) {
  TemporaryFolder folder;
  auto table = read_results_table(write_tsv(folder.path(), kHeader + row("KEEP", "100.5") + row("CRASH", "")));
  ASSERT_EQ(table.rows.size(), 2u);
  EXPECT_EQ(table.header.size(), 16u);
  EXPECT_EQ(table.rows[0].line, 2);
  EXPECT_DOUBLE_EQ(*table.rows[0].candidate, 100.5);
  EXPECT_EQ(table.rows[1].status, "CRASH");
  EXPECT_FALSE(table.rows[1].candidate.has_value());
  EXPECT_FALSE(table.torn_last_line);
}

TEST(ReportResults, MissingFileIsNoRows) {
  TemporaryFolder folder;
  auto table = read_results_table(folder.path() / "results.tsv");
  EXPECT_TRUE(table.rows.empty());
  EXPECT_TRUE(table.header.empty());
}

TEST(ReportResults, TornLastLineIsNotARow) {
  TemporaryFolder folder;
  std::string text = kHeader + row("KEEP", "1") + "2026-11-29T11:00:00Z\tdef\t";
  auto table = read_results_table(write_tsv(folder.path(), text));
  EXPECT_EQ(table.rows.size(), 1u);
  EXPECT_TRUE(table.torn_last_line);
}

TEST(ReportResults, MalformedLinesAreNamed) {
  TemporaryFolder folder;
  std::string short_row = "2026\tabc\tKEEP\n";
  std::string message = error_of(write_tsv(folder.path(), kHeader + row("KEEP", "1") + short_row));
  EXPECT_NE(message.find("results.tsv line 3: 3 tab-separated fields, but the header has 16"), std::string::npos)
      << message;

  message = error_of(write_tsv(folder.path(), kHeader + row("KEPT", "1")));
  EXPECT_NE(message.find("line 2: status 'KEPT'"), std::string::npos) << message;

  message = error_of(write_tsv(folder.path(), kHeader + row("KEEP", "1") + row("KEEP", "12ms")));
  EXPECT_NE(message.find("line 3: candidate '12ms' is not a number"), std::string::npos) << message;

  message = error_of(write_tsv(folder.path(), "timestamp\tcommit\tstatus\n" + row("KEEP", "1")));
  EXPECT_NE(message.find("line 1: the header has no 'classification' column"), std::string::npos) << message;

  message = error_of(write_tsv(folder.path(), kHeader + "\n"));
  EXPECT_NE(message.find("line 2: 1 tab-separated fields"), std::string::npos) << message;
}

TEST(ReportImages, IdenticalImagesGiveABlackHeatmap) {
  Image image = solid(8, 4, 77);
  DifferenceMap map = difference_heatmap(image, image);
  EXPECT_EQ(map.max_difference, 0);
  EXPECT_EQ(map.mean_difference, 0.0);
  ASSERT_EQ(map.heatmap.rgb.size(), 8u * 4u * 3u);
  for (unsigned char value : map.heatmap.rgb) ASSERT_EQ(value, 0);
}

TEST(ReportImages, HeatmapIsWhiteAtTheLargestDifferenceAndBlackWhereEqual) {
  Image baseline = solid(4, 4, 100);
  Image best = baseline;
  best.rgb[(1 * 4 + 2) * 3 + 1] = 140;  // pixel (2, 1), green +40
  best.rgb[(3 * 4 + 0) * 3 + 2] = 90;   // pixel (0, 3), blue -10
  DifferenceMap map = difference_heatmap(baseline, best);
  EXPECT_EQ(map.max_difference, 40);
  EXPECT_DOUBLE_EQ(map.mean_difference, 50.0 / 16.0);
  auto pixel = [&](int x, int y) {
    const unsigned char* at = &map.heatmap.rgb[(y * 4 + x) * 3];
    return std::array<int, 3>{at[0], at[1], at[2]};
  };
  EXPECT_EQ(pixel(2, 1), (std::array<int, 3>{255, 255, 255}));
  EXPECT_EQ(pixel(0, 0), (std::array<int, 3>{0, 0, 0}));
  auto small = pixel(0, 3);  // a quarter of the largest difference: dark red, neither black nor white
  EXPECT_GT(small[0], 50);
  EXPECT_LT(small[1], 60);
}

TEST(ReportImages, DifferentSizesAreRefused) {
  EXPECT_THROW(difference_heatmap(solid(4, 4, 0), solid(4, 5, 0)), dit::Error);
}

TEST(ReportImages, PngRoundTrip) {
  TemporaryFolder folder;
  Image image = solid(5, 3, 0);
  for (std::size_t i = 0; i < image.rgb.size(); ++i) image.rgb[i] = static_cast<unsigned char>(i * 17);
  write_file_atomic(folder.path() / "a.png", encode_png(image));
  Image read = read_png(folder.path() / "a.png");
  EXPECT_EQ(read.width, 5);
  EXPECT_EQ(read.height, 3);
  EXPECT_EQ(read.rgb, image.rgb);
  std::ofstream(folder.path() / "b.png") << "not a png";
  EXPECT_THROW(read_png(folder.path() / "b.png"), dit::Error);
}

TEST(ReportImages, Base64MatchesRfc4648) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64_encode(std::string("\xff\x00\x10", 3)), "/wAQ");
}

TEST(ReportHtml, EscapesMarkup) {
  EXPECT_EQ(html_escape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
}

TEST(ReportCommand, EmptySessionSaysSoInEverySection) {
  TemporaryFolder folder;
  write_empty_project(folder.path() / "repo", DIT_DRIVER_FIXTURE_DIR);
  fs::path page = folder.path() / "out" / "report.html";
  int status = run_command(std::string("'") + DIT_AR_PROGRAM + "' report --repo '" + (folder.path() / "repo").string() +
                           "' --out '" + page.string() + "' > '" + (folder.path() / "log").string() + "' 2>&1");
  ASSERT_EQ(status, 0) << read_file(folder.path() / "log");
  std::string html = read_file(page);
  EXPECT_NE(html.find("No research session"), std::string::npos);
  EXPECT_NE(html.find("No experiments yet: the chart appears"), std::string::npos);
  EXPECT_NE(html.find("No experiments yet: results.tsv has no rows"), std::string::npos);
  EXPECT_NE(html.find("No baseline or best recorded yet"), std::string::npos);
  EXPECT_NE(html.find("No images"), std::string::npos);
  EXPECT_EQ(html.find("class=\"point "), std::string::npos);
}

TEST(ReportCommand, MalformedResultsExitTwoNamingTheLine) {
  TemporaryFolder folder;
  FixtureFacts facts = write_fixture_project(folder.path() / "repo", DIT_DRIVER_FIXTURE_DIR);
  {
    std::ofstream results(facts.state_dir / "results.tsv", std::ios::app);
    results << "2026-11-29T20:00:00Z\tfeed\tKEEP\n";
  }
  fs::path log = folder.path() / "log";
  int status = run_command(std::string("'") + DIT_AR_PROGRAM + "' report --repo '" + facts.repository.string() +
                           "' --out '" + (folder.path() / "r.html").string() + "' > '" + log.string() + "' 2>&1");
  std::string output = read_file(log);
  EXPECT_EQ(status, 2) << output;
  EXPECT_NE(output.find("results.tsv line " + std::to_string(facts.rows + 2) + ": 3 tab-separated fields"),
            std::string::npos)
      << output;
  EXPECT_FALSE(fs::exists(folder.path() / "r.html"));
}
