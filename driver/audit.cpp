#include "driver/audit.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"
#include "core/files.h"
#include "driver/config.h"
#include "driver/state_directory.h"

namespace dit::ar {

namespace {

namespace fs = std::filesystem;

std::string text_field(const nlohmann::json& record, const char* key) {
  return record.contains(key) && record[key].is_string() ? record[key].get<std::string>() : std::string();
}

// What is wrong with `note` as the loop's KEEP of `commit` on top of `parent`.
std::vector<std::string> record_problems(const std::optional<std::string>& note, const std::string& commit,
                                         const std::string& parent, const AuditOptions& options,
                                         nlohmann::json& record) {
  if (!note) return {"no record on " + std::string(kNotesRef) + ": not judged by the loop"};
  record = nlohmann::json::parse(*note, nullptr, false);
  if (!record.is_object()) return {"the note on " + std::string(kNotesRef) + " is not a dit-ar record (not JSON)"};
  std::vector<std::string> problems;
  const std::string kind = text_field(record, "kind"), status = text_field(record, "status");
  if (kind != "experiment")
    problems.push_back("the record is a " + (kind.empty() ? "nameless" : kind) + " run, not an experiment");
  if (status != "KEEP")
    problems.push_back("the record's decision is " + (status.empty() ? "missing" : status) + ", not KEEP");
  if (text_field(record, "commit") != commit)
    problems.push_back("the record names commit " + text_field(record, "commit") + ", not this one");
  if (text_field(record, "parent") != parent || text_field(record, "best_before") != parent)
    problems.push_back("the record was judged on top of " + short_id(text_field(record, "best_before")) +
                       ", not on this commit's parent " + short_id(parent));
  const std::string lane = text_field(record, "lane");
  if (!options.lanes.empty() && std::find(options.lanes.begin(), options.lanes.end(), lane) == options.lanes.end())
    problems.push_back("kept on lane '" + lane + "', which is not one of the audited lanes");
  return problems;
}

// The record against the state directory: the run's own run.json, and a KEEP row of results.tsv.
std::vector<std::string> state_problems(const nlohmann::json& record, const std::string& commit,
                                        const std::vector<std::map<std::string, std::string>>& rows,
                                        const fs::path& state_dir) {
  std::vector<std::string> problems;
  const std::string run_dir = text_field(record, "run_dir");
  const fs::path run_json = state_dir / run_dir / "run.json";
  if (run_dir.empty() || fs::path(run_dir).is_absolute() || !fs::is_regular_file(run_json)) {
    problems.push_back("the record's run folder '" + run_dir + "' has no run.json in " + state_dir.string());
  } else {
    const nlohmann::json run = nlohmann::json::parse(read_text_file(run_json), nullptr, false);
    if (run != record) problems.push_back(run_json.string() + " differs from the note's record");
  }
  const bool listed = std::any_of(rows.begin(), rows.end(), [&](const auto& row) {
    auto value = [&row](const char* column) {
      auto found = row.find(column);
      return found == row.end() ? std::string() : found->second;
    };
    return value("commit") == commit && value("status") == "KEEP" && value("run_dir") == run_dir;
  });
  if (!listed) problems.push_back("results.tsv has no KEEP row of this commit's run '" + run_dir + "'");
  return problems;
}

}  // namespace

std::string to_string(AuditVerdict verdict) {
  switch (verdict) {
    case AuditVerdict::kept: return "kept";
    case AuditVerdict::exempt: return "exempt";
    case AuditVerdict::fixed_only: return "fixed-only";
    case AuditVerdict::failed: return "FAILED";
  }
  return "FAILED";
}

nlohmann::json to_json(const AuditEntry& entry) {
  nlohmann::json document{{"commit", entry.commit},
                          {"summary", entry.summary},
                          {"verdict", to_string(entry.verdict)},
                          {"problems", entry.problems}};
  if (entry.verdict == AuditVerdict::kept) {
    document["lane"] = entry.lane;
    document["run_dir"] = entry.run_dir;
  }
  if (entry.verdict == AuditVerdict::exempt) document["exempt_why"] = entry.exempt_why;
  return document;
}

std::vector<AuditEntry> audit_range(const GitRepository& repository, const std::string& base, const std::string& tip,
                                    const AuditOptions& options) {
  auto resolve = [&repository](const std::string& revision) {
    auto commit = repository.resolve_revision(revision);
    if (!commit) throw Error(ErrorKind::invalid_argument, "audit: '" + revision + "' names no commit");
    return *commit;
  };
  const std::string base_commit = resolve(base), tip_commit = resolve(tip);
  if (base_commit != tip_commit && !repository.is_descendant_of(tip_commit, base_commit))
    throw Error(ErrorKind::invalid_argument, "audit: " + tip + " does not descend from " + base +
                                                 " (the range is the campaign's commits on top of its start)");
  std::vector<std::map<std::string, std::string>> rows;
  if (options.state_dir) {
    if (!fs::is_directory(*options.state_dir))
      throw Error(ErrorKind::invalid_argument, "audit: no state directory " + options.state_dir->string());
    rows = StateDirectory(*options.state_dir).read_results();
  }
  std::vector<AuditEntry> entries;
  for (const std::string& commit : repository.commits_between(base_commit, tip_commit)) {
    AuditEntry entry;
    entry.commit = commit;
    entry.summary = repository.summary(commit);
    std::set<std::string> trailers;
    for (const auto& [key, value] : repository.trailers(commit)) {
      if (key == kLoopExemptTrailer) entry.exempt_why += (entry.exempt_why.empty() ? "" : "; ") + value;
      if (value.find_first_not_of(" \t") != std::string::npos) trailers.insert(key);
    }
    const std::vector<std::string> parents = repository.parents(commit);
    std::vector<std::string> mutable_changes, fixed_changes;
    if (!parents.empty()) {
      for (const auto& path : repository.changed_paths(parents.front(), commit)) {
        const bool is_mutable = std::any_of(options.mutable_paths.begin(), options.mutable_paths.end(),
                                            [&path](const std::string& prefix) { return path_within(path, prefix); });
        (is_mutable ? mutable_changes : fixed_changes).push_back(path);
      }
    }
    if (!parents.empty() && mutable_changes.empty()) {
      entry.verdict = AuditVerdict::fixed_only;
    } else if (!entry.exempt_why.empty()) {
      entry.verdict = AuditVerdict::exempt;
    } else {
      if (parents.size() != 1)
        entry.problems.push_back(parents.empty() ? "a root commit: an experiment sits on the best before it"
                                                 : "a merge: an experiment has exactly one parent");
      if (!fixed_changes.empty())
        entry.problems.push_back(
            "changes " + fixed_changes.front() +
            (fixed_changes.size() > 1 ? " and " + std::to_string(fixed_changes.size() - 1) + " more" : std::string()) +
            " outside the mutable paths beside " + mutable_changes.front() + ": the loop rejects such a commit");
      for (const auto& name : options.required_trailers)
        if (!trailers.count(name)) entry.problems.push_back("the message lacks the trailer '" + name + ": ...'");
      if (!parents.empty()) {
        nlohmann::json record;
        for (auto& problem :
             record_problems(repository.read_note(kNotesRef, commit), commit, parents.front(), options, record))
          entry.problems.push_back(std::move(problem));
        if (record.is_object()) {
          entry.lane = text_field(record, "lane");
          entry.run_dir = text_field(record, "run_dir");
          if (options.state_dir && entry.problems.empty())
            entry.problems = state_problems(record, commit, rows, *options.state_dir);
        }
      }
      entry.verdict = entry.problems.empty() ? AuditVerdict::kept : AuditVerdict::failed;
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace dit::ar
