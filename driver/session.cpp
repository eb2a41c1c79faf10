// Shared session plumbing for init, baseline, experiment, status and summary.
#include "driver/session.h"

#include "core/files.h"
#include "driver/process.h"
#include "core/error.h"

namespace dit::ar {

namespace fs = std::filesystem;

SessionContext open_session_context(const CommonOptions& options) {
  Config config = load_session_config(options);
  fs::path root = config.source_dir;
  auto repository = std::make_unique<GitRepository>(root);
  StateDirectory state(config.state_dir);
  return {std::move(config), root, std::move(repository), std::move(state)};
}

void refuse(const std::string& problem, const std::string& way_out) {
  throw Error(ErrorKind::invalid_argument, problem + "\n  way out: " + way_out);
}

void validate_contract(const Config& config) {
  fs::path path = config.source_dir / config.contract;
  if (!fs::exists(path)) {
    throw Error(ErrorKind::invalid_file,
                "the quality contract " + path.string() + " does not exist (config field `contract`)");
  }
  nlohmann::json contract = read_json_file(path);
  if (!contract.is_object())
    throw Error(ErrorKind::invalid_file, path.string() + ": the contract must be a JSON object");
}

nlohmann::json compute_locks(const Config& config, const GitRepository& repository, const std::string& commit) {
  std::vector<std::string> paths = config.fixed_paths;
  fs::path config_relative = fs::relative(config.path, config.source_dir);
  if (!config_relative.empty() && config_relative.native().rfind("..", 0) != 0) {
    paths.push_back(config_relative.generic_string());
  }
  paths.push_back(config.contract);
  nlohmann::json locks = nlohmann::json::object();
  for (const auto& path : paths) {
    auto id = repository.entry_id(commit, path);
    locks[path] = id ? nlohmann::json(*id) : nlohmann::json(nullptr);
  }
  return locks;
}

std::vector<std::string> lock_violations(const nlohmann::json& locks, const nlohmann::json& now) {
  auto show = [](const nlohmann::json& id) {
    return id.is_null() ? std::string("absent") : id.get<std::string>().substr(0, 8);
  };
  std::vector<std::string> violations;
  for (const auto& [path, id] : locks.items()) {
    nlohmann::json current = now.contains(path) ? now[path] : nlohmann::json(nullptr);
    if (current != id)
      violations.push_back("locked path " + path + " changed since init (" + show(id) + " -> " + show(current) + ")");
  }
  return violations;
}

void require_branch_and_clean_tree(const SessionContext& context, const nlohmann::json& session) {
  std::string expected = session.at("branch");
  auto branch = context.repository->current_branch();
  if (!branch || *branch != expected) {
    refuse("wrong branch: " + (branch ? "'" + *branch + "'" : std::string("a detached HEAD")) +
               " is checked out, but this session runs on '" + expected + "'",
           "git switch " + expected);
  }
  auto dirty = context.repository->dirty_paths();
  if (!dirty.empty()) {
    std::string list;
    for (std::size_t i = 0; i < dirty.size() && i < 10; ++i) list += (i ? ", " : "") + dirty[i];
    if (dirty.size() > 10) list += ", ...";
    refuse("the working tree is dirty (" + std::to_string(dirty.size()) + " path(s): " + list + ")",
           "commit the hypothesis (git commit -am \"...\") or discard the changes (git restore . and remove untracked "
           "files)");
  }
}

void recover_interrupted_run(SessionContext& context, std::ostream& out) {
  auto inflight = context.state.load_inflight();
  if (!inflight) return;
  std::string phase = inflight->value("phase", "running");
  if (phase == "recording" && inflight->contains("record")) {
    ExperimentRecord record = ExperimentRecord::from_json((*inflight)["record"]);
    out << "dit-ar: finishing the recording of " << short_id(record.commit) << " (" << to_string(record.status)
        << ") left by a driver that was stopped\n";
    apply_record(*context.repository, context.state, record);
  } else {
    int group = inflight->value("process_group", 0);
    bool killed = kill_process_group(group);
    std::string run_dir = inflight->value("run_dir", "");
    out << "dit-ar: the previous run of " << short_id(inflight->value("commit", "")) << " (" << run_dir
        << ") was interrupted: the driver was stopped before it decided"
        << (killed ? "; its leftover processes were killed" : "") << ". Nothing was recorded for it; the commit "
        << "is run again when `dit-ar " << inflight->value("kind", "experiment") << "` is repeated.\n";
    if (!run_dir.empty() && fs::exists(context.state.root() / run_dir)) {
      write_json_atomic(context.state.root() / run_dir / "interrupted.json",
                        {{"interrupted", true}, {"noticed_at", utc_timestamp()}, {"inflight", *inflight}});
    }
  }
  context.state.clear_inflight();
}

RunRequest session_run_request(const SessionContext& context, const Lane& lane, const fs::path& run_dir,
                               nlohmann::json& inflight, std::ostream& progress) {
  const StateDirectory& state = context.state;
  const nlohmann::json session = state.load_session();
  RunRequest request;
  request.config = &context.config;
  request.lane = &lane;
  request.source_dir = state.candidate_source_dir();
  request.run_dir = run_dir;
  request.best_build_dir = state.best_source_dir() / lane.build_dir;
  request.best_cache_dir = state.best_cache_dir();
  request.baseline_dir = state.baseline_dir();
  request.judge_source_dir = state.judge_source_dir();
  request.cache_dir = state.candidate_cache_dir();
  request.hidden = {state.baseline_dir(), state.judge_dir(), state.pristine_baseline_dir().parent_path()};
  if (session.contains("judge")) request.judge_files = hashes_from_json(session["judge"].at("files"), "session judge");
  if (session.contains("baseline")) {
    const nlohmann::json& baseline = session["baseline"];
    if (baseline.contains("goldens")) request.goldens = hashes_from_json(baseline["goldens"], "session goldens");
    if (baseline.contains("test_signature")) request.test_signature = baseline["test_signature"];
  }
  request.progress = &progress;
  request.on_child = [&state, &inflight](int process_group) {
    inflight["process_group"] = process_group;
    state.store_inflight(inflight);
  };
  return request;
}

std::string build_top(const Lane& lane) { return lane.build_dir.substr(0, lane.build_dir.find('/')); }

void prepare_candidate_tree(SessionContext& context, const Lane& lane, const std::string& commit) {
  context.repository->export_tree(commit, context.state.candidate_source_dir(), {build_top(lane)});
}

std::vector<std::string> best_build_changes(const SessionContext& context, const Lane& lane) {
  const fs::path record_file = context.state.best_built_file();
  if (!fs::exists(record_file)) return {"not built"};
  nlohmann::json record = read_json_file(record_file);
  const std::string commit = record.value("commit", "");
  if (commit.empty() || !record.contains("files")) return {"best/built.json names no commit"};
  std::vector<std::string> changes;
  for (const auto& path : context.repository->compare_tree(commit, context.state.best_source_dir(), {build_top(lane)}))
    changes.push_back("best tree: changed " + path);
  const fs::path build = context.state.best_source_dir() / lane.build_dir;
  for (const auto& change : describe_changes(hashes_from_json(record["files"], record_file.string()),
                                             stamp_folder(build, build_bookkeeping()), "best build: "))
    changes.push_back(change);
  return changes;
}

void invalidate_best_build(const SessionContext& context, const Lane& lane) {
  // A replaced file can be newer than its inputs: every file that differs from the record is
  // removed, so the build writes it again (without a record: the objective benchmark).
  const fs::path build = context.state.best_source_dir() / lane.build_dir;
  std::error_code ignored;
  if (fs::exists(context.state.best_built_file())) {
    nlohmann::json record = read_json_file(context.state.best_built_file());
    if (record.contains("files")) {
      const FileHashes expected = hashes_from_json(record["files"], context.state.best_built_file().string());
      for (const auto& [path, stamp] : stamp_folder(build, build_bookkeeping())) {
        auto found = expected.find(path);
        if (found == expected.end() || found->second != stamp) fs::remove(build / path, ignored);
      }
    }
  }
  fs::remove(context.state.best_built_file(), ignored);
  fs::remove(build / lane.objective.benchmark, ignored);
}

std::optional<std::string> prepare_best_build(SessionContext& context, const Lane& lane, const std::string& best_commit,
                                              RunRequest request) {
  const fs::path record_file = context.state.best_built_file();
  if (fs::exists(record_file) && read_json_file(record_file).value("commit", "") == best_commit &&
      best_build_changes(context, lane).empty())
    return std::nullopt;
  invalidate_best_build(context, lane);
  context.repository->export_tree(best_commit, context.state.best_source_dir(), {build_top(lane)});
  request.source_dir = context.state.best_source_dir();
  request.cache_dir = context.state.best_cache_dir();
  if (auto failure = configure_and_build(request, "best-")) return "the best commit's build: " + *failure;
  const fs::path build = context.state.best_source_dir() / lane.build_dir;
  write_json_atomic(record_file, {{"commit", best_commit},
                                  {"built_at", utc_timestamp()},
                                  {"files", to_json(stamp_folder(build, build_bookkeeping()))}});
  return std::nullopt;
}

FileHashes judge_build_hashes(const SessionContext& context, const Lane& lane) {
  return hash_folder(context.state.judge_source_dir() / lane.build_dir, build_bookkeeping());
}

std::vector<std::string> judge_tree_changes(const SessionContext& context, const Lane& lane,
                                            const nlohmann::json& session) {
  std::vector<std::string> changes;
  const std::string commit = session.at("init_commit");
  for (const auto& path : context.repository->compare_tree(commit, context.state.judge_source_dir(), {build_top(lane)}))
    changes.push_back("judge tree: changed " + path);
  return changes;
}

std::optional<std::string> ensure_judge_build(SessionContext& context, const Lane& lane, nlohmann::json& session,
                                              RunRequest request) {
  if (session.contains("judge")) {
    const FileHashes expected = hashes_from_json(session["judge"].at("files"), "session judge");
    if (describe_changes(expected, judge_build_hashes(context, lane), "").empty() &&
        judge_tree_changes(context, lane, session).empty())
      return std::nullopt;
  }
  const std::string commit = session.at("init_commit");
  context.repository->export_tree(commit, context.state.judge_source_dir(), {build_top(lane)});
  // Files a run changed are removed, so the build writes them again.
  if (session.contains("judge")) {
    const FileHashes expected = hashes_from_json(session["judge"].at("files"), "session judge");
    const fs::path build = context.state.judge_source_dir() / lane.build_dir;
    for (const auto& [path, hash] : judge_build_hashes(context, lane)) {
      auto found = expected.find(path);
      std::error_code ignored;
      if (found == expected.end() || found->second != hash) fs::remove(build / path, ignored);
    }
  }
  if (auto failure = configure_and_build_judge(request)) return "the judge's build: " + *failure;
  const fs::path build = context.state.judge_source_dir() / lane.build_dir;
  for (const auto& [path, hash] : hash_files(build, context.config.judge.files)) {
    if (hash == "absent")
      return "the judge's build has no " + path + " (config judge.files; built targets: judge.targets)";
  }
  // A rebuild from the locked tree normally gives the same bytes: then the record stays as it was.
  const nlohmann::json files = to_json(judge_build_hashes(context, lane));
  if (session.contains("judge") && session["judge"].value("files", nlohmann::json()) == files) return std::nullopt;
  session["judge"] = {{"commit", commit}, {"built_at", utc_timestamp()}, {"files", files}};
  context.state.store_session(session);
  return std::nullopt;
}

double effective_min_improvement(const nlohmann::json& session, const Lane& lane) {
  if (session.contains("baseline") && session["baseline"].contains("effective_min_improvement_percent")) {
    return session["baseline"]["effective_min_improvement_percent"].get<double>();
  }
  return lane.min_improvement_percent;
}

void print_result_block(std::ostream& out, const Fields& fields, bool json, const nlohmann::json& extra) {
  if (json) {
    nlohmann::json document = nlohmann::json::object();
    for (const auto& [key, value] : fields) document[key] = value;
    if (extra.is_object()) {
      for (const auto& [key, value] : extra.items()) document[key] = value;
    }
    out << document.dump(2) << "\n";
    return;
  }
  out << "---\n";
  for (const auto& [key, value] : fields) out << key << ": " << value << "\n";
}

}  // namespace dit::ar
