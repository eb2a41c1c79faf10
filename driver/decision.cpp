// Decision rules, in order of precedence: CRASH, DISCARD-QUALITY, DISCARD-PERFORMANCE, KEEP.
#include "driver/decision.h"

#include <algorithm>
#include <set>

namespace dit::ar {

namespace {

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  if (from.empty()) return text;
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

std::string test_line(const TestResult& result) {
  std::string line = result.test.name + " " + to_string(result.outcome);
  if (!result.detail.empty()) line += " (" + result.detail + ")";
  return line;
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

int exit_code(Status status) { return status == Status::keep ? 0 : 3; }

std::vector<GateSignature> gate_signatures(const std::vector<TestResult>& results, const std::string& build_dir,
                                           const std::string& source_dir) {
  std::set<GateSignature> gates;
  for (const auto& result : results) {
    if (!is_gate(result.test)) continue;
    std::string command;
    for (const auto& argument : result.test.command) command += (command.empty() ? "" : " ") + argument;
    command = replace_all(replace_all(command, build_dir, "{build_dir}"), source_dir, "{source_dir}");
    gates.insert({result.test.name, command});
  }
  return {gates.begin(), gates.end()};
}

nlohmann::json to_json(const std::vector<GateSignature>& gates) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& gate : gates) list.push_back({{"name", gate.name}, {"command", gate.command}});
  return list;
}

std::vector<GateSignature> gates_from_json(const nlohmann::json& document) {
  std::vector<GateSignature> gates;
  for (const auto& entry : document) gates.push_back({entry.at("name"), entry.at("command")});
  std::sort(gates.begin(), gates.end());
  return gates;
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

Decision decide(const RunFacts& facts) {
  Decision decision;
  auto crash = [&](std::vector<std::string> reasons) {
    decision.status = Status::crash;
    decision.reasons = std::move(reasons);
    return decision;
  };
  if (facts.stage_failure) return crash({*facts.stage_failure});
  if (facts.tests.empty()) return crash({"CTest selected no tests"});

  std::vector<std::string> crash_reasons;
  if (facts.baseline_gates) {
    std::vector<GateSignature> now = gate_signatures(facts.tests, facts.build_dir, facts.source_dir);
    std::set<GateSignature> before(facts.baseline_gates->begin(), facts.baseline_gates->end());
    std::set<GateSignature> after(now.begin(), now.end());
    // After a quality failure the later presets' gates did not run: only what ran is compared.
    for (const auto& gate : before) {
      if (!after.count(gate) && facts.skipped_presets.empty())
        crash_reasons.push_back("gate test missing or changed since the baseline: " + gate.name);
    }
    for (const auto& gate : after) {
      if (!before.count(gate)) crash_reasons.push_back("gate test not in the baseline's set: " + gate.name);
    }
  }
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
          crash_reasons.push_back(test_line(result));
        break;
    }
  }
  if (!facts.skipped_presets.empty() && quality_failures.empty())
    crash_reasons.push_back("test presets were skipped without a failing quality gate");
  std::optional<nlohmann::json> performance = performance_report(facts.gate_reports);
  if (!performance && facts.skipped_presets.empty())
    crash_reasons.push_back("the performance gate wrote no report (gates/performance.json)");
  // A failed perf test without a failing verdict did not judge: it broke.
  if (!performance_failures.empty() && performance && performance->value("passed", false)) {
    crash_reasons.push_back("a perf test failed although the performance gate passed: " + performance_failures.front());
  }
  if (!crash_reasons.empty()) return crash(crash_reasons);

  for (const auto& report : facts.gate_reports) {
    if (report.value("passed", false) || report.value("gate", "") == "performance") continue;
    for (const auto& reason : report.value("reasons", nlohmann::json::array())) {
      quality_failures.push_back(report.value("gate", "gate") + ": " + reason.get<std::string>());
    }
  }
  if (!quality_failures.empty()) {
    decision.status = Status::discard_quality;
    decision.reasons = quality_failures;
    for (const auto& preset : facts.skipped_presets)
      decision.reasons.push_back("not run after the quality failure: test preset " + preset);
    return decision;
  }
  if (!performance->value("passed", false)) {
    decision.status = Status::discard_performance;
    for (const auto& reason : performance->value("reasons", nlohmann::json::array())) {
      decision.reasons.push_back(reason.get<std::string>());
    }
    if (decision.reasons.empty()) decision.reasons = performance_failures;
    return decision;
  }
  decision.status = Status::keep;
  return decision;
}

}  // namespace dit::ar
