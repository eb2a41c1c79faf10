// One run of a commit: configure, build, and each test preset through CTest, as child
// processes with the session's timeouts and the driver/test environment of ARCHITECTURE.md
// (Between the driver and the tests). Produces the RunFacts the decision reads; logs go to the
// run directory.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <ostream>
#include <string>

#include "driver/config.h"
#include "driver/decision.h"
#include "driver/state_directory.h"

namespace dit::ar {

struct RunRequest {
  const Config* config = nullptr;
  const Lane* lane = nullptr;
  std::filesystem::path source_dir;  // the tree to build (the checkout, or best/src)
  std::filesystem::path run_dir;
  std::filesystem::path best_build_dir;
  std::filesystem::path baseline_dir;
  std::string classification;                       // exact, numerical, approximate or quantization
  bool noise_measurement = false;                   // the baseline's run: the performance gate measures A/A noise
  double min_improvement_percent = 0.0;             // the effective one, written to lane.json
  std::ostream* progress = nullptr;                 // one line per stage
  std::function<void(int process_group)> on_child;  // each child's group id, for inflight.json
  bool already_built = false;                       // run_commit skips configure and build
};

// DIT_RUN_DIR, DIT_BASELINE_DIR, DIT_BEST_BUILD_DIR, DIT_CLASSIFICATION, DIT_LANE.
std::map<std::string, std::string> test_environment(const RunRequest& request);

// Configure and build only (used for the best commit's tree). Returns a failure description,
// or nothing on success. Logs are `<log_prefix>configure.log` and `<log_prefix>build.log`.
std::optional<std::string> configure_and_build(const RunRequest& request, const std::string& log_prefix);

// Configure, build, then every test preset; collects results and gate reports.
RunFacts run_commit(const RunRequest& request);

// Every JSON file under the run directory shaped like a gate report.
std::vector<nlohmann::json> collect_gate_reports(const std::filesystem::path& run_dir);

// Substitutes {source_dir} {build_dir} {run_dir} {baseline_dir} {state_dir} {lane}.
std::string expand_placeholders(const std::string& text, const std::map<std::string, std::string>& values);

}  // namespace dit::ar
