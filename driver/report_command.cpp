// dit-ar report: writes the session as one self-contained HTML page (driver/README.md).
// Exit 0 when written; 2 when the config or a state file (results.tsv, session.json,
// best.json) is malformed, naming the file and line.
#include <iostream>

#include <CLI/CLI.hpp>

#include "core/files.h"
#include "driver/report.h"
#include "driver/subcommands.h"

namespace dit::ar {

namespace {

constexpr const char* kDefaultReportName = "report.html";  // in the state directory

int run_report(const CommonOptions& options, const std::string& out) {
  Config config = load_session_config(options);
  ReportInput input = load_report_input(config);
  std::filesystem::path path = out.empty() ? config.state_dir / kDefaultReportName : std::filesystem::path(out);
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  write_file_atomic(path, render_report_html(input));
  std::cout << "dit-ar report: " << input.results.rows.size() << " row(s), " << input.gallery.size()
            << " quality case(s), " << input.benchmarks.size() << " benchmark file(s) compared\n";
  std::cout << "wrote " << std::filesystem::absolute(path).string() << "\n";
  return kExitKeep;
}

}  // namespace

void add_report_command(CLI::App& app, CommonOptions& options) {
  auto out = std::make_shared<std::string>();
  CLI::App* command = app.add_subcommand(
      "report",
      "Write the session as one self-contained HTML page (no scripts, no server): the objective over experiments, "
      "status counts, every results.tsv row, benchmark deltas between the baseline and the best, and per quality case "
      "the baseline image, the best image and their difference. Exit 2 when a state file is malformed.");
  command->add_option("--out", *out, "The HTML file to write (default: <state_dir>/report.html)");
  add_common_options(*command, options, false);
  command->callback([&options, out] { finish_with(run_report(options, *out)); });
}

}  // namespace dit::ar
