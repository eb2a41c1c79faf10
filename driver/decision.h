// The keep/discard decision from a run's facts. A candidate that changed what judges it (its
// test set, fixed files, goldens, records, the best or the judge build) is REJECTED. Quality is
// a hard constraint; anything that prevents a full judgement (a build failure, a crash, a
// skipped or missing gate or report) is a CRASH, never a KEEP.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driver/ctest_results.h"

namespace dit::ar {

enum class Status { keep, discard_quality, discard_performance, crash, rejected };
std::string to_string(Status status);  // KEEP, DISCARD-QUALITY, DISCARD-PERFORMANCE, CRASH, REJECTED

struct RunFacts {
  std::optional<std::string> stage_failure;  // "build failed (exit code 1); see build.log"
  std::vector<TestResult> tests;
  // Read from the paths the driver named for the judge tests that ran:
  // {"gate", "passed", "reasons", "details", "file"}.
  std::vector<nlohmann::json> gate_reports;
  // What the candidate changed that it must not (its test set against the baseline's signature,
  // files and records after the run): any makes the run REJECTED.
  std::vector<std::string> rejections;
  // Writes the sandbox refused during the candidate's tests (a line of CTest's log each): added
  // to the reasons of a decision other than KEEP.
  std::vector<std::string> sandbox_refusals;
  std::string build_dir;
  std::string source_dir;
  // Test presets (or a preset's performance gate) not run because the decision was already made:
  // a quality gate failed (DISCARD-QUALITY) or a candidate test failed or broke (CRASH), so the
  // candidate's performance is not measured.
  std::vector<std::string> skipped_presets;
};

struct Decision {
  Status status = Status::crash;
  std::vector<std::string> reasons;
};

Decision decide(const RunFacts& facts);

// The performance gate's report among the gate reports, if any.
std::optional<nlohmann::json> performance_report(const std::vector<nlohmann::json>& gate_reports);

// "3/3 quality tests passed" or "1/3 quality tests failed: psnr_mean"; counts tests labelled
// quality or critical.
std::string quality_summary(const std::vector<TestResult>& tests);

}  // namespace dit::ar
