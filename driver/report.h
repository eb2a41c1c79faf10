// dit-ar report: the research session as one self-contained HTML page (driver/README.md).
// Reading the state directory (report_input.cpp, report_results.cpp), the parts of the page
// (report_svg.cpp: the objective chart; report_images.cpp: PNG decoding, the difference
// heatmap, data: URIs; report_html.cpp: the page) and the command (report_command.cpp).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/image.h"
#include "driver/config.h"

namespace dit::ar {

// One row of results.tsv, its fields in the header's order, plus what the chart needs.
struct ResultRow {
  int line = 0;                     // line number in results.tsv (the header is line 1)
  std::vector<std::string> fields;  // as in the file
  std::string status;               // KEEP, DISCARD-QUALITY, DISCARD-PERFORMANCE, CRASH, REJECTED
  std::string classification;       // "baseline" for the baseline row
  std::string commit;
  std::string description;
  std::string run_dir;
  std::optional<double> candidate;    // the objective measured for this commit, if it was
  std::optional<double> best_before;  // the best's objective, measured in the same gate rounds
  bool is_baseline() const { return classification == "baseline"; }
};

struct ResultsTable {
  std::vector<std::string> header;
  std::vector<ResultRow> rows;
  bool torn_last_line = false;  // a last line without newline (a killed writer): not a row, as in dit-ar
};

// Reads results.tsv strictly: a header holding the columns the report reads, then rows of
// exactly as many fields, each with a known status and a numeric (or empty) candidate and
// best_before (a column older files may lack).
// A missing file is an empty table. Throws dit::Error(invalid_file) naming the file and line.
ResultsTable read_results_table(const std::filesystem::path& path);

// One benchmark entry's time in the baseline's and the best's run directory.
struct BenchmarkDelta {
  std::string name;
  std::optional<double> baseline_time;  // in `unit`; absent when only one side has the entry
  std::optional<double> best_time;
  std::string unit;
  std::string error;  // a SkipWithError message on either side
};

// The deltas of one Google Benchmark JSON file present in both run directories' bench/.
struct BenchmarkFile {
  std::string file_name;  // "bench_kernels.json"
  std::vector<BenchmarkDelta> deltas;
};

// One quality case: the baseline's image, the best's, and the heatmap of their difference.
struct GalleryCase {
  std::string set;  // the gate set ("cpu", "gpu")
  std::string case_id;
  std::filesystem::path baseline_image;  // empty when missing
  std::filesystem::path best_image;      // empty when missing
};

struct ReportInput {
  std::string project;
  std::filesystem::path state_dir;
  bool has_session = false;
  nlohmann::json session;              // session.json, or an empty object
  std::optional<nlohmann::json> best;  // best.json
  std::string lane;
  std::string objective_label;  // "BM_E2E_Image/256 real_time (ms, lower is better)"
  std::string unit;
  bool lower_is_better = true;
  std::optional<double> noise_percent;  // session.json baseline.noise_percent: the A/A run's noise
  ResultsTable results;
  std::string baseline_run_dir;  // relative to the state directory; empty when none
  std::string best_run_dir;
  bool best_is_baseline = false;
  std::vector<BenchmarkFile> benchmarks;
  std::vector<std::string> notes;  // what could not be read, said on the page
  std::vector<GalleryCase> gallery;
  std::string generated_at;  // UTC timestamp
};

// Everything the page shows, from the config's state directory. Throws dit::Error for a
// malformed results.tsv, session.json or best.json; a missing part is left empty.
ReportInput load_report_input(const Config& config);

// What the chart plots: values measured the same way as the best they were compared with. The
// performance gate measures the candidate and the best interleaved in the same rounds, so a
// row's candidate is comparable with its best_before, not with a value of another gate run (the
// baseline's own A/A run is the session's first, often cold, measurement, with another process
// count).
struct ComparableSeries {
  // Per row, the value drawn: the candidate, or for the baseline the baseline as the gate measured
  // it beside the first experiment compared with it (its own A/A value when none was).
  std::vector<std::optional<double>> plotted;
  std::vector<bool> paired;  // the row's value has its best measured in the same rounds
  // For a baseline row drawn at another run's value, that row (else nothing).
  std::vector<std::optional<std::size_t>> measured_beside;
  // The running best as (row, value) vertices of a step line: at each paired row the best as
  // measured there, then at a KEEP the kept candidate; held to the last row.
  std::vector<std::pair<std::size_t, double>> running_best;
  std::optional<std::size_t> baseline_row;  // the last baseline KEEP row
};
ComparableSeries comparable_series(const ReportInput& input);

// The objective over experiments as an inline <svg>: one marker per row (class "point", its
// drawn value in data-value), the running best (class "running-best", its vertices' values in
// data-values) and, with a noise_percent, the band of that noise around it (class "noise-band").
std::string render_objective_chart(const ReportInput& input);

// The per-pixel difference of two images of one size: the largest channel difference, mapped
// black (identical) through red and yellow to white (the largest difference in the image).
struct DifferenceMap {
  Image heatmap;
  int max_difference = 0;      // in 8-bit levels
  double mean_difference = 0;  // over pixels, of the per-pixel largest channel difference
};
DifferenceMap difference_heatmap(const Image& baseline, const Image& best);

std::string base64_encode(const std::string& bytes);
std::string png_data_uri(const std::string& png_bytes);

// The whole page.
std::string render_report_html(const ReportInput& input);

// Escapes & < > " ' for HTML text and attribute values.
std::string html_escape(const std::string& text);

}  // namespace dit::ar
