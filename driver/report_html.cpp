// The report page: one HTML file with its CSS, SVG and images inline, readable without
// scripts or a server. Each section says plainly when there is nothing to show yet.
#include <algorithm>
#include <cstdlib>
#include <iomanip>
#include <map>
#include <sstream>

#include "driver/report.h"
#include "core/error.h"

namespace dit::ar {

namespace {

const std::vector<std::string> kStatusOrder{"KEEP", "DISCARD-PERFORMANCE", "DISCARD-QUALITY", "CRASH", "REJECTED"};
const std::vector<std::string> kLeadingColumns{
    "commit", "status", "classification", "candidate", "best_before", "improvement_percent", "p_value", "description"};
// Columns holding a full commit id, shown shortened with the full id as a tooltip.
const std::vector<std::string> kCommitColumns{"commit", "parent"};

constexpr const char* kStyle = R"CSS(
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d2430; margin: 0; background: #fff; }
main { max-width: 1240px; margin: 0 auto; padding: 24px 20px 48px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 32px 0 10px; border-bottom: 1px solid #d8dde6; padding-bottom: 4px; }
h3 { font-size: 15px; margin: 18px 0 8px; }
.meta { color: #5a6474; margin: 0 0 4px; }
.empty { color: #5a6474; font-style: italic; background: #f4f6f9; padding: 10px 14px; border-radius: 6px; }
.note { color: #8a5a00; }
.counts { display: flex; flex-wrap: wrap; gap: 10px; padding: 0; list-style: none; }
.counts li { border-radius: 6px; padding: 8px 14px; background: #f4f6f9; border-left: 6px solid #9aa3b0; }
.counts .count { font-size: 22px; font-weight: 600; display: block; }
.counts .keep { border-color: #1f9d55; } .counts .discard-performance, .counts .discard-quality { border-color: #9aa3b0; }
.counts .crash { border-color: #d62728; } .counts .rejected { border-color: #e07b00; } .counts .baseline { border-color: #1f4e9d; }
.chart { overflow-x: auto; }
.objective-chart { font-size: 12px; background: #fff; }
.objective-chart .grid { stroke: #e6e9ef; stroke-width: 1; }
.objective-chart .axis { stroke: #5a6474; stroke-width: 1; }
.objective-chart .tick, .objective-chart .strip-label { fill: #5a6474; }
.objective-chart .axis-label { fill: #1d2430; font-size: 13px; }
.objective-chart .baseline-line { stroke: #1f4e9d; stroke-width: 1.5; stroke-dasharray: 6 4; }
.objective-chart .baseline-label { fill: #1f4e9d; }
.objective-chart .running-best { fill: none; stroke: #1f9d55; stroke-width: 2.5; }
.objective-chart .noise-band { fill: #1f9d55; fill-opacity: 0.22; stroke: none; }
.objective-chart .point.keep { fill: #1f9d55; stroke: #0f5e31; stroke-width: 1; }
.objective-chart .point.discard-performance, .objective-chart .point.discard-quality { fill: #b3b9c4; stroke: #7d8592; stroke-width: 1; }
.objective-chart .point.crash { stroke: #d62728; stroke-width: 2.5; fill: none; }
.objective-chart .point.rejected { stroke: #e07b00; stroke-width: 2.5; fill: none; }
.objective-chart .point.baseline { fill: #1f4e9d; stroke: #0d2a5c; stroke-width: 1.5; }
.legend { display: flex; flex-wrap: wrap; gap: 16px; color: #3a4352; margin: 6px 0 0 110px; }
.legend span::before { content: ""; display: inline-block; width: 12px; height: 12px; margin-right: 6px; vertical-align: -1px; border-radius: 50%; }
.legend .keep::before { background: #1f9d55; } .legend .discard::before { background: #b3b9c4; }
.legend .discard-quality::before { background: #b3b9c4; border-radius: 0; transform: rotate(45deg) scale(0.8); }
.legend .crash::before { background: #d62728; border-radius: 2px; width: 4px; }
.legend .rejected::before { background: #e07b00; border-radius: 2px; width: 4px; }
.legend .baseline::before { background: #1f4e9d; }
.legend .running-best::before { background: #1f9d55; height: 3px; border-radius: 0; width: 22px; vertical-align: 3px; }
.legend .noise-band::before { background: rgba(31, 157, 85, 0.22); border-radius: 0; width: 22px; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; font-size: 12.5px; }
th, td { border-bottom: 1px solid #e6e9ef; padding: 4px 8px; text-align: left; vertical-align: top; white-space: nowrap; }
td.text { white-space: normal; min-width: 260px; }
th { background: #f4f6f9; position: sticky; top: 0; white-space: nowrap; }
td.number { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.commit { font-family: ui-monospace, Menlo, Consolas, monospace; }
td.status { font-weight: 600; white-space: nowrap; }
tr.keep td.status { color: #1f9d55; } tr.crash td.status { color: #d62728; } tr.rejected td.status { color: #e07b00; }
tr.discard-quality td.status, tr.discard-performance td.status { color: #6b7380; }
td.faster { color: #1f9d55; } td.slower { color: #d62728; }
.gallery { display: flex; flex-direction: column; gap: 18px; }
figure.case { margin: 0; }
figure.case figcaption { font-weight: 600; margin-bottom: 6px; }
.triplet { display: flex; gap: 14px; flex-wrap: wrap; }
.triplet div { text-align: center; font-size: 12px; color: #5a6474; }
.triplet img { display: block; width: 256px; height: auto; image-rendering: pixelated; border: 1px solid #d8dde6; margin-bottom: 4px; }
.triplet .missing { width: 256px; height: 120px; display: flex; align-items: center; justify-content: center; background: #f4f6f9; border: 1px dashed #b3b9c4; }
)CSS";

std::string lower_case(std::string text) {
  for (char& character : text) character = static_cast<char>(std::tolower(static_cast<unsigned char>(character)));
  return text;
}

std::string number(double value, int precision = 6) {
  std::ostringstream text;
  text << std::setprecision(precision) << value;
  return text.str();
}

std::string percent(double value) {
  std::ostringstream text;
  text << std::showpos << std::fixed << std::setprecision(2) << value << "%";
  return text.str();
}

bool looks_numeric(const std::string& text) {
  if (text.empty()) return false;
  char* end = nullptr;
  std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size();
}

void header_section(std::ostream& html, const ReportInput& input) {
  html << "<header>\n<h1>" << html_escape(input.project.empty() ? "DiT AutoResearch" : input.project)
       << ": research report</h1>\n";
  if (!input.has_session) {
    html << "<p class=\"empty\">No research session in " << html_escape(input.state_dir.string())
         << " yet: start one with <code>dit-ar init</code> on a branch autoresearch/&lt;tag&gt;, then <code>dit-ar "
            "baseline</code>.</p>\n";
  } else {
    html << "<p class=\"meta\">branch <b>" << html_escape(input.session.value("branch", "?")) << "</b>, lane <b>"
         << html_escape(input.lane) << "</b>";
    if (input.session.contains("baseline") && input.session["baseline"].is_object()) {
      html << ", on " << html_escape(input.session["baseline"].value("gpu", "an unrecorded GPU"));
    }
    html << "</p>\n";
  }
  if (!input.objective_label.empty())
    html << "<p class=\"meta\">objective: " << html_escape(input.objective_label) << "</p>\n";
  if (input.best && input.best->is_object()) {
    const auto& best = *input.best;
    html << "<p class=\"meta\">best commit <code>" << html_escape(best.value("commit", "").substr(0, 12)) << "</code>";
    if (best.contains("value") && best["value"].is_number()) {
      html << ": " << number(best["value"].get<double>()) << " " << html_escape(best.value("unit", input.unit));
    }
    if (input.best_is_baseline) html << " (the baseline)";
    html << "</p>\n";
  }
  html << "<p class=\"meta\">state directory " << html_escape(input.state_dir.string()) << ", generated "
       << html_escape(input.generated_at) << "</p>\n";
  for (const auto& note : input.notes) html << "<p class=\"note\">" << html_escape(note) << "</p>\n";
  html << "</header>\n";
}

void counts_section(std::ostream& html, const ReportInput& input) {
  html << "<section id=\"counts\">\n<h2>Status counts</h2>\n";
  std::map<std::string, int> counts;
  int experiments = 0;
  bool baseline_recorded = false;
  for (const auto& row : input.results.rows) {
    if (row.is_baseline()) {
      baseline_recorded = baseline_recorded || row.status == "KEEP";
      continue;
    }
    ++experiments;
    ++counts[row.status];
  }
  if (input.results.rows.empty()) {
    html << "<p class=\"empty\">No experiments yet: results.tsv has no rows.</p>\n</section>\n";
    return;
  }
  html << "<p>" << experiments << " experiment(s) after the baseline"
       << (baseline_recorded ? "" : " (no baseline recorded)") << ".</p>\n<ul class=\"counts\">\n";
  html << "<li class=\"baseline\" data-status=\"baseline\"><span class=\"count\">" << (baseline_recorded ? 1 : 0)
       << "</span>baseline</li>\n";
  for (const auto& status : kStatusOrder) {
    html << "<li class=\"" << lower_case(status) << "\" data-status=\"" << status << "\"><span class=\"count\">"
         << counts[status] << "</span>" << status << "</li>\n";
  }
  html << "</ul>\n</section>\n";
}

void chart_section(std::ostream& html, const ReportInput& input) {
  html << "<section id=\"objective\">\n<h2>Objective over experiments</h2>\n";
  if (input.results.rows.empty()) {
    html << "<p class=\"empty\">No experiments yet: the chart appears after <code>dit-ar "
            "baseline</code>.</p>\n</section>\n";
    return;
  }
  html << "<p class=\"meta\">Each point is the commit's median as the performance gate measured it, interleaved in "
          "the same rounds as the best it was compared with; the running best is, at each experiment, that best's "
          "median from the same rounds, and at a KEEP the kept candidate's. A point is compared with the line at its "
          "own x: both were measured the same way (the same processes, in the same warm state). The baseline is drawn "
          "as measured beside the first experiment compared with it, not at its own A/A run, the session's first and "
          "often cold measurement (its title gives both). ";
  if (input.noise_percent) {
    html << "The shaded band is the running best &#177;" << number(*input.noise_percent, 4)
         << "%, the noise the baseline's A/A run measured: a point inside it is within noise of the best. ";
  } else {
    html << "No noise band: session.json records no baseline noise_percent. ";
  }
  html << "Hover a marker for its commit and description.</p>\n";
  html << "<div class=\"chart\">" << render_objective_chart(input) << "</div>\n";
  html << "<div class=\"legend\"><span class=\"baseline\">baseline</span><span class=\"keep\">KEEP</span>"
          "<span class=\"discard\">DISCARD-PERFORMANCE</span><span class=\"discard-quality\">DISCARD-QUALITY</span>"
          "<span class=\"crash\">CRASH</span><span class=\"rejected\">REJECTED</span>"
          "<span class=\"running-best\">running best (the best as measured beside each experiment)</span>";
  if (input.noise_percent)
    html << "<span class=\"noise-band\">noise &#177;" << number(*input.noise_percent, 4) << "%</span>";
  html << "</div>\n</section>\n";
}

void results_section(std::ostream& html, const ReportInput& input) {
  html << "<section id=\"results\">\n<h2>Results</h2>\n";
  if (input.results.rows.empty()) {
    html << "<p class=\"empty\">No experiments yet: results.tsv has no rows.</p>\n";
  } else {
    // What a reader scans first leads; every other column follows in the file's order.
    std::vector<std::size_t> order;
    for (const auto& name : kLeadingColumns) {
      auto found = std::find(input.results.header.begin(), input.results.header.end(), name);
      if (found != input.results.header.end())
        order.push_back(static_cast<std::size_t>(found - input.results.header.begin()));
    }
    for (std::size_t column = 0; column < input.results.header.size(); ++column) {
      if (std::find(order.begin(), order.end(), column) == order.end()) order.push_back(column);
    }
    html << "<p class=\"meta\">candidate and best_before: the commit's and the best's medians, measured interleaved "
            "in the same rounds; improvement_percent compares the two. p_value (Mann-Whitney U over the samples) is "
            "reported, not decided on: the gate keeps a commit when the Hodges-Lehmann estimate of the improvement "
            "(from the logarithms of each process's median) reaches the lane's minimum and the lower end of its rank "
            "interval exceeds half of it. It looks after every round from the 4th (with the lane's default of at most "
            "20 rounds), keeps from the 5th, the keep intervals sharing a false-keep rate of 1% over all looks "
            "(Bonferroni), stops early when the upper end of a 95% interval falls below the minimum, and discards "
            "what is unsettled after the last round.</p>\n";
    html << "<div class=\"table-wrap\"><table class=\"results\">\n<thead><tr><th>#</th>";
    for (std::size_t column : order) html << "<th>" << html_escape(input.results.header[column]) << "</th>";
    html << "</tr></thead>\n<tbody>\n";
    for (std::size_t index = 0; index < input.results.rows.size(); ++index) {
      const auto& row = input.results.rows[index];
      html << "<tr class=\"result-row " << lower_case(row.status) << "\" data-line=\"" << row.line
           << "\"><td class=\"number\">" << index << "</td>";
      for (std::size_t column : order) {
        const std::string& name = input.results.header[column];
        const std::string& value = row.fields[column];
        bool is_commit = std::find(kCommitColumns.begin(), kCommitColumns.end(), name) != kCommitColumns.end();
        if (is_commit) {
          html << "<td class=\"commit\" title=\"" << html_escape(value) << "\">" << html_escape(value.substr(0, 8))
               << "</td>";
        } else if (name == "status") {
          html << "<td class=\"status\">" << html_escape(value) << "</td>";
        } else if (looks_numeric(value)) {
          html << "<td class=\"number\">" << html_escape(value) << "</td>";
        } else {
          html << "<td" << (name == "description" || name == "quality" ? " class=\"text\"" : "") << ">"
               << html_escape(value) << "</td>";
        }
      }
      html << "</tr>\n";
    }
    html << "</tbody></table></div>\n";
  }
  if (input.results.torn_last_line) {
    html << "<p class=\"note\">The last line of results.tsv is incomplete (a writer was killed mid-line); like dit-ar, "
            "the "
            "report does not count it as a row.</p>\n";
  }
  html << "</section>\n";
}

void benchmark_section(std::ostream& html, const ReportInput& input) {
  html << "<section id=\"benchmarks\">\n<h2>Benchmarks: baseline and best</h2>\n";
  if (input.baseline_run_dir.empty() || input.best_run_dir.empty()) {
    html << "<p class=\"empty\">No baseline or best recorded yet, so nothing to compare.</p>\n</section>\n";
    return;
  }
  if (input.best_is_baseline) {
    html << "<p class=\"empty\">The best is still the baseline (" << html_escape(input.baseline_run_dir)
         << "): no KEEP yet, so there are no deltas.</p>\n</section>\n";
    return;
  }
  if (input.benchmarks.empty()) {
    html << "<p class=\"empty\">No benchmark JSON in both " << html_escape(input.baseline_run_dir) << "/bench/ and "
         << html_escape(input.best_run_dir) << "/bench/ (the bench binaries write &lt;name&gt;.json there when a test "
         << "preset runs them).</p>\n</section>\n";
    return;
  }
  html << "<p class=\"meta\">Median real time per benchmark in the baseline's run ("
       << html_escape(input.baseline_run_dir) << ") and the best's (" << html_escape(input.best_run_dir)
       << "). These are the smoke runs of each test preset, measured in different runs: a hint of where time moved, "
          "not a "
          "decision (the performance gate decides, interleaved).</p>\n";
  for (const auto& file : input.benchmarks) {
    html << "<h3>" << html_escape(file.file_name)
         << "</h3>\n<div class=\"table-wrap\"><table class=\"benchmarks\" data-file=\"" << html_escape(file.file_name)
         << "\">\n<thead><tr><th>benchmark</th><th>baseline</th><th>best</th><th>delta</th>"
         << "<th>unit</th><th>note</th></tr></thead>\n<tbody>\n";
    for (const auto& delta : file.deltas) {
      html << "<tr class=\"benchmark-row\"><td>" << html_escape(delta.name) << "</td><td class=\"number\">"
           << (delta.baseline_time ? number(*delta.baseline_time) : "&mdash;") << "</td><td class=\"number\">"
           << (delta.best_time ? number(*delta.best_time) : "&mdash;") << "</td>";
      if (delta.baseline_time && delta.best_time && *delta.baseline_time > 0) {
        double change = (*delta.best_time - *delta.baseline_time) / *delta.baseline_time * 100.0;
        html << "<td class=\"number "
             << (change < 0   ? "faster"
                 : change > 0 ? "slower"
                              : "")
             << "\">" << percent(change) << "</td>";
      } else {
        html << "<td class=\"number\">&mdash;</td>";
      }
      std::string note = delta.error;
      if (note.empty() && !delta.baseline_time) note = "only in the best's run";
      if (note.empty() && !delta.best_time) note = "only in the baseline's run";
      html << "<td>" << html_escape(delta.unit) << "</td><td>" << html_escape(note) << "</td></tr>\n";
    }
    html << "</tbody></table></div>\n";
  }
  html << "</section>\n";
}

void gallery_image(std::ostream& html, const std::string& png_bytes, const std::string& kind, const std::string& alt,
                   const std::string& caption) {
  html << "<div><img class=\"case-image " << kind << "\" alt=\"" << html_escape(alt) << "\" src=\""
       << png_data_uri(png_bytes) << "\">" << html_escape(caption) << "</div>";
}

void gallery_missing(std::ostream& html, const std::string& what) {
  html << "<div><div class=\"missing\">" << html_escape(what) << "</div></div>";
}

void gallery_section(std::ostream& html, const ReportInput& input) {
  html << "<section id=\"gallery\">\n<h2>Quality cases: baseline, best, difference</h2>\n";
  if (input.gallery.empty()) {
    html << "<p class=\"empty\">No images: the baseline has no rendered quality cases (golden PNGs under "
         << html_escape((input.state_dir / "baseline" / "quality").string())
         << "/&lt;set&gt;/golden/).</p>\n</section>\n";
    return;
  }
  html
      << "<p class=\"meta\">Baseline: the golden render recorded by <code>dit-ar baseline</code>. Best: the best "
         "commit's "
         "render in its run directory. Difference: per pixel the largest channel difference, black where identical and "
         "white at the largest difference in that image.</p>\n<div class=\"gallery\">\n";
  for (const auto& gallery_case : input.gallery) {
    html << "<figure class=\"case\" data-set=\"" << html_escape(gallery_case.set) << "\" data-case=\""
         << html_escape(gallery_case.case_id) << "\"><figcaption>" << html_escape(gallery_case.set) << " / "
         << html_escape(gallery_case.case_id) << "</figcaption><div class=\"triplet\">";
    std::optional<Image> baseline, best;
    try {
      baseline = read_png(gallery_case.baseline_image);
      gallery_image(html, encode_png(*baseline), "baseline", gallery_case.case_id + " baseline", "baseline");
    } catch (const Error& error) {
      gallery_missing(html, std::string("baseline image unreadable: ") + error.what());
    }
    if (gallery_case.best_image.empty()) {
      gallery_missing(html, "no render of this case in the best's run directory");
    } else {
      try {
        best = read_png(gallery_case.best_image);
        gallery_image(html, encode_png(*best), "best", gallery_case.case_id + " best", "best");
      } catch (const Error& error) {
        gallery_missing(html, std::string("best image unreadable: ") + error.what());
      }
    }
    if (baseline && best) {
      try {
        DifferenceMap map = difference_heatmap(*baseline, *best);
        std::string caption = map.max_difference == 0 ? "identical"
                                                      : "max " + std::to_string(map.max_difference) + " levels, mean " +
                                                            number(map.mean_difference, 3);
        gallery_image(html, encode_png(map.heatmap), "difference", gallery_case.case_id + " difference", caption);
      } catch (const Error& error) {
        gallery_missing(html, std::string("no difference: ") + error.what());
      }
    } else {
      gallery_missing(html, "no difference without both images");
    }
    html << "</div></figure>\n";
  }
  html << "</div>\n</section>\n";
}

}  // namespace

std::string html_escape(const std::string& text) {
  std::string escaped;
  escaped.reserve(text.size());
  for (char character : text) {
    switch (character) {
      case '&': escaped += "&amp;"; break;
      case '<': escaped += "&lt;"; break;
      case '>': escaped += "&gt;"; break;
      case '"': escaped += "&quot;"; break;
      case '\'': escaped += "&#39;"; break;
      default: escaped += character;
    }
  }
  return escaped;
}

std::string render_report_html(const ReportInput& input) {
  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
       << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>"
       << html_escape(input.project.empty() ? "DiT AutoResearch" : input.project) << " research report</title>\n<style>"
       << kStyle << "</style>\n</head>\n<body>\n<main>\n";
  header_section(html, input);
  counts_section(html, input);
  chart_section(html, input);
  results_section(html, input);
  benchmark_section(html, input);
  gallery_section(html, input);
  html << "</main>\n</body>\n</html>\n";
  return html.str();
}

}  // namespace dit::ar
