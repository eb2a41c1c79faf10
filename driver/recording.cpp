// Each step of apply_record() checks whether it already happened before doing it.
#include "driver/recording.h"

#include <chrono>
#include <ctime>
#include <iomanip>
#include <sstream>

namespace dit::ar {

namespace {

nlohmann::json optional_number(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

std::optional<double> read_optional(const nlohmann::json& document, const char* key) {
  if (!document.contains(key) || !document[key].is_number()) return std::nullopt;
  return document[key].get<double>();
}

Status parse_status(const std::string& text) {
  for (Status status :
       {Status::keep, Status::discard_quality, Status::discard_performance, Status::crash, Status::rejected}) {
    if (to_string(status) == text) return status;
  }
  return Status::crash;
}

}  // namespace

std::string format_number(std::optional<double> value, int precision) {
  if (!value) return "";
  std::ostringstream text;
  text.precision(precision);
  text << *value;
  return text.str();
}

nlohmann::json ExperimentRecord::to_json() const {
  return {{"kind", kind},
          {"timestamp", timestamp},
          {"commit", commit},
          {"parent", parent},
          {"best_before", best_before},
          {"lane", lane},
          {"gpu", gpu},
          {"status", to_string(status)},
          {"classification", classification},
          {"description", description},
          {"reasons", reasons},
          {"objective", objective_name},
          {"unit", unit},
          {"best_value", optional_number(best_value)},
          {"candidate_value", optional_number(candidate_value)},
          {"improvement_percent", optional_number(improvement_percent)},
          {"p_value", optional_number(p_value)},
          {"peak_memory", optional_number(peak_memory)},
          {"quality", quality},
          {"run_dir", run_dir},
          {"sandbox", sandbox},
          {"checkout_changes", checkout_changes}};
}

ExperimentRecord ExperimentRecord::from_json(const nlohmann::json& document) {
  ExperimentRecord record;
  record.kind = document.value("kind", "experiment");
  record.timestamp = document.value("timestamp", "");
  record.commit = document.value("commit", "");
  record.parent = document.value("parent", "");
  record.best_before = document.value("best_before", "");
  record.lane = document.value("lane", "");
  record.gpu = document.value("gpu", "");
  record.status = parse_status(document.value("status", "CRASH"));
  record.classification = document.value("classification", "");
  record.description = document.value("description", "");
  record.reasons = document.value("reasons", std::vector<std::string>{});
  record.objective_name = document.value("objective", "");
  record.unit = document.value("unit", "");
  record.best_value = read_optional(document, "best_value");
  record.candidate_value = read_optional(document, "candidate_value");
  record.improvement_percent = read_optional(document, "improvement_percent");
  record.p_value = read_optional(document, "p_value");
  record.peak_memory = read_optional(document, "peak_memory");
  record.quality = document.value("quality", "");
  record.run_dir = document.value("run_dir", "");
  record.sandbox = document.value("sandbox", "");
  record.checkout_changes = document.value("checkout_changes", std::vector<std::string>{});
  return record;
}

std::map<std::string, std::string> ExperimentRecord::tsv_row() const {
  return {{"timestamp", timestamp},
          {"commit", commit},
          {"parent", parent},
          {"lane", lane},
          {"gpu", gpu},
          {"status", to_string(status)},
          {"classification", classification},
          {"objective", objective_name},
          {"best_before", format_number(best_value)},
          {"candidate", format_number(candidate_value)},
          {"improvement_percent", format_number(improvement_percent, 4)},
          {"p_value", format_number(p_value, 4)},
          {"peak_memory", format_number(peak_memory, 12)},
          {"quality", quality},
          {"description", description},
          {"run_dir", run_dir}};
}

void fill_objective(ExperimentRecord& record, const std::vector<nlohmann::json>& gate_reports) {
  std::optional<nlohmann::json> report = performance_report(gate_reports);
  if (!report || !report->contains("details")) return;
  const nlohmann::json& details = (*report)["details"];
  if (details.contains("objective")) {
    const auto& objective = details["objective"];
    record.unit = objective.value("unit", "");
    record.objective_name =
        objective.value("name", "") + " (" + record.unit + ", " + objective.value("direction", "lower") + " is better)";
  }
  if (details.contains("candidate")) {
    record.candidate_value = read_optional(details["candidate"], "median");
    record.peak_memory = read_optional(details["candidate"], "peak_memory");
  }
  if (details.contains("best")) record.best_value = read_optional(details["best"], "median");
  record.improvement_percent = read_optional(details, "improvement_percent");
  record.p_value = read_optional(details, "p_value");
}

void apply_record(GitRepository& repository, const StateDirectory& state, const ExperimentRecord& record) {
  repository.write_note(kNotesRef, record.commit, record.to_json().dump(2) + "\n");
  if (record.status == Status::keep) {
    repository.set_reference(kBestRef, record.commit,
                             "dit-ar: " + record.kind + " " + short_id(record.commit) + " is the best");
    state.store_best(
        {{"commit", record.commit},
         {"lane", record.lane},
         {"objective", record.objective_name},
         {"unit", record.unit},
         {"value", record.candidate_value ? nlohmann::json(*record.candidate_value) : nlohmann::json(nullptr)},
         {"run_dir", record.run_dir},
         {"timestamp", record.timestamp}});
  } else if (record.kind == "experiment") {
    repository.set_reference(kDiscardedRefPrefix + record.commit, record.commit,
                             "dit-ar: " + to_string(record.status) + " " + short_id(record.commit));
    // Edits the user made beside the run stay: the branch is reset only when the checkout is
    // still exactly the commit that was judged.
    if (record.checkout_changes.empty() && repository.head_commit() == record.commit && !record.best_before.empty()) {
      repository.reset_hard(record.best_before);
    }
  }
  if (!state.has_result_for_run(record.run_dir)) state.append_result(record.tsv_row());
}

void restore_interrupted_baseline(const StateDirectory& state) {
  auto inflight = state.load_inflight();
  // A damaged inflight.json is left to recover_interrupted_run, which names it.
  auto is = [&](const char* key, const char* value) {
    return inflight->contains(key) && (*inflight)[key].is_string() && (*inflight)[key].get<std::string>() == value;
  };
  if (!inflight || !inflight->is_object() || !state.has_session() || !is("phase", "recording") ||
      !is("kind", "baseline") || !inflight->contains("session_baseline") ||
      !(*inflight)["session_baseline"].is_object())
    return;
  nlohmann::json session = state.load_session();
  if (session.contains("baseline")) return;
  session["baseline"] = (*inflight)["session_baseline"];
  state.store_session(session);
}

std::vector<std::filesystem::path> remove_stale_git_locks(const GitRepository& repository,
                                                          const StateDirectory& state) {
  namespace fs = std::filesystem;
  std::vector<fs::path> removed;
  auto inflight = state.load_inflight();
  if (!inflight || !inflight->is_object() || !inflight->contains("phase")) return removed;
  // Since when the stopped driver could have held a git lock: its recording's time, or, while it
  // was still running (its checks of the checkout refresh the index), the run's start.
  const nlohmann::json* stamp = nullptr;
  if ((*inflight)["phase"] == "recording" && inflight->contains("record") && (*inflight)["record"].is_object() &&
      (*inflight)["record"].contains("timestamp"))
    stamp = &(*inflight)["record"]["timestamp"];
  else if ((*inflight)["phase"] == "running" && inflight->contains("started"))
    stamp = &(*inflight)["started"];
  if (!stamp || !stamp->is_string()) return removed;
  std::tm started{};
  std::istringstream text(stamp->get<std::string>());
  text >> std::get_time(&started, "%Y-%m-%dT%H:%M:%SZ");
  if (text.fail()) return removed;
  const auto since = std::chrono::system_clock::from_time_t(timegm(&started)) - std::chrono::seconds(2);
  const fs::path git = repository.workdir() / ".git";
  if (!fs::is_directory(git)) return removed;  // a linked worktree or a .git file: left alone
  std::vector<fs::path> candidates;
  for (const char* name : {"HEAD.lock", "index.lock", "packed-refs.lock", "refs/notes/autoresearch.lock",
                           "logs/HEAD.lock", "logs/refs/notes/autoresearch.lock"})
    candidates.push_back(git / name);
  if (state.has_session()) {
    const nlohmann::json session = state.load_session();
    if (session.contains("branch") && session["branch"].is_string()) {
      const std::string branch = session["branch"].get<std::string>();
      candidates.push_back(git / "refs/heads" / (branch + ".lock"));
      candidates.push_back(git / "logs/refs/heads" / (branch + ".lock"));
    }
  }
  for (const fs::path& folder : {git / "refs/autoresearch", git / "logs/refs/autoresearch"}) {
    std::error_code error;
    for (auto entry = fs::recursive_directory_iterator(folder, error);
         !error && entry != fs::recursive_directory_iterator(); entry.increment(error)) {
      if (entry->path().extension() == ".lock") candidates.push_back(entry->path());
    }
  }
  for (const fs::path& lock : candidates) {
    std::error_code error;
    const auto written = fs::last_write_time(lock, error);
    if (error) continue;
    const auto written_at = std::chrono::file_clock::to_sys(written);
    if (written_at < since) continue;
    if (fs::remove(lock, error)) removed.push_back(lock);
  }
  return removed;
}

}  // namespace dit::ar
