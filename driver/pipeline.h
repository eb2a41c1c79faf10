// One run of a commit in the driver's own trees: configure, build and each test preset through
// CTest, in separate views (ARCHITECTURE.md, "Judging a commit"): the candidate's configure,
// build and tests run in its tree (sandboxed where bwrap works) with nothing but their output
// folder; the tests labelled `judge` run afterwards from the judge's build of the locked tree,
// which alone sees the goldens and writes the reports the decision reads.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driver/config.h"
#include "driver/decision.h"
#include "driver/progress.h"
#include "driver/protection.h"

namespace dit::ar {

struct RunRequest {
  const Config* config = nullptr;
  const Lane* lane = nullptr;
  std::filesystem::path source_dir;           // the tree built and tested (candidate/src, best/src)
  std::filesystem::path run_dir;              // logs, listings, outputs/ and judge/
  std::filesystem::path best_build_dir;       // the best commit's build, for the performance gate
  std::filesystem::path best_cache_dir;       // the best side's CUDA JIT cache
  std::filesystem::path baseline_dir;         // the goldens
  std::filesystem::path judge_source_dir;     // the locked tree, with the judge's build inside
  std::filesystem::path cache_dir;            // this tree's CUDA JIT cache
  std::vector<std::filesystem::path> hidden;  // folders candidate processes must not see
  FileHashes judge_files;                     // the judge build's hashes, verified before it runs
  FileHashes goldens;                         // the goldens' hashes, verified before they are used
  std::string classification;                 // exact, numerical, approximate or quantization
  bool noise_measurement = false;             // the baseline's run: the performance gate measures A/A noise
  double min_improvement_percent = 0.0;       // the effective one, given to the performance gate
  // Per test preset, the baseline's test-set signature; absent while recording the baseline.
  std::optional<nlohmann::json> test_signature;
  ProgressReporter* progress = nullptr;  // each stage's start and end (driver/progress.h)
  // While a stage runs longer, a heartbeat this often (0: never) with its log's last line: build
  // steps, tests done of total, the performance gate's rounds.
  int heartbeat_seconds = 15;
  std::function<void(int process_group)> on_child;  // each child's group id, for inflight.json
  bool already_built = false;                       // run_commit skips configure and build
  // Whether the build may read the shared compiler cache (ccache, read-only for every tree). The
  // best's build does not: a candidate run without the sandbox can write that cache, and an entry
  // it planted would then be compiled into the side it is compared with.
  bool compiler_cache = true;
};

// Configure and build the request's tree in the candidate's view. Returns a failure
// description, or nothing on success. Logs are `<log_prefix>configure.log` and
// `<log_prefix>build.log` in the run directory.
std::optional<std::string> configure_and_build(const RunRequest& request, const std::string& log_prefix);

// Configure the judge's tree (request.judge_source_dir) with the lane's configure preset and
// build the config's judge targets there, outside any candidate view.
std::optional<std::string> configure_and_build_judge(const RunRequest& request);

// Configure, build, then every test preset: its listing (checked against the signature), the
// candidate's tests, then the judge's. Collects the results and the judge tests' reports.
RunFacts run_commit(const RunRequest& request);

// The tests of every preset as `ctest --show-only=json-v1` lists them in the request's build,
// as signatures (test_signature in ctest_results.h), keyed by preset. Used by the baseline.
std::optional<std::string> list_test_signatures(const RunRequest& request, nlohmann::json& signatures);

// Evidence that a run failed because the state directory's file system is full, not because of
// the commit: the file system holding `state_root` has less than 4 MiB available, or less than
// 64 MiB (or 1% of its size) with a log under `run_dir` (any *.log) that reports "No space
// left on device" (or "Disk quota exceeded"). Returns "No space left on device: <n> KiB
// available on <state_root>" and the log's line, or nothing.
std::optional<std::string> out_of_space_evidence(const std::filesystem::path& run_dir,
                                                 const std::filesystem::path& state_root);

// Makes the next configure of `folder` start from an empty folder, as after a configure that did
// not finish: for a run that filled the disk, where CMake may have written a torn CMakeCache.txt
// and still reported success.
void forget_configured(const std::filesystem::path& folder);

// Where the judge test `test` writes its report, relative to the run's judge folder.
std::string judge_report_path(const SelectedTest& test);

// Substitutes {source_dir} {build_dir} {judge_build_dir} {run_dir} {baseline_dir} {state_dir} {lane}.
std::string expand_placeholders(const std::string& text, const std::map<std::string, std::string>& values);

}  // namespace dit::ar
