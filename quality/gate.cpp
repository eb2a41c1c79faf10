// Fixed during a session (quality/ is the evaluator; see quality/README.md).
#include "quality/gate.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace dit::quality {

namespace {

using nlohmann::json;

json number(double value) { return std::isfinite(value) ? json(value) : json(nullptr); }

std::string format(double value) {
  if (!std::isfinite(value)) return "non-finite";
  std::ostringstream out;
  out.precision(6);
  out << value;
  return out.str();
}

// One metric of one case: appends reasons on failure, returns the per-case details.
json judge_score(const GateInputs& inputs, const MetricRule& rule, const std::string& case_id, bool strict,
                 std::vector<std::string>& reasons) {
  const std::string& metric = rule.name;
  json detail = {{"case", case_id}, {"metric", metric}};
  if (!inputs.baseline.has(case_id, metric)) {
    reasons.push_back(case_id + ": the baseline has no " + metric + " score (re-record the baseline)");
    detail["passed"] = false;
    return detail;
  }
  if (!inputs.candidate.has(case_id, metric)) {
    std::string why = case_id + ": the candidate has no " + metric + " score";
    if (auto notes = inputs.candidate.problems.find(case_id);
        notes != inputs.candidate.problems.end() && !notes->second.empty())
      why += " (" + notes->second.front() + ")";
    reasons.push_back(why);
    detail["passed"] = false;
    return detail;
  }
  const double baseline = inputs.baseline.at(case_id, metric);
  const double candidate = inputs.candidate.at(case_id, metric);
  const double threshold = rule.threshold(baseline);
  const bool within = rule.within_threshold(candidate, baseline);
  bool passed = within && std::isfinite(baseline);
  detail["baseline"] = number(baseline);
  detail["candidate"] = number(candidate);
  detail["threshold"] = number(threshold);
  if (!std::isfinite(baseline)) {
    reasons.push_back(case_id + ": the baseline's " + metric + " score is not finite");
  } else if (strict) {
    const bool no_worse = rule.no_worse(candidate, baseline);
    if (!no_worse)
      reasons.push_back(case_id + ": " + metric + " " + format(candidate) + " is worse than the baseline's " +
                        format(baseline) + " (strict zero regression)");
    const bool passed_at_baseline = rule.within_threshold(baseline, baseline);
    if (passed_at_baseline && !within) reasons.push_back(case_id + ": passed " + metric + " at baseline and fails now");
    passed = no_worse && (within || !passed_at_baseline);
  } else if (!within) {
    reasons.push_back(case_id + ": " + metric + " " + format(candidate) + " misses the threshold " + format(threshold) +
                      " (baseline " + format(baseline) + ")");
  }
  detail["passed"] = passed;
  return detail;
}

json aggregate_json(const Aggregate& a) {
  return {{"cases", a.cases}, {"mean", number(a.mean)}, {"worst", number(a.worst)}};
}

}  // namespace

json GateReport::to_json() const {
  return {{"gate", gate}, {"passed", passed}, {"reasons", reasons}, {"details", details}};
}

std::vector<std::string> case_failures(const Contract& contract, const std::string& case_id, const ScoreSet& baseline,
                                       const ScoreSet& scores) {
  std::vector<std::string> reasons;
  for (const std::string& metric : contract.required_metrics) {
    const MetricRule& rule = contract.rule(metric);
    if (!scores.has(case_id, metric) || !baseline.has(case_id, metric)) {
      reasons.push_back(case_id + ": no " + metric + " score");
    } else if (!rule.within_threshold(scores.at(case_id, metric), baseline.at(case_id, metric))) {
      reasons.push_back(case_id + ": " + metric + " " + format(scores.at(case_id, metric)) + " misses the threshold " +
                        format(rule.threshold(baseline.at(case_id, metric))));
    }
  }
  return reasons;
}

GateReport gate_metric(const GateInputs& inputs, const std::string& metric, const std::string& gate_name) {
  GateReport report;
  report.gate = gate_name;
  const bool strict = inputs.contract.strict_for(inputs.classification);
  report.details = {{"metric", metric},
                    {"classification", classification_name(inputs.classification)},
                    {"strict_zero_regression", strict},
                    {"cases", json::array()}};
  if (!inputs.contract.metrics.count(metric)) {
    report.reasons.push_back("the contract has no rule for metric " + metric);
    return report;
  }
  const MetricRule& rule = inputs.contract.rule(metric);
  report.details["direction"] = rule.direction == Direction::higher_is_better ? "higher" : "lower";
  report.details["allowed_regression"] = {{"absolute", rule.allowed_absolute}, {"relative", rule.allowed_relative}};
  report.details["floor"] = rule.floor ? json(*rule.floor) : json(nullptr);
  for (const std::string& id : inputs.case_ids) {
    report.details["cases"].push_back(judge_score(inputs, rule, id, strict, report.reasons));
  }
  const Aggregate baseline = inputs.baseline.aggregate(metric, rule.direction);
  const Aggregate candidate = inputs.candidate.aggregate(metric, rule.direction);
  report.details["aggregate"] = {{"baseline", aggregate_json(baseline)}, {"candidate", aggregate_json(candidate)}};
  if (strict && candidate.cases > 0 && baseline.cases > 0) {
    if (!rule.no_worse(candidate.mean, baseline.mean))
      report.reasons.push_back("mean " + metric + " " + format(candidate.mean) + " is worse than the baseline's " +
                               format(baseline.mean) + " (strict zero regression)");
    if (!rule.no_worse(candidate.worst, baseline.worst))
      report.reasons.push_back("worst-case " + metric + " " + format(candidate.worst) +
                               " is worse than the baseline's " + format(baseline.worst) + " (strict zero regression)");
  }
  report.passed = report.reasons.empty();
  return report;
}

GateReport gate_critical_case(const GateInputs& inputs, const std::string& case_id, const std::string& gate_name) {
  GateReport report;
  report.gate = gate_name;
  const bool strict = inputs.contract.strict_for(inputs.classification);
  report.details = {{"case", case_id},
                    {"classification", classification_name(inputs.classification)},
                    {"strict_zero_regression", strict},
                    {"metrics", json::array()}};
  if (std::find(inputs.case_ids.begin(), inputs.case_ids.end(), case_id) == inputs.case_ids.end()) {
    report.reasons.push_back("critical case " + case_id + " is not in the corpus");
    return report;
  }
  for (const std::string& metric : inputs.contract.required_metrics) {
    report.details["metrics"].push_back(
        judge_score(inputs, inputs.contract.rule(metric), case_id, strict, report.reasons));
  }
  const bool passed_at_baseline = case_failures(inputs.contract, case_id, inputs.baseline, inputs.baseline).empty();
  report.details["passed_at_baseline"] = passed_at_baseline;
  if (!report.reasons.empty())
    report.reasons.insert(report.reasons.begin(),
                          passed_at_baseline ? "critical case " + case_id + " passed at baseline and fails now"
                                             : "critical case " + case_id + " fails (it failed at baseline too)");
  report.passed = report.reasons.empty();
  return report;
}

}  // namespace dit::quality
