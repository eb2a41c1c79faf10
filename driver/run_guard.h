// The checks around a run (ARCHITECTURE.md, "What the driver verifies"): before it, copies of
// the state directory's records and refs; after it, whether the run changed anything it must
// not: the records, the goldens, the best's tree and build, the judge's tree and build, the
// fixed paths of the candidate's tree or of the user's checkout. Each change becomes a reason
// to REJECT the commit; repair() puts back what the driver can (records and refs from the copy,
// goldens from pristine/, the user's fixed paths from the commit, saved first; the best and the
// judge are rebuilt by the next prepare).
//
// Also here: what ends a run with an error of the environment rather than a decision (a full
// disk), and the report of the run folders sealed at start-up.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "driver/pipeline.h"
#include "driver/progress.h"
#include "driver/recording.h"
#include "driver/protection.h"
#include "driver/session.h"

namespace dit::ar {

// Up to `limit` items joined by ", ", then how many there are in all.
std::string listed(const std::vector<std::string>& items, std::size_t limit = 8);

// True when `path` (repository-relative) is fixed ground: inside one of the config's fixed
// paths, or the config file or the contract itself.
bool is_fixed_path(const Config& config, const std::string& path);

struct GuardFindings {
  std::vector<std::string> rejections;            // reasons for REJECTED
  std::vector<std::string> checkout_changes;      // the user's edits outside fixed paths: kept, no reset
  std::vector<std::string> fixed_checkout_paths;  // fixed paths changed in the user's checkout
  bool best_changed = false;
  bool judge_changed = false;
};

class RunGuard {
 public:
  // Takes the copies; `commit` is the one checked out in the user's checkout and the
  // candidate's tree, `best` the best commit. `coordinated`: a worker of `dit-ar work`, whose
  // coordinator records other workers' decisions while this one runs; the session's records and
  // refs are then the coordinator's to check (against its own copy, after each worker), and only
  // the worker's best/built.json is copied here.
  RunGuard(SessionContext& context, const nlohmann::json& session, const Lane& lane, std::string commit,
           std::string best, bool coordinated = false);

  GuardFindings check() const;
  // Puts back what `findings` name; the user's changed fixed paths are first copied into
  // `save_dir`. Rebuilds of the best and the judge happen in prepare_best_build and
  // ensure_judge_build.
  void repair(const GuardFindings& findings, const std::filesystem::path& save_dir) const;

 private:
  SessionContext& context_;
  const nlohmann::json& session_;
  const Lane& lane_;
  std::string commit_;
  std::string best_;
  Snapshot records_;
};

// The judging of `head` against `best`, the same for `dit-ar experiment` and for each worker of
// `dit-ar work` (`coordinated`, as in RunGuard): the judge's and the best's builds, then the
// candidate's run (each request from `make_request`, made again once those builds exist) under a
// RunGuard, whose findings become rejections and are repaired (the best or the judge rebuilt when
// the run changed them); then the decision, refused as an environment error on a full disk
// (refuse_if_out_of_space, naming `command`), into `record`'s status, reasons, checkout changes,
// quality and objective, written to `run_dir`/run.json. A driver write that fails during the run
// rethrows after the repair.
void judge_candidate(SessionContext& context, const Lane& lane, nlohmann::json& session, const std::string& head,
                     const std::string& best, const std::function<RunRequest()>& make_request, bool coordinated,
                     ProgressReporter& progress, const std::filesystem::path& run_dir, const std::string& command,
                     ExperimentRecord& record);

// Throws dit::Error(io) instead of letting a run whose decision would be `status` be recorded,
// when the run failed because the state directory's file system is full (out_of_space_evidence
// in pipeline.h): a CRASH or DISCARD then says nothing about the commit. KEEP and REJECTED stand.
// `command` names the command to run again. Before it throws, the candidate's, the best's and the
// judge's build folders are marked for a configure from scratch (forget_configured): the full
// disk may have torn any file a configure wrote during the run.
void refuse_if_out_of_space(const SessionContext& context, const Lane& lane, const std::filesystem::path& run_dir,
                            Status status, const std::string& commit, const std::string& command);

// Where a run writes: its folder and the state directory (set once the folder exists).
struct RunPlace {
  std::filesystem::path run_dir;
  std::filesystem::path state_root;
};

// Runs `body`; a dit::Error it throws once `place` is set, while the state directory's file
// system is full (out_of_space_evidence), gets the evidence appended, so that an error that
// names only its file (a JUnit file ctest could not write) says why.
template <typename Body>
auto naming_a_full_disk(const std::optional<RunPlace>& place, Body body) -> decltype(body()) {
  try {
    return body();
  } catch (const Error& error) {
    if (!place) throw;
    auto evidence = out_of_space_evidence(place->run_dir, place->state_root);
    if (!evidence || std::string(error.what()).find("No space left on device") != std::string::npos) throw;
    throw Error(error.kind(), std::string(error.what()) + "; the state directory's file system is full: " + *evidence);
  }
}

// Prints one line per run folder seal_undecided_runs() sealed.
void report_sealed(const StateDirectory& state, const std::vector<std::filesystem::path>& sealed);

// Runs `body`, turning a std::filesystem error (a folder that cannot be made on a full disk)
// into dit::Error(io) with its path and reason, so that it ends the command with exit 2.
template <typename Body>
auto with_file_errors_named(Body body) -> decltype(body()) {
  try {
    return body();
  } catch (const std::filesystem::filesystem_error& error) {
    throw Error(ErrorKind::io, error.what());
  }
}

}  // namespace dit::ar
