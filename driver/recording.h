// Recording a decision: the git note, the refs (best moves on KEEP; otherwise the commit is
// archived under refs/autoresearch/discarded/<sha> and the branch reset to the best), the
// results.tsv row and best.json. apply_record() is idempotent, so a driver killed half way
// through recording finishes the job on its next start (the record sits in inflight.json).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driver/decision.h"
#include "driver/git_repository.h"
#include "driver/state_directory.h"

namespace dit::ar {

struct ExperimentRecord {
  std::string kind = "experiment";  // or "baseline"
  std::string timestamp;
  std::string commit;
  std::string parent;
  std::string best_before;  // the best commit when the run started (empty for a baseline)
  std::string lane;
  std::string gpu;
  Status status = Status::crash;
  std::string classification;
  std::string description;
  std::vector<std::string> reasons;
  std::string objective_name;  // "BM_E2E/256 real_time (ms, lower is better)"
  std::string unit;
  std::optional<double> best_value;       // the best's median, measured in this run
  std::optional<double> candidate_value;  // the candidate's median
  std::optional<double> improvement_percent;
  std::optional<double> p_value;
  std::optional<double> peak_memory;
  std::string quality;
  std::string run_dir;  // relative to the state directory
  std::string sandbox;  // "bwrap (...)", or "none: <why>": how the candidate's stages were isolated
  // Edits found in the user's checkout after the run (outside fixed paths): kept, so the branch
  // is not reset.
  std::vector<std::string> checkout_changes;

  nlohmann::json to_json() const;
  static ExperimentRecord from_json(const nlohmann::json& document);
  std::map<std::string, std::string> tsv_row() const;
};

// Fills the objective fields from the performance gate's report, if there is one.
void fill_objective(ExperimentRecord& record, const std::vector<nlohmann::json>& gate_reports);

void apply_record(GitRepository& repository, const StateDirectory& state, const ExperimentRecord& record);

std::string format_number(std::optional<double> value, int precision = 6);

}  // namespace dit::ar
