// Shared session plumbing for init, baseline, experiment, status and summary.
#include "driver/session.h"

#include <cstdlib>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/files.h"
#include "driver/process.h"
#include "core/error.h"

namespace dit::ar {

namespace fs = std::filesystem;

namespace {

// A state file that holds what dit-ar never writes: named as damaged, never an internal error.
[[noreturn]] void damaged(const std::string& where, const std::string& problem,
                          const std::string& way_out =
                              "restore it, or start a new session in a fresh state "
                              "directory with `dit-ar init`") {
  throw Error(ErrorKind::invalid_file, where + ": " + problem + " (the file is damaged: " + way_out + ")");
}

constexpr const char* kInflightWayOut = "restore it, or remove it while no dit-ar runs";

// ExperimentRecord::from_json reads each field with a fallback; a field of another type than
// to_json writes would escape it as nlohmann's type_error.
void check_record_fields(const nlohmann::json& record, const std::string& where) {
  if (!record.is_object()) damaged(where, "\"record\" is not an object", kInflightWayOut);
  for (const char* key : {"kind", "timestamp", "commit", "parent", "best_before", "lane", "gpu", "status",
                          "classification", "description", "objective", "unit", "quality", "run_dir", "sandbox"}) {
    if (record.contains(key) && !record[key].is_string())
      damaged(where, "record." + std::string(key) + " is not a string", kInflightWayOut);
  }
  for (const char* key : {"reasons", "checkout_changes"}) {
    if (!record.contains(key)) continue;
    const nlohmann::json& list = record[key];
    if (!list.is_array() || !std::all_of(list.begin(), list.end(), [](const auto& item) { return item.is_string(); }))
      damaged(where, "record." + std::string(key) + " is not a list of strings", kInflightWayOut);
  }
}

// A string field of inflight.json, or `fallback` when it is absent.
std::string string_field(const nlohmann::json& object, const char* key, const std::string& fallback,
                         const std::string& where) {
  if (!object.contains(key)) return fallback;
  if (!object[key].is_string()) damaged(where, "\"" + std::string(key) + "\" is not a string", kInflightWayOut);
  return object[key].get<std::string>();
}

}  // namespace

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

std::string lane_gate_set(const Lane& lane) {
  for (const auto& command : lane.record_baseline_commands) {
    for (std::size_t i = 0; i + 1 < command.size(); ++i) {
      if (command[i] == "--set") return command[i + 1];
    }
  }
  return "";
}

std::string lane_floors_device(const Lane& lane, const nlohmann::json& environment) {
  if (!lane.gpu) return "cpu";
  const nlohmann::json runtime = environment.value("cuda_runtime", nlohmann::json::object());
  for (const auto& device : runtime.value("devices", nlohmann::json::array())) return device.value("name", "");
  return "";
}

bool has_floors(const nlohmann::json& contract, const std::string& device, const std::string& set) {
  const nlohmann::json floors = contract.value("floors", nlohmann::json::object());
  return !device.empty() && floors.contains(device) && floors[device].is_object() && floors[device].contains(set);
}

std::string calibrate_command(const Config& config, const Lane& lane, const std::string& set) {
  return "dit-quality-render calibrate --gate-sets " +
         (config.source_dir / lane.build_dir / "quality/gate-sets.json").string() + " --set " + set +
         " --out quality/calibration/<gpu>-" + set + ".json --write-contract " + config.contract;
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
  // An id is a string (or null when the path was absent); a damaged one is shown as it is.
  auto show = [](const nlohmann::json& id) {
    if (id.is_null()) return std::string("absent");
    if (id.is_string()) {
      // At most 8 bytes, cut before a character, never inside one (the text must stay UTF-8).
      const std::string text = id.get<std::string>();
      std::size_t size = std::min<std::size_t>(text.size(), 8);
      while (size < text.size() && size > 0 && (static_cast<unsigned char>(text[size]) & 0xC0) == 0x80) --size;
      return text.substr(0, size);
    }
    return id.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  std::vector<std::string> violations;
  for (const auto& [path, id] : locks.items()) {
    nlohmann::json current = now.contains(path) ? now[path] : nlohmann::json(nullptr);
    if (current != id)
      violations.push_back("locked path " + path + " changed since init (" + show(id) + " -> " + show(current) + ")");
  }
  return violations;
}

std::vector<std::string> scope_violations(const SessionContext& context, const nlohmann::json& session,
                                          const std::string& best, const std::string& head) {
  const GitRepository& repository = *context.repository;
  std::vector<std::string> violations =
      lock_violations(session.at("locks"), compute_locks(context.config, repository, head));
  for (const auto& path : repository.changed_paths(best, head)) {
    bool allowed = false;
    for (const auto& prefix : context.config.mutable_paths) allowed = allowed || path_within(path, prefix);
    if (!allowed) violations.push_back("out of scope: " + path + " is not under a mutable path");
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

InflightRun parse_inflight(const nlohmann::json& inflight, const std::string& where) {
  if (!inflight.is_object()) damaged(where, "not a JSON object", kInflightWayOut);
  InflightRun run;
  run.phase = string_field(inflight, "phase", run.phase, where);
  run.kind = string_field(inflight, "kind", run.kind, where);
  run.commit = string_field(inflight, "commit", "", where);
  run.run_dir = string_field(inflight, "run_dir", "", where);
  const fs::path run_dir(run.run_dir);
  if (run_dir.is_absolute() ||
      std::any_of(run_dir.begin(), run_dir.end(), [](const fs::path& part) { return part == ".."; }))
    damaged(where, "run_dir '" + run.run_dir + "' leaves the state directory", kInflightWayOut);
  if (inflight.contains("process_group")) {
    const nlohmann::json& group = inflight["process_group"];
    // An unsigned value beyond std::int64_t reads as a negative one: refused either way.
    if (!group.is_number_integer() || group.get<std::int64_t>() < 0 ||
        group.get<std::int64_t>() > std::numeric_limits<int>::max())
      damaged(where, "process_group is not a process group id", kInflightWayOut);
    run.process_group = group.get<int>();
  }
  if (run.phase == "recording" && inflight.contains("record")) {
    check_record_fields(inflight["record"], where);
    run.record = ExperimentRecord::from_json(inflight["record"]);
  }
  return run;
}

void recover_interrupted_run(SessionContext& context, std::ostream& out) {
  auto inflight = context.state.load_inflight();
  if (!inflight) return;
  const InflightRun run = parse_inflight(*inflight, context.state.inflight_file().string());
  if (run.record) {
    const ExperimentRecord& record = *run.record;
    out << "dit-ar: finishing the recording of " << short_id(record.commit) << " (" << to_string(record.status)
        << ") left by a driver that was stopped\n";
    apply_record(*context.repository, context.state, record);
  } else {
    bool killed = kill_process_group(run.process_group);
    out << "dit-ar: the previous run of " << short_id(run.commit) << " (" << run.run_dir
        << ") was interrupted: the driver was stopped before it decided"
        << (killed ? "; its leftover processes were killed" : "") << ". Nothing was recorded for it; the commit "
        << "is run again when `dit-ar " << run.kind << "` is repeated.\n";
    if (!run.run_dir.empty() && fs::exists(context.state.root() / run.run_dir)) {
      write_json_atomic(context.state.root() / run.run_dir / "interrupted.json",
                        {{"interrupted", true}, {"noticed_at", utc_timestamp()}, {"inflight", *inflight}});
    }
  }
  context.state.clear_inflight();
}

RunRequest session_run_request(const SessionContext& context, const Lane& lane, const fs::path& run_dir,
                               nlohmann::json& inflight, ProgressReporter& progress) {
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
  if (session.contains("judge")) request.judge_files = session_judge_files(session);
  if (session.contains("baseline")) {
    const nlohmann::json& baseline = session["baseline"];
    if (baseline.contains("goldens")) request.goldens = hashes_from_json(baseline["goldens"], "session goldens");
    if (baseline.contains("test_signature")) request.test_signature = baseline["test_signature"];
  }
  request.progress = &progress;
  // DIT_AR_HEARTBEAT_SECONDS: how often a long stage reports (a whole number, 0 for never).
  if (const char* heartbeat = std::getenv("DIT_AR_HEARTBEAT_SECONDS"); heartbeat && *heartbeat) {
    const std::string text = heartbeat;
    if (text.size() > 6 || text.find_first_not_of("0123456789") != std::string::npos)
      throw Error(ErrorKind::invalid_argument,
                  "DIT_AR_HEARTBEAT_SECONDS must be a whole number of seconds (0: never), got '" + text + "'");
    request.heartbeat_seconds = std::stoi(text);
  }
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
  const std::string commit = best_built_commit(record);
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
  if (fs::exists(record_file) && best_built_commit(read_json_file(record_file)) == best_commit &&
      best_build_changes(context, lane).empty())
    return std::nullopt;
  invalidate_best_build(context, lane);
  context.repository->export_tree(best_commit, context.state.best_source_dir(), {build_top(lane)});
  request.source_dir = context.state.best_source_dir();
  request.cache_dir = context.state.best_cache_dir();
  request.compiler_cache = false;
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
    const FileHashes expected = session_judge_files(session);
    if (describe_changes(expected, judge_build_hashes(context, lane), "").empty() &&
        judge_tree_changes(context, lane, session).empty())
      return std::nullopt;
  }
  const std::string commit = session.at("init_commit");
  context.repository->export_tree(commit, context.state.judge_source_dir(), {build_top(lane)});
  // Files a run changed are removed, so the build writes them again.
  if (session.contains("judge")) {
    const FileHashes expected = session_judge_files(session);
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

std::string best_built_commit(const nlohmann::json& record) {
  if (!record.is_object() || !record.contains("commit") || !record["commit"].is_string()) return "";
  return record["commit"].get<std::string>();
}

FileHashes session_judge_files(const nlohmann::json& session) {
  if (!session.is_object() || !session.contains("judge") || !session["judge"].is_object() ||
      !session["judge"].contains("files"))
    damaged("session.json", "field \"judge\" is not an object with \"files\"");
  return hashes_from_json(session["judge"]["files"], "session.json judge.files");
}

double effective_min_improvement(const nlohmann::json& session, const Lane& lane) {
  if (session.is_object() && session.contains("baseline") && session["baseline"].is_object() &&
      session["baseline"].contains("effective_min_improvement_percent")) {
    const nlohmann::json& value = session["baseline"]["effective_min_improvement_percent"];
    if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0)
      damaged("session.json", "baseline.effective_min_improvement_percent is not a percentage");
    return value.get<double>();
  }
  return lane.min_improvement_percent;
}

nlohmann::json result_document(const Fields& fields, const nlohmann::json& extra) {
  nlohmann::json document = nlohmann::json::object();
  for (const auto& [key, value] : fields) document[key] = value;
  if (extra.is_object()) {
    for (const auto& [key, value] : extra.items()) document[key] = value;
  }
  return document;
}

void print_result_block(std::ostream& out, const Fields& fields, bool json, const nlohmann::json& extra) {
  if (json) {
    // Fields can hold anything a state file or a commit message held: invalid UTF-8 is replaced.
    out << result_document(fields, extra).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return;
  }
  out << "---\n";
  for (const auto& [key, value] : fields) out << key << ": " << value << "\n";
}

}  // namespace dit::ar
