// A research session's state directory written through the driver's own record types
// (StateDirectory, ExperimentRecord), so it has dit-ar's layout by construction: a baseline (its
// A/A value cold, nine times the warm value the experiments measure it at) and seven
// experiments of every status with the best's median of the same rounds, benchmark JSON in the
// baseline's and the best's run directories, and golden and best renders of three quality cases.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace dit::ar::report_test {

struct FixtureFacts {
  std::filesystem::path repository;  // a git working tree holding config/autoresearch.json
  std::filesystem::path state_dir;   // <repository>/.autoresearch
  int rows = 0;                      // results.tsv rows, the baseline's included
  int measured_rows = 0;             // rows with a candidate value
  std::vector<std::string> cases;    // quality cases with a golden and a best image
  int benchmark_rows = 0;            // rows of the bench_kernels.json delta table
  double noise_percent = 0;          // session.json baseline.noise_percent
  double baseline_recorded = 0;      // the baseline row's candidate: its A/A run, cold and slow
  double baseline_comparable = 0;    // the baseline as measured beside the first experiment
};

// A fresh temporary folder under the system's temporary directory, removed by the caller.
std::filesystem::path make_temporary_folder(const std::string& prefix);

// Writes the repository (git init, config copied from the driver's fixture project) and its
// full state directory into `root`.
FixtureFacts write_fixture_project(const std::filesystem::path& root, const std::filesystem::path& driver_fixture);

// Only the repository and config: a session with no state yet.
void write_empty_project(const std::filesystem::path& root, const std::filesystem::path& driver_fixture);

// Runs a shell command line; returns its exit status (-1 when it did not exit normally).
int run_command(const std::string& command_line);

std::string read_file(const std::filesystem::path& path);

}  // namespace dit::ar::report_test
