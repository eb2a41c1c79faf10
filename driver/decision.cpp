// Decision rules, in order of precedence: REJECTED; CRASH (a stage failed, a test crashed, timed
// out, was skipped or not run, a judge test wrote no report); DISCARD-QUALITY (a quality test or
// gate failed, whatever else failed beside it); CRASH (a correctness test failed with the quality
// intact); DISCARD-PERFORMANCE; KEEP.
#include "driver/decision.h"

#include <algorithm>
#include <set>

namespace dit::ar {

namespace {

std::string test_line(const TestResult& result) {
  std::string line = result.test.name + " " + to_string(result.outcome);
  if (!result.detail.empty()) line += " (" + result.detail + ")";
  // Every failed GoogleTest case by name (its values and bounds are in the test's log).
  if (!result.failed_cases.empty()) {
    line += ": " + std::to_string(result.failed_cases.size()) +
            (result.failed_cases.size() == 1 ? " failed case: " : " failed cases: ");
    for (size_t i = 0; i < result.failed_cases.size(); ++i) line += (i ? ", " : "") + result.failed_cases[i];
  }
  return line;
}

// "gate: reason" for each reason of each failed quality gate report (measured value and bound).
std::vector<std::string> gate_failures(const std::vector<nlohmann::json>& gate_reports) {
  std::vector<std::string> failures;
  for (const auto& report : gate_reports) {
    if (report.value("passed", false) || report.value("gate", "") == "performance") continue;
    const std::string gate = report.value("gate", "gate");
    const nlohmann::json reasons = report.value("reasons", nlohmann::json::array());
    if (!reasons.is_array() || reasons.empty()) failures.push_back(gate + ": failed (its report gives no reason)");
    for (const auto& reason : reasons)
      failures.push_back(gate + ": " + (reason.is_string() ? reason.get<std::string>() : reason.dump()));
  }
  return failures;
}

bool has_quality_label(const SelectedTest& test) { return test.has_label("quality") || test.has_label("critical"); }

}  // namespace

std::string to_string(Status status) {
  switch (status) {
    case Status::keep: return "KEEP";
    case Status::discard_quality: return "DISCARD-QUALITY";
    case Status::discard_performance: return "DISCARD-PERFORMANCE";
    case Status::crash: return "CRASH";
    case Status::rejected: return "REJECTED";
  }
  return "CRASH";
}

std::optional<nlohmann::json> performance_report(const std::vector<nlohmann::json>& gate_reports) {
  for (const auto& report : gate_reports) {
    if (report.value("gate", "") == "performance") return report;
  }
  return std::nullopt;
}

std::string quality_summary(const std::vector<TestResult>& tests) {
  int total = 0;
  std::vector<std::string> failing;
  for (const auto& result : tests) {
    if (!has_quality_label(result.test)) continue;
    ++total;
    if (result.outcome != TestOutcome::passed) failing.push_back(result.test.name);
  }
  if (total == 0) return "no quality tests";
  if (failing.empty()) return std::to_string(total) + "/" + std::to_string(total) + " quality tests passed";
  std::string names;
  for (const auto& name : failing) names += (names.empty() ? "" : ", ") + name;
  return std::to_string(failing.size()) + "/" + std::to_string(total) + " quality tests did not pass: " + names;
}

namespace {
Decision decide_without_notes(const RunFacts& facts);
}  // namespace

Decision decide(const RunFacts& facts) {
  Decision decision = decide_without_notes(facts);
  if (decision.status != Status::keep) {
    for (const auto& refusal : facts.sandbox_refusals)
      decision.reasons.push_back("the sandbox refused a write outside the candidate's folders: " + refusal);
  }
  return decision;
}

namespace {

Decision decide_without_notes(const RunFacts& facts) {
  Decision decision;
  auto crash = [&](std::vector<std::string> reasons) {
    decision.status = Status::crash;
    decision.reasons = std::move(reasons);
    return decision;
  };
  if (!facts.rejections.empty()) {
    decision.status = Status::rejected;
    decision.reasons = facts.rejections;
    return decision;
  }
  if (facts.stage_failure) return crash({*facts.stage_failure});
  if (facts.tests.empty()) return crash({"CTest selected no tests"});

  std::vector<std::string> crash_reasons;
  std::vector<std::string> failed_tests;  // correctness tests that ran and failed (unit, kernel)
  std::vector<std::string> quality_failures;
  std::vector<std::string> performance_failures;
  for (const auto& result : facts.tests) {
    switch (result.outcome) {
      case TestOutcome::passed: break;
      case TestOutcome::crashed:
      case TestOutcome::timed_out:
      case TestOutcome::skipped:
      case TestOutcome::not_run:
      case TestOutcome::missing: crash_reasons.push_back(test_line(result)); break;
      case TestOutcome::failed:
        if (has_quality_label(result.test))
          quality_failures.push_back(test_line(result));
        else if (result.test.has_label("perf"))
          performance_failures.push_back(test_line(result));
        else
          failed_tests.push_back(test_line(result));
        break;
    }
  }
  // A judge test that ran and wrote no report at its path did not judge.
  for (const auto& result : facts.tests) {
    if (!is_judge_test(result.test) || (result.outcome != TestOutcome::passed && result.outcome != TestOutcome::failed))
      continue;
    bool reported =
        std::any_of(facts.gate_reports.begin(), facts.gate_reports.end(),
                    [&](const nlohmann::json& report) { return report.value("test", "") == result.test.name; });
    if (!reported) crash_reasons.push_back("the judge test " + result.test.name + " wrote no report");
  }
  std::optional<nlohmann::json> performance = performance_report(facts.gate_reports);
  // Skipping is right after a quality failure (DISCARD-QUALITY), a test that failed or broke
  // (CRASH either way) or a performance gate that judged and did not pass (DISCARD-PERFORMANCE:
  // the candidate's other tests, which run after it); a skip with none of them crashes the run.
  const bool performance_discard = !performance_failures.empty() && performance && !performance->value("passed", false);
  const bool decided_by_a_test =
      !quality_failures.empty() || !failed_tests.empty() || !crash_reasons.empty() || performance_discard;
  if (!facts.skipped_presets.empty() && !decided_by_a_test)
    crash_reasons.push_back("test presets were skipped without a failing quality gate or test");
  if (!performance && facts.skipped_presets.empty())
    crash_reasons.push_back("the performance gate wrote no report (judge/gates/performance.json)");
  // A failed perf test without a failing verdict did not judge: it broke.
  if (!performance_failures.empty() && performance && performance->value("passed", false)) {
    crash_reasons.push_back("a perf test failed although the performance gate passed: " + performance_failures.front());
  }
  const std::vector<std::string> failed_gates = gate_failures(facts.gate_reports);
  // A wrong output that the quality gates measured is DISCARD-QUALITY, with the correctness tests
  // that failed beside it named; a failed correctness test with the quality intact is a CRASH.
  const bool quality_failed = !quality_failures.empty() || !failed_gates.empty();
  if (!quality_failed) crash_reasons.insert(crash_reasons.begin(), failed_tests.begin(), failed_tests.end());
  if (!crash_reasons.empty()) {
    // A CRASH names what else failed too: the quality tests and gates behind a numerical break.
    crash_reasons.insert(crash_reasons.end(), quality_failures.begin(), quality_failures.end());
    crash_reasons.insert(crash_reasons.end(), failed_gates.begin(), failed_gates.end());
    for (const auto& failure : performance_failures) crash_reasons.push_back(failure);
    if (decided_by_a_test)
      for (const auto& preset : facts.skipped_presets)
        crash_reasons.push_back("not run after the failure: test preset " + preset);
    return crash(crash_reasons);
  }

  quality_failures.insert(quality_failures.end(), failed_gates.begin(), failed_gates.end());
  if (!quality_failures.empty()) {
    decision.status = Status::discard_quality;
    decision.reasons = quality_failures;
    for (const auto& failure : failed_tests) decision.reasons.push_back("also failed: " + failure);
    for (const auto& preset : facts.skipped_presets)
      decision.reasons.push_back("not run after the quality failure: test preset " + preset);
    return decision;
  }
  if (!performance->value("passed", false)) {
    decision.status = Status::discard_performance;
    for (const auto& reason : performance->value("reasons", nlohmann::json::array()))
      decision.reasons.push_back(reason.is_string() ? reason.get<std::string>() : reason.dump());
    if (decision.reasons.empty()) decision.reasons = performance_failures;
    for (const auto& preset : facts.skipped_presets)
      decision.reasons.push_back("not run after the performance discard: test preset " + preset);
    return decision;
  }
  decision.status = Status::keep;
  return decision;
}

}  // namespace

}  // namespace dit::ar
