// Decision rules of the performance gate; every reason names the numbers behind it.
#include "driver/performance_gate.h"

#include <cmath>
#include <set>
#include <sstream>

#include "core/files.h"
#include "driver/statistics.h"
#include "core/error.h"

namespace dit::ar {

namespace {

std::string format(double value, int digits = 4) {
  std::ostringstream text;
  text.precision(digits);
  text << value;
  return text.str();
}

// Regression in percent of `reference` (positive is worse), for a quantity where `direction`
// says which way is better.
double regression_percent(Direction direction, double candidate, double reference) {
  return -improvement_percent(direction, candidate, reference);
}

void check_guardrail(GateReport& report, nlohmann::json& record, const std::string& what, Direction direction,
                     double candidate, double reference, double limit_percent, const std::string& against) {
  double regression = regression_percent(direction, candidate, reference);
  bool ok = regression <= limit_percent;
  record.push_back({{"measure", what},
                    {"against", against},
                    {"candidate", candidate},
                    {"reference", reference},
                    {"regression_percent", regression},
                    {"limit_percent", limit_percent},
                    {"passed", ok}});
  if (!ok) {
    report.reasons.push_back(what + " regressed " + format(regression) + "% against the " + against + " (" +
                             format(candidate) + " vs " + format(reference) + "; limit " + format(limit_percent) +
                             "%)");
  }
}

std::string trimmed(std::string text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  std::size_t start = 0;
  while (start < text.size() && std::isspace(static_cast<unsigned char>(text[start]))) ++start;
  return text.substr(start);
}

std::optional<std::string> consistent_hash(const Measurement& measurement, GateReport& report,
                                           const std::string& side) {
  if (measurement.hashes.empty()) return std::nullopt;
  std::set<std::string> distinct(measurement.hashes.begin(), measurement.hashes.end());
  if (distinct.size() > 1) {
    report.reasons.push_back("the " + side + " reported " + std::to_string(distinct.size()) +
                             " different output hashes across runs (nondeterministic output)");
  }
  return *distinct.begin();
}

}  // namespace

void add_run(Measurement& measurement, const std::vector<BenchmarkEntry>& entries, const Lane& lane) {
  for (const auto& entry : entries) {
    if (!entry_matches(entry, lane.objective.name)) continue;
    if (!entry.error_message.empty()) {
      throw Error(ErrorKind::invalid_file, "benchmark " + entry.name + " failed: " + entry.error_message);
    }
    measurement.samples.push_back(entry_value(entry, lane.objective.metric, lane.objective.unit));
    if (!lane.guardrails.p95_counter.empty()) {
      measurement.p95_counter.push_back(entry_value(entry, lane.guardrails.p95_counter, lane.objective.unit));
    }
    if (!lane.guardrails.peak_memory_counter.empty()) {
      measurement.peak_memory.push_back(entry_value(entry, lane.guardrails.peak_memory_counter, ""));
    }
    if (auto hash = entry_hash(entry)) measurement.hashes.push_back(*hash);
    if (auto reported_case = label_token(entry, "case")) measurement.cases.push_back(*reported_case);
  }
}

nlohmann::json Summary::to_json() const {
  nlohmann::json document{{"median", median}, {"p95", p95}, {"count", count}};
  document["peak_memory"] = peak_memory ? nlohmann::json(*peak_memory) : nlohmann::json(nullptr);
  return document;
}

Summary Summary::from_json(const nlohmann::json& document) {
  Summary summary;
  summary.median = document.at("median").get<double>();
  summary.p95 = document.at("p95").get<double>();
  summary.count = document.value("count", std::size_t{0});
  if (document.contains("peak_memory") && document["peak_memory"].is_number()) {
    summary.peak_memory = document["peak_memory"].get<double>();
  }
  return summary;
}

Summary summarize(const Measurement& measurement) {
  Summary summary;
  summary.count = measurement.samples.size();
  summary.median = median(measurement.samples);
  summary.p95 =
      measurement.p95_counter.empty() ? percentile(measurement.samples, 0.95) : median(measurement.p95_counter);
  if (!measurement.peak_memory.empty()) {
    double peak = 0.0;
    for (double value : measurement.peak_memory) peak = std::max(peak, value);
    summary.peak_memory = peak;
  }
  return summary;
}

nlohmann::json GateReport::to_json() const {
  return {{"gate", gate}, {"passed", passed}, {"reasons", reasons}, {"details", details}};
}

double effective_min_improvement_percent(double configured_percent, double noise_percent) {
  return std::max(configured_percent, kNoiseMultiple * noise_percent);
}

double improvement_percent(Direction direction, double candidate, double reference) {
  if (reference == 0.0) return 0.0;
  double change = (reference - candidate) / std::abs(reference) * 100.0;
  return direction == Direction::lower ? change : -change;
}

GateReport evaluate_performance(const Lane& lane, double min_improvement_percent, const Measurement& candidate,
                                const Measurement& best, const std::optional<Summary>& baseline,
                                const std::optional<std::string>& expected_hash) {
  GateReport report;
  report.gate = "performance";
  const auto minimum_count = static_cast<std::size_t>(lane.repetitions);
  if (candidate.samples.size() < minimum_count || best.samples.size() < minimum_count) {
    report.reasons.push_back(
        "too few samples of " + lane.objective.name + ": candidate " + std::to_string(candidate.samples.size()) +
        ", best " + std::to_string(best.samples.size()) + " (need " + std::to_string(minimum_count) + " each)");
    return report;
  }
  Summary candidate_summary = summarize(candidate);
  Summary best_summary = summarize(best);
  MannWhitneyResult test = mann_whitney_u(candidate.samples, best.samples);
  double improvement = improvement_percent(lane.objective.direction, candidate_summary.median, best_summary.median);

  auto& details = report.details;
  details["objective"] = {{"benchmark", lane.objective.benchmark},
                          {"name", lane.objective.name},
                          {"metric", lane.objective.metric},
                          {"unit", lane.objective.unit},
                          {"direction", to_string(lane.objective.direction)}};
  details["candidate"] = candidate_summary.to_json();
  details["candidate"]["samples"] = candidate.samples;
  details["best"] = best_summary.to_json();
  details["best"]["samples"] = best.samples;
  details["improvement_percent"] = improvement;
  details["min_improvement_percent"] = min_improvement_percent;
  details["p_value"] = test.p_value;
  details["u"] = test.u;
  details["exact_p_value"] = test.exact;

  if (test.p_value >= kSignificanceLevel) {
    report.reasons.push_back("no significant difference from the best (Mann-Whitney U p = " + format(test.p_value) +
                             " >= " + format(kSignificanceLevel) + "; median " + format(candidate_summary.median) +
                             " vs " + format(best_summary.median) + " " + lane.objective.unit + ")");
  } else if (improvement < min_improvement_percent) {
    report.reasons.push_back(std::string("median ") + (improvement >= 0 ? "improved only " : "regressed ") +
                             format(std::abs(improvement)) + "% (" + format(candidate_summary.median) + " vs " +
                             format(best_summary.median) + " " + lane.objective.unit + "; minimum " +
                             format(min_improvement_percent) + "%)");
  }

  nlohmann::json guardrails = nlohmann::json::array();
  const Guardrails& limits = lane.guardrails;
  check_guardrail(report, guardrails, "p95", lane.objective.direction, candidate_summary.p95, best_summary.p95,
                  limits.p95_step_percent, "best");
  if (candidate_summary.peak_memory && best_summary.peak_memory) {
    check_guardrail(report, guardrails, "peak memory", Direction::lower, *candidate_summary.peak_memory,
                    *best_summary.peak_memory, limits.peak_memory_step_percent, "best");
  }
  if (baseline) {
    check_guardrail(report, guardrails, "p95", lane.objective.direction, candidate_summary.p95, baseline->p95,
                    limits.p95_total_percent, "baseline");
    if (candidate_summary.peak_memory && baseline->peak_memory) {
      check_guardrail(report, guardrails, "peak memory", Direction::lower, *candidate_summary.peak_memory,
                      *baseline->peak_memory, limits.peak_memory_total_percent, "baseline");
    }
  }
  details["guardrails"] = guardrails;

  std::optional<std::string> hash = consistent_hash(candidate, report, "candidate");
  if (hash) {
    details["output_hash"] = *hash;
    if (expected_hash) {
      details["expected_output_hash"] = *expected_hash;
      if (*hash != *expected_hash) {
        report.reasons.push_back("the benchmarked output hash " + *hash + " differs from the quality render's " +
                                 *expected_hash + " (the timed path is not the judged path)");
      }
    }
  }
  report.passed = report.reasons.empty();
  return report;
}

// The quality render's hash of the benchmarked case: a text file holding the hash, or a JSON
// render manifest looked up by the case the benchmark names in its label.
std::optional<std::string> expected_output_hash(const Lane& lane, const std::filesystem::path& file,
                                                const Measurement& candidate) {
  if (lane.objective.expected_hash_file.empty() || !std::filesystem::exists(file)) return std::nullopt;
  if (file.extension() != ".json") return trimmed(read_text_file(file));
  if (candidate.cases.empty()) return std::nullopt;
  nlohmann::json manifest = read_json_file(file);
  const std::string& reported_case = candidate.cases.front();
  if (!manifest.contains("cases") || !manifest["cases"].contains(reported_case)) {
    throw Error(ErrorKind::invalid_file,
                file.string() + " has no case '" + reported_case + "' (the case the benchmark rendered)");
  }
  const nlohmann::json& entry = manifest["cases"][reported_case];
  if (!entry.contains(lane.objective.expected_hash_field) || !entry[lane.objective.expected_hash_field].is_string()) {
    throw Error(ErrorKind::invalid_file, file.string() + ": case '" + reported_case + "' has no string field '" +
                                             lane.objective.expected_hash_field + "'");
  }
  return entry[lane.objective.expected_hash_field].get<std::string>();
}

GateReport evaluate_noise(const Lane& lane, const Measurement& first, const Measurement& second) {
  GateReport report;
  report.gate = "performance";
  const auto minimum_count = static_cast<std::size_t>(lane.repetitions);
  if (first.samples.size() < minimum_count || second.samples.size() < minimum_count) {
    report.reasons.push_back("too few samples for the A/A comparison (need " + std::to_string(minimum_count) +
                             " each)");
    return report;
  }
  Summary first_summary = summarize(first);
  Summary second_summary = summarize(second);
  auto half_iqr_percent = [](const std::vector<double>& samples) {
    double middle = median(samples);
    if (middle == 0.0) return 0.0;
    return (percentile(samples, 0.75) - percentile(samples, 0.25)) / 2.0 / std::abs(middle) * 100.0;
  };
  double median_difference =
      std::abs(improvement_percent(lane.objective.direction, first_summary.median, second_summary.median));
  double noise = std::max({median_difference, half_iqr_percent(first.samples), half_iqr_percent(second.samples)});
  MannWhitneyResult test = mann_whitney_u(first.samples, second.samples);
  report.details = {
      {"mode", "A/A"},          {"candidate", first_summary.to_json()},           {"best", second_summary.to_json()},
      {"noise_percent", noise}, {"median_difference_percent", median_difference}, {"p_value", test.p_value}};
  report.details["candidate"]["samples"] = first.samples;
  report.details["best"]["samples"] = second.samples;
  report.details["objective"] = {
      {"name", lane.objective.name}, {"unit", lane.objective.unit}, {"direction", to_string(lane.objective.direction)}};
  std::optional<std::string> first_hash = consistent_hash(first, report, "first build");
  if (first_hash) report.details["output_hash"] = *first_hash;
  report.passed = report.reasons.empty();
  return report;
}

}  // namespace dit::ar
