// What the session-level commands share: opening config, repository and state together,
// locking the fixed paths, recovering from a killed driver, preparing the best commit's
// build, and printing the greppable result block.
#pragma once

#include <filesystem>
#include <memory>
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

// Tree/blob id of every fixed path, the config file and the contract at `commit` (null when
// absent), keyed by repository-relative path.
nlohmann::json compute_locks(const Config& config, const GitRepository& repository, const std::string& commit);
// "config/autoresearch.json changed (blob 1a2b3c4d -> 5e6f7a8b)" for each lock that moved.
std::vector<std::string> lock_violations(const nlohmann::json& locks, const nlohmann::json& now);

// The session's branch must be checked out and the working tree clean (exit 2 otherwise).
void require_branch_and_clean_tree(const SessionContext& context, const nlohmann::json& session);

// Handles inflight.json left by a killed driver: a run that was being recorded is recorded;
// a run that was executing has its process group killed and its run folder marked
// interrupted (the commit, still checked out, is simply run again). Prints what it did.
void recover_interrupted_run(SessionContext& context, std::ostream& out);

// A run of the checkout in `lane`: config, lane, source, run, best build and baseline folders
// and progress filled in; each child's process group is added to `inflight` and stored, so a
// later driver can kill it. The caller sets the classification and the improvement threshold.
RunRequest session_run_request(const SessionContext& context, const Lane& lane, const std::filesystem::path& run_dir,
                               nlohmann::json& inflight, std::ostream& progress);

// Makes state/best/src hold `best_commit`'s tree and builds it (incrementally) unless it is
// already built. Returns a failure description on error.
std::optional<std::string> prepare_best_build(SessionContext& context, const Lane& lane, const std::string& best_commit,
                                              RunRequest request);

// Records the objective benchmark of `build_dir` (just built from `commit` and judged) as the
// best commit's build, so that prepare_best_build has nothing to build for it. The performance
// gate runs nothing of the best build but that binary, which links the engine statically: a
// copy taken right after its commit was built is that commit's benchmark. Returns a failure
// description on error (the next prepare_best_build then builds the tree as before).
std::optional<std::string> keep_as_best_build(SessionContext& context, const Lane& lane, const std::string& commit,
                                              const std::filesystem::path& build_dir);

// The effective minimum improvement of the session's lane (raised by the A/A noise).
double effective_min_improvement(const nlohmann::json& session, const Lane& lane);

using Fields = std::vector<std::pair<std::string, std::string>>;
// Prints "---" then "key: value" per field, or the fields as one JSON object with --json.
void print_result_block(std::ostream& out, const Fields& fields, bool json, const nlohmann::json& extra = {});

}  // namespace dit::ar
