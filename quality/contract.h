// Fixed during a session (quality/ is the evaluator; see quality/README.md).
// The quality contract (quality/contract.json, version 2): per metric its direction and the
// regression allowed against the baseline's own score; the floors per device, gate set and
// classification (quality/floors.h); which classifications are judged with strict zero
// regression (quantization always); the required metrics; the critical cases of each corpus.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quality/floors.h"

namespace dit::quality {

enum class Classification { exact, numerical, approximate, quantization };
const char* classification_name(Classification classification);
// Throws dit::Error (invalid_argument) listing the valid names.
Classification parse_classification(std::string_view name);

enum class Direction { higher_is_better, lower_is_better };

struct MetricRule {
  std::string name;
  Direction direction = Direction::higher_is_better;
  double allowed_absolute = 0;  // regression allowed against the baseline's score, in units
  double allowed_relative = 0;  // ... or as a fraction of |baseline score|; the larger wins
  // A score at least this good always passes a non-strict gate: it keeps a baseline that
  // equals the golden (a perfect score) from turning every margin into zero. Not in the
  // contract's metric rules: set from its floors for one device, set and class (with_floors).
  std::optional<double> floor;

  // The worst score that passes a non-strict gate when the baseline scored `baseline`.
  double threshold(double baseline) const;
  // Whether `score` passes that threshold (a non-finite score never passes).
  bool within_threshold(double score, double baseline) const;
  // Whether `a` is at least as good as `b` (strict zero regression).
  bool no_worse(double a, double b) const;
};

struct Contract {
  std::string path;
  std::string sha256;  // of the file's bytes
  int version = 2;
  bool strict_zero_regression = false;              // true: every classification is strict
  std::vector<std::string> strict_classifications;  // always holds "quantization"
  std::vector<std::string> required_metrics;
  std::map<std::string, MetricRule> metrics;
  std::map<std::string, std::vector<std::string>> critical_cases;  // corpus file name -> ids
  FloorTable floors;                                               // device -> set -> floors

  // The floors of `set` on `device`, or null when the contract has none (not calibrated there).
  const SetFloors* floors_for(const std::string& device, const std::string& set) const;
  // This contract with every metric's floor taken from `floors` (a metric it lacks has none).
  Contract with_floors(const std::map<std::string, double>& floors) const;

  bool strict_for(Classification classification) const;
  bool requires_metric(std::string_view metric) const;
  // Throws dit::Error naming the metric when the contract has no rule for it.
  const MetricRule& rule(const std::string& metric) const;
  // The critical case ids of `corpus_name`; throws dit::Error when the contract has none listed.
  const std::vector<std::string>& critical_cases_of(const std::string& corpus_name) const;
};

// Throws dit::Error (invalid_file) "<label>: <problem>", or (io) when unreadable.
Contract parse_contract(std::string_view text, const std::string& label);
Contract load_contract(const std::string& path);

}  // namespace dit::quality
