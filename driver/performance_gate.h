// The performance gate's decision, separate from the program that measures (dit-perf-gate),
// so it can be tested on fixed samples. KEEP-worthy only when the Mann-Whitney U test gives
// p < 0.05 and the median improves by at least the lane's minimum, within the guardrails.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driver/benchmark_json.h"
#include "driver/config.h"

namespace dit::ar {

inline constexpr double kSignificanceLevel = 0.05;

// One side's measurements of the objective: one sample per benchmark entry that matched.
struct Measurement {
  std::vector<double> samples;      // the objective, in the lane's unit
  std::vector<double> p95_counter;  // per sample, when the lane names a p95 counter
  std::vector<double> peak_memory;  // per sample, when the lane names a memory counter
  std::vector<std::string> hashes;  // per sample, when the benchmark reports one
  std::vector<std::string> cases;   // the label's "case=" token, when present
};

// Adds the matching entries of one benchmark run. Throws dit::Error when an entry reported an
// error, or when a counter the lane names is missing.
void add_run(Measurement& measurement, const std::vector<BenchmarkEntry>& entries, const Lane& lane);

struct Summary {
  double median = 0.0;
  double p95 = 0.0;
  std::optional<double> peak_memory;  // the largest seen
  std::size_t count = 0;
  nlohmann::json to_json() const;
  static Summary from_json(const nlohmann::json& document);
};
Summary summarize(const Measurement& measurement);

struct GateReport {
  std::string gate;
  bool passed = false;
  std::vector<std::string> reasons;
  nlohmann::json details = nlohmann::json::object();
  nlohmann::json to_json() const;
};

// Candidate against the best measured in the same run; guardrails also against the baseline
// summary when one was recorded. `expected_hash` is the quality render's hash, if available.
GateReport evaluate_performance(const Lane& lane, double min_improvement_percent, const Measurement& candidate,
                                const Measurement& best, const std::optional<Summary>& baseline,
                                const std::optional<std::string>& expected_hash);

// The A/A comparison `baseline` runs: the same build measured against itself. Reports the
// noise (the larger of the median difference and each side's half interquartile range, in
// percent of the median); fails only when the measurements are unusable.
GateReport evaluate_noise(const Lane& lane, const Measurement& first, const Measurement& second);

// The quality render's hash of the benchmarked case, from the run directory: a text file
// holding the hash, or a JSON render manifest (cases[<label's case=>][expected_hash_field]).
// Nothing when the file is absent or the benchmark names no case for a manifest.
std::optional<std::string> expected_output_hash(const Lane& lane, const std::filesystem::path& file,
                                                const Measurement& candidate);

// The lane minimum after the A/A measurement: never below kNoiseMultiple times the noise, so
// noise alone cannot produce a KEEP.
inline constexpr double kNoiseMultiple = 2.0;
double effective_min_improvement_percent(double configured_percent, double noise_percent);

// Signed improvement in percent: positive when `candidate` is better than `reference`.
double improvement_percent(Direction direction, double candidate, double reference);

}  // namespace dit::ar
