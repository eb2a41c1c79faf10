// What the session-level commands share: opening config, repository and state together,
// locking the fixed paths, recovering from a killed driver, preparing the best commit's
// build, and printing the greppable result block.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "driver/common_options.h"
#include "driver/config.h"
#include "driver/git_repository.h"
#include "driver/pipeline.h"
#include "driver/recording.h"
#include "driver/state_directory.h"

namespace dit::ar {

struct SessionContext {
  Config config;
  std::filesystem::path root;
  std::unique_ptr<GitRepository> repository;
  StateDirectory state;
};

// Loads the config (validated) and opens the repository and state directory.
SessionContext open_session_context(const CommonOptions& options);

// A setup error with the way out named: dit::Error(invalid_argument) "problem\n  way out: hint".
[[noreturn]] void refuse(const std::string& problem, const std::string& way_out);

// The contract must exist and be a JSON object; a malformed one is named with line and column.
void validate_contract(const Config& config);

// The gate set a lane's baseline records (the value after --set in its record_baseline_commands),
// or empty when it records every set of the build.
std::string lane_gate_set(const Lane& lane);
// The device a lane's gates are judged on, as the contract's floors name it: "cpu" for a CPU
// lane, else the first GPU's name in `environment` (capture_environment's document), or empty
// when the machine has none.
std::string lane_floors_device(const Lane& lane, const nlohmann::json& environment);
// Whether `contract` holds floors for gate set `set` on `device`: a gate set without them refuses
// every gate (quality/README.md, "Calibration").
bool has_floors(const nlohmann::json& contract, const std::string& device, const std::string& set);
// The command that calibrates `set` on this machine and writes its floors into the contract.
std::string calibrate_command(const Config& config, const Lane& lane, const std::string& set);

// Tree/blob id of every fixed path, the config file and the contract at `commit` (null when
// absent), keyed by repository-relative path.
nlohmann::json compute_locks(const Config& config, const GitRepository& repository, const std::string& commit);
// "config/autoresearch.json changed (blob 1a2b3c4d -> 5e6f7a8b)" for each lock that moved.
std::vector<std::string> lock_violations(const nlohmann::json& locks, const nlohmann::json& now);
// What makes `head` REJECTED before anything is built, for `dit-ar experiment` and each worker of
// `dit-ar work` alike: a locked path (session "locks") that differs at `head`, or a path changed
// from `best` that lies under no mutable path.
std::vector<std::string> scope_violations(const SessionContext& context, const nlohmann::json& session,
                                          const std::string& best, const std::string& head);

// The session's branch must be checked out and the working tree clean (exit 2 otherwise).
void require_branch_and_clean_tree(const SessionContext& context, const nlohmann::json& session);

// inflight.json as the experiment and baseline commands write it: "phase" "running" (with the
// commit, the run folder and the process group of the child that runs) or "recording" (with
// the record being applied).
struct InflightRun {
  std::string phase = "running";
  std::string kind = "experiment";  // or "baseline"
  std::string commit;
  std::string run_dir;                     // relative to the state directory, never leaving it; may be empty
  int process_group = 0;                   // 0 when no child was started
  std::optional<ExperimentRecord> record;  // with phase "recording"
};
// A "recording" phase without a record is read as a running one. Throws
// dit::Error(invalid_file) naming `where` when a field has the wrong type, the run folder
// leaves the state directory or the process group is no process group id.
InflightRun parse_inflight(const nlohmann::json& inflight, const std::string& where);

// Handles inflight.json left by a killed driver: a run that was being recorded is recorded;
// a run that was executing has its process group killed and its run folder marked
// interrupted (the commit, still checked out, is simply run again). Prints what it did.
void recover_interrupted_run(SessionContext& context, std::ostream& out);

// A run in `lane` of the candidate's tree (state candidate/src): config, lane, trees, run, best
// build, goldens, judge and progress filled in from the session; each child's process group is
// added to `inflight` and stored, so a later driver can kill it. The caller sets the
// classification and the improvement threshold.
RunRequest session_run_request(const SessionContext& context, const Lane& lane, const std::filesystem::path& run_dir,
                               nlohmann::json& inflight, ProgressReporter& progress);

// The top-level folder of the lane's build directory ("build"): kept when a tree is exported.
std::string build_top(const Lane& lane);

// Writes `commit`'s tree into the candidate's tree (only changed files are rewritten, so its
// build stays incremental; anything else there but the build folder is removed).
void prepare_candidate_tree(SessionContext& context, const Lane& lane, const std::string& commit);

// Makes state best/src hold `best_commit`'s tree and builds it there (incrementally) unless
// best/built.json already names that commit and the tree and the objective benchmark are
// unchanged. Returns a failure description on error.
std::optional<std::string> prepare_best_build(SessionContext& context, const Lane& lane, const std::string& best_commit,
                                              RunRequest request);
// What differs in the best's tree or objective benchmark from what best/built.json recorded
// (nothing when it is intact; "not built" when there is no record).
std::vector<std::string> best_build_changes(const SessionContext& context, const Lane& lane);
// Forgets the best build (its record and objective benchmark), so the next prepare rebuilds it.
void invalidate_best_build(const SessionContext& context, const Lane& lane);

// The judge: the init commit's tree in state judge/src with the judge targets built there.
// Builds it when `session` has no "judge" entry yet (storing its file hashes in `session`), or
// when its files no longer match them (rebuilt from the locked tree). Returns a failure.
std::optional<std::string> ensure_judge_build(SessionContext& context, const Lane& lane, nlohmann::json& session,
                                              RunRequest request);
// The hashes of the judge's build folder (its Testing/ folder aside) and the differences of its
// tree from the init commit.
FileHashes judge_build_hashes(const SessionContext& context, const Lane& lane);
std::vector<std::string> judge_tree_changes(const SessionContext& context, const Lane& lane,
                                            const nlohmann::json& session);

// The commit best/built.json names, or "" when it names none (a damaged record is simply not a
// build: the best is built again).
std::string best_built_commit(const nlohmann::json& record);

// The judge build's file hashes session.json records (its "judge" entry); throws
// dit::Error(invalid_file) when that entry is damaged.
FileHashes session_judge_files(const nlohmann::json& session);

// The effective minimum improvement of the session's lane (raised by the A/A noise). Throws
// dit::Error(invalid_file) when session.json's baseline holds one that is not a finite
// percentage (a number, at least 0).
double effective_min_improvement(const nlohmann::json& session, const Lane& lane);

// What `dit-ar summary` prints (driver/summary_command.cpp): counts per status, the best and the
// latest `limit` rows (0: all) of results.tsv, readable or as JSON, for the session's `lane`.
// A state file's field of the wrong type is a dit::Error(invalid_file), never an internal error.
void print_summary(std::ostream& out, const Lane& lane, const nlohmann::json& session,
                   const std::vector<std::map<std::string, std::string>>& rows,
                   const std::optional<nlohmann::json>& best, int limit, bool json);

using Fields = std::vector<std::pair<std::string, std::string>>;
// Prints "---" then "key: value" per field, or the fields as one JSON object with --json.
void print_result_block(std::ostream& out, const Fields& fields, bool json, const nlohmann::json& extra = {});
// The JSON object print_result_block prints with --json: each field, then each of `extra`'s.
nlohmann::json result_document(const Fields& fields, const nlohmann::json& extra = {});

}  // namespace dit::ar
