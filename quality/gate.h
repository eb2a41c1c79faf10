// Fixed during a session (quality/ is the evaluator; see quality/README.md).
// The gate decisions: one per metric (every case and the aggregates) and one per critical
// case (every required metric), comparing the candidate's scores with the BASELINE's own
// scores (never with a previous candidate). Quantization, and every classification when the
// contract says strict_zero_regression, is judged with strict zero regression: any score
// worse than the baseline's, or any case that passed at baseline and fails now, fails.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "quality/contract.h"
#include "quality/scores.h"

namespace dit::quality {

// Written to the run directory as {"gate", "passed", "reasons", "details"}.
struct GateReport {
  std::string gate;
  bool passed = false;
  std::vector<std::string> reasons;  // why it failed, one line each; empty when it passed
  nlohmann::json details = nlohmann::json::object();
  nlohmann::json to_json() const;
};

struct GateInputs {
  const Contract& contract;
  std::vector<std::string> case_ids;  // every case of the corpus, in corpus order
  const ScoreSet& baseline;
  const ScoreSet& candidate;
  Classification classification = Classification::exact;
};

GateReport gate_metric(const GateInputs& inputs, const std::string& metric, const std::string& gate_name);
GateReport gate_critical_case(const GateInputs& inputs, const std::string& case_id, const std::string& gate_name);

// Why `case_id` misses the contract's non-strict thresholds in `scores` (empty: it passes).
std::vector<std::string> case_failures(const Contract& contract, const std::string& case_id, const ScoreSet& baseline,
                                       const ScoreSet& scores);

}  // namespace dit::quality
