// The keep/discard decision from a run's facts. Quality is a hard constraint; anything that
// prevents a full judgement (a build failure, a crash, a skipped or missing gate, a gate set
// that differs from the baseline's) is a CRASH, never a KEEP.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driver/ctest_results.h"

namespace dit::ar {

enum class Status { keep, discard_quality, discard_performance, crash, rejected };
std::string to_string(Status status);  // KEEP, DISCARD-QUALITY, DISCARD-PERFORMANCE, CRASH, REJECTED
int exit_code(Status status);          // 0 for KEEP, 3 otherwise

// A gate test as the baseline recorded it: name and command, with the build and source
// folders written as {build_dir} and {source_dir} so two builds of one tree compare equal.
struct GateSignature {
  std::string name;
  std::string command;
  bool operator<(const GateSignature& other) const {
    return name != other.name ? name < other.name : command < other.command;
  }
  bool operator==(const GateSignature& other) const = default;
};
std::vector<GateSignature> gate_signatures(const std::vector<TestResult>& results, const std::string& build_dir,
                                           const std::string& source_dir);
nlohmann::json to_json(const std::vector<GateSignature>& gates);
std::vector<GateSignature> gates_from_json(const nlohmann::json& document);

struct RunFacts {
  std::optional<std::string> stage_failure;  // "build failed (exit code 1); see build.log"
  std::vector<TestResult> tests;
  std::vector<nlohmann::json> gate_reports;                  // {"gate", "passed", "reasons", "details"}
  std::optional<std::vector<GateSignature>> baseline_gates;  // absent while recording the baseline
  std::string build_dir;
  std::string source_dir;
  // Test presets not run because a quality gate of an earlier preset had already failed (the
  // candidate is discarded whatever they would say, so its performance is not measured).
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
