// The report's parts in process (results.tsv strictness, the chart's comparable values and noise
// band, the difference heatmap, base64, PNG) and dit-ar report as a program on an empty session,
// on the fixture session and on a malformed results.tsv.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

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

std::string row_with_best(const std::string& status, const std::string& best_before, const std::string& candidate) {
  return "2026-11-29T10:00:00Z\tabc\t\tfixture\tgpu\t" + status + "\texact\tobj\t" + best_before + "\t" + candidate +
         "\t\t\t\tpassed\td\truns/0001-abc\n";
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

// The chart as drawn: the running best's vertices (their values and y coordinates) and each
// marker's drawn value and y coordinate, by row.
struct DrawnChart {
  std::vector<double> running_best_values;
  std::vector<double> running_best_y;
  std::map<std::size_t, double> marker_value;
  std::map<std::size_t, double> marker_y;
  std::size_t noise_bands = 0;
  std::size_t noise_band_vertices = 0;
};

std::vector<double> numbers(const std::string& text) {
  std::vector<double> values;
  std::istringstream stream(text);
  for (double value; stream >> value;) values.push_back(value);
  return values;
}

DrawnChart read_chart(const std::string& svg) {
  DrawnChart chart;
  std::smatch match;
  if (std::regex_search(svg, match,
                        std::regex(R"re(<polyline class="running-best" data-values="([^"]*)" points="([^"]*)")re"))) {
    chart.running_best_values = numbers(match[1].str());
    std::string points = match[2].str();
    std::replace(points.begin(), points.end(), ',', ' ');
    std::vector<double> coordinates = numbers(points);
    for (std::size_t i = 1; i < coordinates.size(); i += 2) chart.running_best_y.push_back(coordinates[i]);
  }
  const std::regex circle(
      R"re(<circle class="point [^"]*" data-row="(\d+)"[^>]*data-value="([^"]+)" cx="[^"]+" cy="([^"]+)")re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), circle); it != std::sregex_iterator(); ++it) {
    const std::size_t row = std::stoul((*it)[1].str());
    chart.marker_value[row] = std::stod((*it)[2].str());
    chart.marker_y[row] = std::stod((*it)[3].str());
  }
  const std::regex band(R"re(<polygon class="noise-band"[^>]* points="([^"]*)")re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), band); it != std::sregex_iterator(); ++it) {
    ++chart.noise_bands;
    chart.noise_band_vertices = numbers(std::regex_replace((*it)[1].str(), std::regex(","), " ")).size() / 2;
  }
  return chart;
}

// The fixture's results.tsv and noise as the report reads them.
ReportInput fixture_input(const fs::path& root, FixtureFacts& facts) {
  facts = write_fixture_project(root, DIT_DRIVER_FIXTURE_DIR);
  ReportInput input;
  input.results = read_results_table(facts.state_dir / "results.tsv");
  input.unit = "ms";
  input.noise_percent = facts.noise_percent;
  return input;
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

TEST(ReportResults, ReadsTheBestMeasuredInTheSameRounds) {
  TemporaryFolder folder;
  auto table = read_results_table(write_tsv(folder.path(), kHeader + row_with_best("KEEP", "", "100") +
                                                               row_with_best("DISCARD-PERFORMANCE", "25.7", "26.4")));
  ASSERT_EQ(table.rows.size(), 2u);
  EXPECT_FALSE(table.rows[0].best_before.has_value());
  EXPECT_DOUBLE_EQ(*table.rows[1].best_before, 25.7);
  EXPECT_DOUBLE_EQ(*table.rows[1].candidate, 26.4);
  std::string message =
      error_of(write_tsv(folder.path(), kHeader + row_with_best("DISCARD-PERFORMANCE", "fast", "26.4")));
  EXPECT_NE(message.find("line 2: best_before 'fast' is not a number"), std::string::npos) << message;
}

// Issue #29: the baseline's A/A run (900 ms, cold) is nine times the 100.4 ms the gate measures
// the same commit at beside the first experiment; drawing the running best at the A/A value made
// the no-gain discard beside it look nine times faster.
TEST(ReportChart, RunningBestIsTheBestAsMeasuredBesideEachExperiment) {
  TemporaryFolder folder;
  FixtureFacts facts;
  const ReportInput input = fixture_input(folder.path() / "repo", facts);
  ASSERT_GT(facts.baseline_recorded, 5 * facts.baseline_comparable);
  const ComparableSeries series = comparable_series(input);
  ASSERT_TRUE(series.plotted[0].has_value());
  EXPECT_DOUBLE_EQ(*series.plotted[0], facts.baseline_comparable);
  EXPECT_EQ(series.measured_beside[0], std::optional<std::size_t>(1));

  double highest_comparable = 0;
  for (const auto& row : input.results.rows) {
    if (row.best_before) highest_comparable = std::max(highest_comparable, *row.best_before);
  }
  const std::vector<std::pair<std::size_t, double>> expected{{0, 100.4}, {1, 100.4}, {2, 100.4}, {2, 99.6},
                                                             {2, 92.0},  {3, 92.0},  {3, 92.3},  {6, 92.3},
                                                             {6, 91.8},  {6, 80.5},  {7, 80.5},  {7, 80.9}};
  EXPECT_EQ(series.running_best, expected);

  const DrawnChart chart = read_chart(render_objective_chart(input));
  ASSERT_FALSE(chart.running_best_values.empty());
  EXPECT_DOUBLE_EQ(chart.running_best_values.front(), facts.baseline_comparable);
  EXPECT_LE(*std::max_element(chart.running_best_values.begin(), chart.running_best_values.end()),
            highest_comparable * (1 + facts.noise_percent / 100))
      << "the running best sits above every value the gate measured the best at";
  ASSERT_EQ(chart.marker_value.count(0), 1u);
  EXPECT_DOUBLE_EQ(chart.marker_value.at(0), facts.baseline_comparable);
  // Drawn, too: the line starts at the baseline marker, and the no-gain discard (0.6% slower than
  // the best of its rounds) sits just above it, not far below.
  ASSERT_EQ(chart.running_best_y.size(), chart.running_best_values.size());
  EXPECT_NEAR(chart.running_best_y.front(), chart.marker_y.at(0), 0.15);
  const double discard_above_line = chart.running_best_y.front() - chart.marker_y.at(1);
  EXPECT_GE(discard_above_line, 0.0);
  EXPECT_LT(discard_above_line, 20.0) << "the discard is drawn far from the best it was compared with";
}

TEST(ReportChart, NoiseBandSurroundsTheRunningBest) {
  TemporaryFolder folder;
  FixtureFacts facts;
  ReportInput input = fixture_input(folder.path() / "repo", facts);
  const std::string svg = render_objective_chart(input);
  const DrawnChart chart = read_chart(svg);
  EXPECT_EQ(chart.noise_bands, 1u);
  EXPECT_EQ(chart.noise_band_vertices, 2 * chart.running_best_values.size());
  EXPECT_NE(svg.find("data-noise-percent=\"0.4\""), std::string::npos);
  // It lies under the line it surrounds.
  EXPECT_LT(svg.find("class=\"noise-band\""), svg.find("class=\"running-best\""));

  input.noise_percent.reset();
  EXPECT_EQ(read_chart(render_objective_chart(input)).noise_bands, 0u);
}

TEST(ReportChart, AFirstExperimentKeptGivesTheBaselineItsComparableValue) {
  TemporaryFolder folder;
  ReportInput input;
  input.results = read_results_table(
      write_tsv(folder.path(), kHeader + row_with_best("KEEP", "", "900") + row_with_best("KEEP", "100", "90")));
  input.results.rows[0].classification = "baseline";
  const ComparableSeries series = comparable_series(input);
  EXPECT_EQ(series.plotted, (std::vector<std::optional<double>>{100.0, 90.0}));
  EXPECT_EQ(series.measured_beside[0], std::optional<std::size_t>(1));
  const std::vector<std::pair<std::size_t, double>> expected{{0, 100.0}, {1, 100.0}, {1, 90.0}};
  EXPECT_EQ(series.running_best, expected);
}

TEST(ReportChart, RowsWithoutTheBestOfTheirRoundsKeepTheirValue) {
  TemporaryFolder folder;
  ReportInput input;
  input.results = read_results_table(write_tsv(folder.path(), kHeader + row_with_best("KEEP", "", "50") +
                                                                  row_with_best("KEEP", "", "40") +
                                                                  row_with_best("DISCARD-PERFORMANCE", "", "45")));
  input.results.rows[0].classification = "baseline";
  const ComparableSeries series = comparable_series(input);
  EXPECT_EQ(series.plotted, (std::vector<std::optional<double>>{50.0, 40.0, 45.0}));
  EXPECT_EQ(series.paired, (std::vector<bool>{false, false, false}));
  const std::vector<std::pair<std::size_t, double>> expected{{0, 50.0}, {1, 50.0}, {1, 40.0}, {2, 40.0}};
  EXPECT_EQ(series.running_best, expected);
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

TEST(ReportCommand, FixtureChartSaysWhatItPlotsAndDrawsTheNoise) {
  TemporaryFolder folder;
  FixtureFacts facts = write_fixture_project(folder.path() / "repo", DIT_DRIVER_FIXTURE_DIR);
  fs::path page = folder.path() / "report.html";
  int status = run_command(std::string("'") + DIT_AR_PROGRAM + "' report --repo '" + facts.repository.string() +
                           "' --out '" + page.string() + "' > '" + (folder.path() / "log").string() + "' 2>&1");
  ASSERT_EQ(status, 0) << read_file(folder.path() / "log");
  const std::string html = read_file(page);
  const DrawnChart chart = read_chart(html);
  EXPECT_EQ(chart.noise_bands, 1u);
  ASSERT_FALSE(chart.running_best_values.empty());
  EXPECT_DOUBLE_EQ(chart.running_best_values.front(), facts.baseline_comparable);
  EXPECT_NE(html.find("interleaved in the same rounds as the best it was compared with"), std::string::npos);
  EXPECT_NE(html.find("The shaded band is the running best &#177;0.4%"), std::string::npos);
  EXPECT_NE(html.find("<span class=\"noise-band\">noise &#177;0.4%</span>"), std::string::npos);
  EXPECT_NE(html.find("as measured beside #1 (its own A/A run: 900 ms)"), std::string::npos);
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
