// The state directory's layout and its records. Everything dit-ar knows about a session lives
// here (default .autoresearch/, git-ignored); each file is written atomically (a temporary
// file beside it, fsync, rename) or, for results.tsv, appended with a length check (a failed
// append is cut back to the length before it), so a killed driver, a full disk or a failing
// fsync leaves every record whole: the old content or the new.
//
//   session.json      the session: branch, lane, locked ids, baseline facts
//   best.json         the current best commit and its objective value
//   results.tsv       one row per experiment (kResultColumns)
//   inflight.json     the experiment in progress (removed when it is recorded)
//   lock              the driver lock (LockFile)
//   environment.json  the last `doctor` capture
//   baseline/         the goldens (DIT_BASELINE_DIR of the judge): golden outputs, baseline
//                     scores, performance.json; hidden from candidate processes
//   pristine/         the driver's copy of baseline/, to put back what a run changed
//   judge/src/        the locked tree (the init commit) with the judge's build inside
//   candidate/src/    the commit under test, with its build inside; candidate/cuda-cache
//   best/src/         the best commit's tree, with its build; best/built.json says which commit
//                     and the sha256 of its objective benchmark; best/cuda-cache
//   runs/<id>/        one folder per run: logs, listings, candidate/ (its JUnit), outputs/
//                     (DIT_OUTPUT_DIR of its tests), judge/ (DIT_JUDGE_DIR: reports, JUnit)
//   runs/<id>.interrupted/  a run that ended without a decision, sealed (seal_undecided_runs);
//                     runs/<id> is then a read-only file that says so
//   queue.json        dit-ar work's queue: items, their attempts, their decisions
//   workers/<k>/      worker k of dit-ar work: its candidate/ and best/ trees, inflight.json,
//                     its git worktree checkout/ while it judges
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driver/config.h"

namespace dit::ar {

inline constexpr const char* kBestRef = "refs/autoresearch/best";
inline constexpr const char* kDiscardedRefPrefix = "refs/autoresearch/discarded/";
inline constexpr const char* kNotesRef = "refs/notes/autoresearch";

// results.tsv columns, in order.
inline const std::vector<std::string> kResultColumns{"timestamp",
                                                     "commit",
                                                     "parent",
                                                     "lane",
                                                     "gpu",
                                                     "status",
                                                     "classification",
                                                     "objective",
                                                     "best_before",
                                                     "candidate",
                                                     "improvement_percent",
                                                     "p_value",
                                                     "peak_memory",
                                                     "quality",
                                                     "description",
                                                     "run_dir"};

class StateDirectory {
 public:
  explicit StateDirectory(std::filesystem::path root) : root_(std::move(root)), trees_(root_) {}
  // A worker of `dit-ar work` (driver/work_command.cpp): its own candidate/ and best/ trees and
  // builds, CUDA caches and inflight.json under `trees` (workers/<k>/); every record, the
  // goldens, the judge and runs/ stay the session's, under `root`.
  StateDirectory(std::filesystem::path root, std::filesystem::path trees)
      : root_(std::move(root)), trees_(std::move(trees)) {}

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path session_file() const { return root_ / "session.json"; }
  std::filesystem::path best_file() const { return root_ / "best.json"; }
  std::filesystem::path results_file() const { return root_ / "results.tsv"; }
  std::filesystem::path inflight_file() const { return trees_ / "inflight.json"; }
  std::filesystem::path lock_file() const { return root_ / "lock"; }
  std::filesystem::path environment_file() const { return root_ / "environment.json"; }
  std::filesystem::path baseline_dir() const { return root_ / "baseline"; }
  std::filesystem::path pristine_baseline_dir() const { return root_ / "pristine" / "baseline"; }
  std::filesystem::path judge_dir() const { return root_ / "judge"; }
  std::filesystem::path judge_source_dir() const { return root_ / "judge" / "src"; }
  std::filesystem::path candidate_source_dir() const { return trees_ / "candidate" / "src"; }
  std::filesystem::path candidate_cache_dir() const { return trees_ / "candidate" / "cuda-cache"; }
  std::filesystem::path best_source_dir() const { return trees_ / "best" / "src"; }
  std::filesystem::path best_built_file() const { return trees_ / "best" / "built.json"; }
  std::filesystem::path best_cache_dir() const { return trees_ / "best" / "cuda-cache"; }
  std::filesystem::path runs_dir() const { return root_ / "runs"; }

  bool has_session() const { return std::filesystem::exists(session_file()); }
  // session.json; throws dit::Error(invalid_argument) saying to run `dit-ar init` when absent.
  nlohmann::json load_session() const;
  void store_session(const nlohmann::json& session) const;
  std::optional<nlohmann::json> load_best() const;
  void store_best(const nlohmann::json& best) const;
  std::optional<nlohmann::json> load_inflight() const;
  void store_inflight(const nlohmann::json& inflight) const;
  void clear_inflight() const;

  // A fresh run folder runs/<NNNN>-<short commit> (numbered after the existing ones).
  std::filesystem::path create_run_dir(const std::string& commit) const;

  // Seals every run folder that no results.tsv row names (a run that ended without a decision:
  // its driver was killed, or stopped by an error such as a full disk), once the driver holds
  // the lock and the recovery of inflight.json is done: writes interrupted.json into it (unless
  // there is one), renames it to runs/<id>.interrupted, puts a read-only file at runs/<id> (so
  // that a path into the old folder leads nowhere, even for root) and makes its files
  // read-only. Also removes the temporary files a writer killed mid-write left beside the JSON
  // records (<record>.tmp.XXXXXX). Returns the sealed folders' new paths. Throws
  // dit::Error(io) naming the path it could not write.
  std::vector<std::filesystem::path> seal_undecided_runs() const;

  // results.tsv rows as column -> value; the header row is written on first append.
  std::vector<std::map<std::string, std::string>> read_results() const;
  // Appends a row (with the header, when the file is new) in one write, then fsyncs; on any
  // failure the file is cut back to its length before the append and dit::Error(io) names it.
  void append_result(const std::map<std::string, std::string>& row) const;
  bool has_result_for_run(const std::string& run_dir) const;

 private:
  std::filesystem::path root_;
  std::filesystem::path trees_;  // root_, or a worker's folder
};

// A TSV field: tabs and newlines become spaces.
std::string tsv_field(const std::string& text);

std::string utc_timestamp();  // 2026-11-29T19:30:00Z

}  // namespace dit::ar
