// Fixed during a session (quality/ is the evaluator; see quality/README.md).
// A set of scores: per case, per metric, one number (NaN when the score is not finite, stored
// as null in JSON), with the problems met while scoring, and the aggregates over cases.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "quality/contract.h"

namespace dit::quality {

struct Aggregate {
  int cases = 0;     // cases that have a score for the metric
  double mean = 0;   // NaN when any score is not finite
  double worst = 0;  // the lowest score for higher-is-better, the highest for lower
};

struct ScoreSet {
  std::map<std::string, std::map<std::string, double>> cases;  // case id -> metric -> score
  std::map<std::string, std::vector<std::string>> problems;    // case id -> what went wrong

  bool has(const std::string& case_id, const std::string& metric) const;
  double at(const std::string& case_id, const std::string& metric) const;  // has() first
  void set(const std::string& case_id, const std::string& metric, double score);
  Aggregate aggregate(const std::string& metric, Direction direction) const;

  nlohmann::json to_json() const;
  // Throws dit::Error (invalid_file) naming `label` and the malformed entry.
  static ScoreSet from_json(const nlohmann::json& json, const std::string& label);
};

ScoreSet load_scores(const std::string& path);
void save_scores(const std::string& path, const ScoreSet& scores);

}  // namespace dit::quality
