// Copies before a run, checks and repairs after it.
#include "driver/run_guard.h"

#include <iostream>

#include "core/error.h"
#include "core/files.h"
#include "driver/decision.h"
#include "driver/pipeline.h"

namespace dit::ar {

namespace fs = std::filesystem;

namespace {

// Makes `target` hold exactly the files of `source`.
void mirror_folder(const fs::path& source, const fs::path& target) {
  std::error_code ignored;
  fs::remove_all(target, ignored);
  fs::create_directories(target.parent_path());
  fs::copy(source, target, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
}

}  // namespace

std::string listed(const std::vector<std::string>& items, std::size_t limit) {
  std::string text;
  for (std::size_t i = 0; i < items.size() && i < limit; ++i) text += (i ? ", " : "") + items[i];
  if (items.size() > limit) text += ", ... (" + std::to_string(items.size()) + " in all)";
  return text;
}

bool is_fixed_path(const Config& config, const std::string& path) {
  for (const auto& fixed : config.fixed_paths) {
    if (path_within(path, fixed)) return true;
  }
  fs::path config_relative = fs::relative(config.path, config.source_dir);
  return path == config_relative.generic_string() || path == config.contract;
}

RunGuard::RunGuard(SessionContext& context, const nlohmann::json& session, const Lane& lane, std::string commit,
                   std::string best, bool coordinated)
    : context_(context), session_(session), lane_(lane), commit_(std::move(commit)), best_(std::move(best)) {
  const StateDirectory& state = context_.state;
  records_.add_file(state.best_built_file());
  if (coordinated) return;
  for (const auto& file : {state.session_file(), state.best_file(), state.results_file()}) records_.add_file(file);
  records_.add_references(*context_.repository, {"refs/autoresearch/*", "refs/notes/*"});
}

GuardFindings RunGuard::check() const {
  GuardFindings findings;
  const StateDirectory& state = context_.state;
  GitRepository& repository = *context_.repository;

  std::vector<std::string> records = records_.changes(repository);
  if (!records.empty()) findings.rejections.push_back("the run changed the session's records: " + listed(records));

  if (session_.contains("baseline") && session_["baseline"].contains("goldens")) {
    auto goldens = describe_changes(hashes_from_json(session_["baseline"]["goldens"], "session goldens"),
                                    hash_folder(state.baseline_dir()), "");
    if (!goldens.empty()) findings.rejections.push_back("the run changed the goldens: " + listed(goldens));
  }

  std::vector<std::string> best = best_build_changes(context_, lane_);
  if (!best.empty() && best.front() != "not built") {
    findings.best_changed = true;
    findings.rejections.push_back("the run changed the best build: " + listed(best));
  }

  if (session_.contains("judge")) {
    std::vector<std::string> judge = describe_changes(hashes_from_json(session_["judge"].at("files"), "session judge"),
                                                      judge_build_hashes(context_, lane_), "judge build: ");
    for (const auto& change : judge_tree_changes(context_, lane_, session_)) judge.push_back(change);
    if (!judge.empty()) {
      findings.judge_changed = true;
      findings.rejections.push_back("the run changed the judge: " + listed(judge));
    }
  }

  std::vector<std::string> fixed_in_tree;
  for (const auto& path : repository.compare_tree(commit_, state.candidate_source_dir(), {build_top(lane_)})) {
    if (is_fixed_path(context_.config, path)) fixed_in_tree.push_back(path);
  }
  if (!fixed_in_tree.empty())
    findings.rejections.push_back("the run changed fixed paths in the candidate's tree: " + listed(fixed_in_tree));

  // The user's checkout: the candidate was built from its own tree, so any change here was made
  // beside the run. Changes under fixed paths are the candidate's doing (REJECTED, put back from
  // the commit, saved first); other edits are the user's and are kept (no reset).
  if (repository.head_commit() != commit_)
    findings.checkout_changes.push_back("HEAD moved from " + short_id(commit_) + " to " +
                                        short_id(repository.head_commit()));
  for (const auto& path : repository.dirty_paths()) {
    if (is_fixed_path(context_.config, path))
      findings.fixed_checkout_paths.push_back(path);
    else
      findings.checkout_changes.push_back(path);
  }
  if (!findings.fixed_checkout_paths.empty())
    findings.rejections.push_back("the run changed fixed paths in the checkout: " +
                                  listed(findings.fixed_checkout_paths));
  return findings;
}

void RunGuard::repair(const GuardFindings& findings, const fs::path& save_dir) const {
  const StateDirectory& state = context_.state;
  GitRepository& repository = *context_.repository;
  if (!records_.changes(repository).empty()) records_.restore(repository);
  if (session_.contains("baseline") && session_["baseline"].contains("goldens")) {
    const FileHashes expected = hashes_from_json(session_["baseline"]["goldens"], "session goldens");
    if (!describe_changes(expected, hash_folder(state.baseline_dir()), "").empty()) {
      if (!describe_changes(expected, hash_folder(state.pristine_baseline_dir()), "").empty()) {
        throw Error(ErrorKind::invalid_file, "the goldens and the driver's copy of them (" +
                                                 state.pristine_baseline_dir().string() +
                                                 ") were both changed: the session cannot go on; start a new one");
      }
      mirror_folder(state.pristine_baseline_dir(), state.baseline_dir());
    }
  }
  if (findings.best_changed) invalidate_best_build(context_, lane_);
  if (!findings.fixed_checkout_paths.empty()) {
    for (const auto& path : findings.fixed_checkout_paths) {
      const fs::path file = context_.root / path;
      if (!fs::is_regular_file(file)) continue;
      fs::path saved = save_dir / path;
      fs::create_directories(saved.parent_path());
      fs::copy_file(file, saved, fs::copy_options::overwrite_existing);
    }
    repository.restore_paths(repository.head_commit(), findings.fixed_checkout_paths);
  }
}

void refuse_if_out_of_space(const SessionContext& context, const Lane& lane, const fs::path& run_dir, Status status,
                            const std::string& commit, const std::string& command) {
  if (status == Status::keep || status == Status::rejected) return;
  auto evidence = out_of_space_evidence(run_dir, context.state.root());
  if (!evidence) return;
  for (const fs::path& source :
       {context.state.candidate_source_dir(), context.state.best_source_dir(), context.state.judge_source_dir()})
    forget_configured(source / lane.build_dir);
  throw Error(ErrorKind::io,
              "the state directory's file system is full, so " + short_id(commit) + " was not judged: " + *evidence +
                  "; nothing is recorded (the run folder " + fs::relative(run_dir, context.state.root()).string() +
                  " is sealed on the next start); free some space and run `dit-ar " + command + "` again");
}

void report_sealed(const StateDirectory& state, const std::vector<fs::path>& sealed) {
  for (const auto& folder : sealed) {
    const std::string now = fs::relative(folder, state.root()).string();
    std::cerr << "dit-ar: sealed " << now.substr(0, now.rfind(".interrupted")) << " (a run that ended without a "
              << "decision), now " << now << ", read-only; nothing writes into it any more\n";
  }
}

void judge_candidate(SessionContext& context, const Lane& lane, nlohmann::json& session, const std::string& head,
                     const std::string& best, const std::function<RunRequest()>& make_request, bool coordinated,
                     ProgressReporter& progress, const fs::path& run_dir, const std::string& command,
                     ExperimentRecord& record) {
  RunFacts facts;
  GuardFindings findings;
  RunRequest request = make_request();
  auto judge_failure = ensure_judge_build(context, lane, session, request);
  progress.phase("judge build checked");
  std::optional<std::string> best_failure;
  if (!judge_failure) {
    best_failure = prepare_best_build(context, lane, best, request);
    progress.phase("best build checked");
  }
  if (judge_failure) {
    facts.stage_failure = judge_failure;
  } else if (best_failure) {
    facts.stage_failure = best_failure;
  } else {
    request = make_request();
    prepare_candidate_tree(context, lane, head);
    progress.phase("candidate tree exported");
    RunGuard guard(context, session, lane, head, best, coordinated);
    try {
      facts = run_commit(request);
    } catch (const std::exception&) {
      // A write of the driver's own failed (a full disk, a failing fsync): the run ends with
      // that error, after what its processes changed is put back.
      try {
        guard.repair(guard.check(), run_dir / "checkout-changes");
      } catch (const std::exception& repair_error) {
        progress.warning(std::string("after the failed run, the checks could not finish: ") + repair_error.what());
      }
      throw;
    }
    findings = guard.check();
    facts.rejections.insert(facts.rejections.end(), findings.rejections.begin(), findings.rejections.end());
    guard.repair(findings, run_dir / "checkout-changes");
    progress.phase("run checked");
    if (findings.best_changed) {
      if (auto rebuild = prepare_best_build(context, lane, best, request))
        progress.warning("rebuilding the best after the run changed it: " + *rebuild);
    }
    if (findings.judge_changed) {
      if (auto rebuild = ensure_judge_build(context, lane, session, request))
        progress.warning("rebuilding the judge after the run changed it: " + *rebuild);
    }
  }
  Decision decision = decide(facts);
  refuse_if_out_of_space(context, lane, run_dir, decision.status, head, command);
  record.status = decision.status;
  record.reasons = decision.reasons;
  record.checkout_changes = findings.checkout_changes;
  record.quality = facts.tests.empty() ? "not run" : quality_summary(facts.tests);
  fill_objective(record, facts.gate_reports);
  write_json_atomic(run_dir / "run.json", record.to_json());
}

}  // namespace dit::ar
