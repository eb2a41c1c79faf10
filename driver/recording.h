// Recording a decision: the git note, the refs (best moves on KEEP; otherwise the commit is
// archived under refs/autoresearch/discarded/<sha> and the branch reset to the best), the
// results.tsv row and best.json. apply_record() is idempotent, so a driver killed half way
// through recording finishes the job on its next start (the record sits in inflight.json).
#pragma once

#include <filesystem>
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

// A driver killed inside a git update of apply_record (a ref and its log, the notes, HEAD or
// the index during the branch's reset) leaves libgit2's lock file, which would refuse every
// later update. When inflight.json holds a recording (its driver is gone: the caller holds the
// state directory's lock), removes those lock files (under .git: refs/autoresearch/, the notes
// ref, the session's branch, HEAD, index, packed-refs, and their logs/) that are no older than
// the record's start. Returns the removed paths. Call before recover_interrupted_run.
std::vector<std::filesystem::path> remove_stale_git_locks(const GitRepository& repository, const StateDirectory& state);

// A baseline killed while it was being recorded: inflight.json holds its record and the
// session's "baseline" facts ("session_baseline"). Stores those into session.json when it lacks
// them, so that recover_interrupted_run (which then applies the record) leaves a whole
// baseline. Call before it, holding the lock; does nothing otherwise.
void restore_interrupted_baseline(const StateDirectory& state);

std::string format_number(std::optional<double> value, int precision = 6);

}  // namespace dit::ar
