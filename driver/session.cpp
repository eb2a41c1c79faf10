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
  RunRequest request;
  request.config = &context.config;
  request.lane = &lane;
  request.source_dir = context.root;
  request.run_dir = run_dir;
  request.best_build_dir = context.state.best_source_dir() / lane.build_dir;
  request.baseline_dir = context.state.baseline_dir();
  request.progress = &progress;
  const StateDirectory& state = context.state;
  request.on_child = [&state, &inflight](int process_group) {
    inflight["process_group"] = process_group;
    state.store_inflight(inflight);
  };
  return request;
}

std::optional<std::string> prepare_best_build(SessionContext& context, const Lane& lane, const std::string& best_commit,
                                              RunRequest request) {
  fs::path source = context.state.best_source_dir();
  fs::path marker = context.state.best_built_commit_file();
  std::string built = fs::exists(marker) ? read_text_file(marker) : "";
  if (built == best_commit + "\n" && fs::exists(source / lane.build_dir / lane.objective.benchmark))
    return std::nullopt;
  std::string top = lane.build_dir.substr(0, lane.build_dir.find('/'));
  context.repository->export_tree(best_commit, source, {top});
  request.source_dir = source;
  if (auto failure = configure_and_build(request, "best-")) return "the best commit's build: " + *failure;
  write_file_atomic(marker, best_commit + "\n");
  return std::nullopt;
}

std::optional<std::string> keep_as_best_build(SessionContext& context, const Lane& lane, const std::string& commit,
                                              const fs::path& build_dir) {
  const fs::path source = build_dir / lane.objective.benchmark;
  const fs::path target = context.state.best_source_dir() / lane.build_dir / lane.objective.benchmark;
  const fs::path marker = context.state.best_built_commit_file();
  std::error_code error;
  fs::remove(marker, error);  // no marker while the binary changes: a crash then rebuilds
  const fs::path partial = target.string() + ".partial";
  fs::create_directories(target.parent_path(), error);
  if (!error) fs::copy_file(source, partial, fs::copy_options::overwrite_existing, error);
  if (!error) fs::rename(partial, target, error);
  if (error) return "keeping " + source.string() + " as the best build: " + error.message();
  write_file_atomic(marker, commit + "\n");
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
