// Fixed during a session (quality/ is the evaluator; see quality/README.md).
#include "quality/scores.h"

#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/files.h"

namespace dit::quality {

using nlohmann::json;

bool ScoreSet::has(const std::string& case_id, const std::string& metric) const {
  auto found = cases.find(case_id);
  return found != cases.end() && found->second.count(metric) != 0;
}

double ScoreSet::at(const std::string& case_id, const std::string& metric) const {
  return cases.at(case_id).at(metric);
}

void ScoreSet::set(const std::string& case_id, const std::string& metric, double score) {
  cases[case_id][metric] = std::isfinite(score) ? score : std::numeric_limits<double>::quiet_NaN();
}

Aggregate ScoreSet::aggregate(const std::string& metric, Direction direction) const {
  Aggregate result;
  double sum = 0;
  bool all_finite = true;
  for (const auto& [id, scores] : cases) {
    auto found = scores.find(metric);
    if (found == scores.end()) continue;
    const double score = found->second;
    if (!std::isfinite(score)) {
      all_finite = false;
    } else if (result.cases == 0 ||
               (direction == Direction::higher_is_better ? score < result.worst : score > result.worst)) {
      result.worst = score;
    }
    sum += score;
    ++result.cases;
  }
  if (!all_finite) {
    result.mean = result.worst = std::numeric_limits<double>::quiet_NaN();
  } else if (result.cases > 0) {
    result.mean = sum / result.cases;
  }
  return result;
}

json ScoreSet::to_json() const {
  json out = {{"cases", json::object()}};
  for (const auto& [id, scores] : cases) {
    json entry = json::object();
    for (const auto& [metric, score] : scores) entry[metric] = std::isfinite(score) ? json(score) : json(nullptr);
    out["cases"][id] = entry;
  }
  json problem_list = json::object();
  for (const auto& [id, notes] : problems) problem_list[id] = notes;
  out["problems"] = problem_list;
  return out;
}

ScoreSet ScoreSet::from_json(const json& root, const std::string& label) {
  auto malformed = [&](const std::string& what) -> Error {
    return Error(ErrorKind::invalid_file, label + ": " + what);
  };
  if (!root.is_object() || !root.contains("cases") || !root.at("cases").is_object())
    throw malformed("expected an object with a \"cases\" object");
  ScoreSet set;
  for (const auto& [id, scores] : root.at("cases").items()) {
    if (!scores.is_object()) throw malformed("cases." + id + " must be an object of scores");
    set.cases[id];
    for (const auto& [metric, score] : scores.items()) {
      if (score.is_null()) {
        set.cases[id][metric] = std::numeric_limits<double>::quiet_NaN();
      } else if (score.is_number()) {
        set.cases[id][metric] = score.get<double>();
      } else {
        throw malformed("cases." + id + "." + metric + " must be a number or null");
      }
    }
  }
  if (root.contains("problems")) {
    for (const auto& [id, notes] : root.at("problems").items()) {
      if (!notes.is_array()) throw malformed("problems." + id + " must be an array");
      for (const json& note : notes)
        set.problems[id].push_back(note.is_string() ? note.get<std::string>() : note.dump());
    }
  }
  return set;
}

ScoreSet load_scores(const std::string& path) {
  json root;
  try {
    root = json::parse(read_text_file(path));
  } catch (const json::parse_error& error) {
    throw Error(ErrorKind::invalid_file, path + ": not valid JSON (" + error.what() + ")");
  }
  return ScoreSet::from_json(root, path);
}

void save_scores(const std::string& path, const ScoreSet& scores) {
  write_file_atomic(path, scores.to_json().dump(2) + "\n", ParentFolders::create);
}

}  // namespace dit::quality
