// dit-ar experiment: preflight (branch, clean tree, one commit on top of the best, scope,
// locks), then build + CTest, decide, record. Exits with the decision's code
// (driver/exit_codes.h), 2 when refused.
#include <iostream>

#include <CLI/CLI.hpp>

#include "driver/environment_capture.h"
#include "driver/exit_codes.h"
#include "core/files.h"
#include "driver/lock_file.h"
#include "driver/recording.h"
#include "driver/run_guard.h"
#include "driver/sandbox.h"
#include "driver/session.h"
#include "driver/subcommands.h"
#include "core/error.h"

namespace dit::ar {

namespace fs = std::filesystem;

namespace {

struct ExperimentOptions {
  std::string classification;
  std::string description;
  bool dry_run = false;
};

// Refuses (exit 2) unless HEAD is exactly one commit on top of the best.
void require_one_commit_on_best(const GitRepository& repository, const std::string& head, const std::string& best) {
  const std::string best_name = short_id(best);
  if (head == best) {
    refuse("nothing to test: HEAD is the best commit " + best_name,
           "commit one hypothesis on top of it, then run dit-ar experiment again");
  }
  if (repository.is_descendant_of(best, head)) {
    refuse("the branch is behind the best commit " + best_name + " (HEAD " + short_id(head) +
               " is one of its ancestors: was the branch reset after a discard?)",
           "git reset --hard " + std::string(kBestRef) + "   (dit-ar already reset the branch after the discard)");
  }
  std::vector<std::string> parents = repository.parents(head);
  if (parents.size() != 1) {
    refuse("HEAD " + short_id(head) + " is a merge commit; one hypothesis is one ordinary commit",
           "git reset --hard " + std::string(kBestRef) + " and commit the change again");
  }
  if (parents.front() == best) return;
  if (repository.is_descendant_of(head, best)) {
    int count = 1;
    for (std::string at = parents.front(); at != best; at = repository.parents(at).front()) ++count;
    refuse(std::to_string(count) + " commits since the best commit " + best_name +
               "; an experiment is one hypothesis in one commit",
           "squash them: git reset --soft " + best_name + " && git commit -m \"<one hypothesis>\"");
  }
  refuse("HEAD " + short_id(head) + " does not descend from the best commit " + best_name,
         "git reset --hard " + std::string(kBestRef) + " and commit the hypothesis on top of it");
}

// `code`: what the command exits with, also in the JSON (exit_code).
// Under --progress=json the report is the decision event, printed once, whatever --json says.
void print_report(std::ostream& out, ProgressReporter& progress, const ExperimentRecord& record,
                  const std::string& best_after, int code, bool json) {
  if (!json && !progress.json()) {
    out << "\ndecision: " << to_string(record.status) << "\n";
    for (const auto& reason : record.reasons) out << "  - " << reason << "\n";
  }
  std::string objective = "not measured";
  if (record.candidate_value) {
    objective = record.objective_name + " " + format_number(record.candidate_value) + " " + record.unit;
    if (record.best_value) {
      objective += " (best before " + format_number(record.best_value) + ", " +
                   format_number(record.improvement_percent, 4) +
                   "% improvement, p=" + format_number(record.p_value, 3) + ")";
    }
  }
  Fields fields{{"status", to_string(record.status)},
                {"commit", record.commit},
                {"classification", record.classification},
                {"lane", record.lane},
                {"objective", objective},
                {"quality", record.quality.empty() ? "not run" : record.quality},
                {"peak_memory", record.peak_memory ? format_number(record.peak_memory, 12) : "not measured"},
                {"gpu", record.gpu},
                {"sandbox", record.sandbox},
                {"best", best_after},
                {"run_dir", record.run_dir}};
  for (const auto& reason : record.reasons) fields.push_back({"reason", reason});
  const nlohmann::json extra{{"reasons", record.reasons}, {"exit_code", code}, {"record", record.to_json()}};
  progress.decision(result_document(fields, extra));  // the run's record, and stdout under json
  if (!progress.json()) print_result_block(out, fields, json, extra);
}

// --dry-run: every check `experiment` makes before it builds, then what it would run, and nothing
// else: no run folder, no recovery of an interrupted run (named instead), no build, no record.
// Exit 0 when the commit would be judged, 5 when it would be REJECTED (as the real run would).
int print_dry_run(SessionContext& context, const nlohmann::json& session, const Lane& lane,
                  const ExperimentOptions& experiment, const std::string& best, const std::string& head, bool json,
                  ProgressReporter& progress) {
  GitRepository& repository = *context.repository;
  const std::vector<std::string> violations = scope_violations(context, session, best, head);
  const bool judge_intact = session.contains("judge") &&
                            session_judge_files(session) == judge_build_hashes(context, lane) &&
                            judge_tree_changes(context, lane, session).empty();
  const std::vector<std::string> best_changes = best_build_changes(context, lane);
  Fields fields{
      {"dry_run", "true"},
      {"would", violations.empty() ? "judge" : "reject"},
      {"commit", head},
      {"summary", repository.summary(head)},
      {"classification", experiment.classification},
      {"lane", lane.name},
      {"best", best},
      {"min_improvement_percent", format_number(effective_min_improvement(session, lane), 4)},
      {"configure", "cmake --preset " + lane.configure_preset},
      {"build", "cmake --build --preset " + lane.build_preset},
      {"judge", judge_intact ? "built and intact: reused" : "built first (from the init commit)"},
      {"best_build", best_changes.empty() ? "built and intact: reused" : "built first (" + best_changes.front() + ")"}};
  for (const auto& preset : lane.test_presets) fields.push_back({"test", "ctest --preset " + preset});
  fields.push_back({"objective", lane.objective.benchmark + " " + lane.objective.name + " (" + lane.objective.metric +
                                     ", " + lane.objective.unit + ")"});
  if (context.state.load_inflight())
    fields.push_back({"interrupted_run", "inflight.json exists: the real run recovers it first"});
  for (const auto& violation : violations) fields.push_back({"reason", violation});
  const int code = violations.empty() ? kExitKeep : exit_code(Status::rejected);
  const nlohmann::json extra{
      {"reasons", violations}, {"violations", violations}, {"exit_code", code}, {"test_presets", lane.test_presets}};
  if (progress.json())
    progress.dry_run(result_document(fields, extra));
  else
    print_result_block(std::cout, fields, json, extra);
  return code;
}

// `place` is set once the run has a folder.
int run_experiment(const CommonOptions& options, const ExperimentOptions& experiment, std::optional<RunPlace>& place) {
  // Text progress goes to stderr under --json, where stdout carries only the JSON document;
  // --progress=json's events go to stdout, the decision last.
  ProgressReporter progress(parse_progress_format(options.progress).value_or(ProgressFormat::text),
                            options.json ? std::cerr : std::cout, std::cout, std::cerr);
  SessionContext context = open_session_context(options);
  nlohmann::json session = context.state.load_session();
  const Lane& lane = context.config.lane(session.at("lane"));
  fs::create_directories(context.state.root());
  LockFile lock(context.state.lock_file());
  for (const auto& stale : remove_stale_git_locks(*context.repository, context.state))
    std::cerr << "dit-ar: removed " << stale.string() << ", left by a git update of a driver that was stopped\n";
  if (!experiment.dry_run) {
    restore_interrupted_baseline(context.state);
    recover_interrupted_run(context, std::cerr);
    report_sealed(context.state, context.state.seal_undecided_runs());
    session = context.state.load_session();  // as the recovery left it
  }
  validate_contract(context.config);

  if (!session.contains("baseline")) {
    refuse("no baseline recorded for this session", "dit-ar baseline   (on the unmodified code at init)");
  }
  if (auto refused = lane.refused_classifications.find(experiment.classification);
      refused != lane.refused_classifications.end()) {
    refuse(
        "lane " + lane.name + " cannot judge a change classified " + experiment.classification + ": " + refused->second,
        "classify the change by what it does to the arithmetic (program.md); if it is " + experiment.classification +
            ", judge it on a lane that accepts that class");
  }
  if (experiment.classification == "quantization" && !context.config.quantization.allowed) {
    refuse("quantization experiments are not allowed in this session (config quantization.allowed is false)",
           "use another classification, or start a session whose config allows quantization");
  }
  require_branch_and_clean_tree(context, session);
  GitRepository& repository = *context.repository;
  auto best_ref = repository.resolve_reference(kBestRef);
  if (!best_ref) refuse(std::string(kBestRef) + " is missing", "dit-ar baseline records it; run it first");
  const std::string best = *best_ref;
  const std::string head = repository.head_commit();
  require_one_commit_on_best(repository, head, best);

  if (experiment.dry_run) return print_dry_run(context, session, lane, experiment, best, head, options.json, progress);

  ExperimentRecord record;
  record.timestamp = utc_timestamp();
  record.commit = head;
  record.parent = best;
  record.best_before = best;
  record.lane = lane.name;
  record.gpu = gpu_description();
  record.classification = experiment.classification;
  record.description = experiment.description;
  record.sandbox = sandbox_status().description;
  fs::path run_dir = context.state.create_run_dir(head);
  record.run_dir = fs::relative(run_dir, context.state.root()).string();
  place = RunPlace{run_dir, context.state.root()};

  progress.record_to(run_dir / "progress.jsonl");
  progress.run_started({{"command", "experiment"},
                        {"commit", head},
                        {"summary", repository.summary(head)},
                        {"classification", experiment.classification},
                        {"lane", lane.name},
                        {"gpu", record.gpu}},
                       "dit-ar experiment " + short_id(head) + " \"" + repository.summary(head) + "\" (" +
                           experiment.classification + ", lane " + lane.name + ", on " + record.gpu + ")");

  // Scope and locks are checked on the commit itself: nothing is built for a commit that
  // touches what it must not.
  std::vector<std::string> violations = scope_violations(context, session, best, head);
  if (!violations.empty()) {
    record.status = Status::rejected;
    record.reasons = violations;
    record.quality = "not run";
    write_json_atomic(run_dir / "run.json", record.to_json());
    context.state.store_inflight({{"phase", "recording"}, {"kind", "experiment"}, {"record", record.to_json()}});
    apply_record(repository, context.state, record);
    context.state.clear_inflight();
    print_report(std::cout, progress, record, best, exit_code(record.status), options.json);
    return exit_code(record.status);
  }

  nlohmann::json inflight{{"phase", "running"},        {"kind", "experiment"},        {"commit", head},
                          {"run_dir", record.run_dir}, {"started", record.timestamp}, {"driver_pid", ::getpid()}};
  context.state.store_inflight(inflight);
  write_json_atomic(run_dir / "environment.json", {{"gpu", record.gpu}, {"timestamp", record.timestamp}});
  const auto make_request = [&] {
    RunRequest request = session_run_request(context, lane, run_dir, inflight, progress);
    request.classification = experiment.classification;
    request.min_improvement_percent = effective_min_improvement(session, lane);
    return request;
  };
  judge_candidate(context, lane, session, head, best, make_request, false, progress, run_dir, "experiment", record);

  inflight["phase"] = "recording";
  inflight["record"] = record.to_json();
  context.state.store_inflight(inflight);
  apply_record(repository, context.state, record);
  context.state.clear_inflight();
  progress.phase("recorded");
  // The user's edits beside the run end it as a setup error (below), whatever the decision.
  print_report(std::cout, progress, record, record.status == Status::keep ? head : best,
               record.checkout_changes.empty() ? exit_code(record.status) : kExitSetupError, options.json);
  if (!record.checkout_changes.empty()) {
    std::string list;
    for (const auto& change : record.checkout_changes) list += "\n    " + change;
    refuse("the checkout changed while " + short_id(head) + " was judged (the decision above is the commit's, " +
               "built from the driver's own tree):" + list + "\n  nothing was reset, so these edits are kept" +
               (record.status == Status::keep
                    ? std::string()
                    : "; the commit is archived as " + std::string(kDiscardedRefPrefix) + short_id(head)),
           record.status == Status::keep ? "commit the edits as the next hypothesis, or discard them"
                                         : "save the edits elsewhere, then git reset --hard " + std::string(kBestRef));
  }
  return exit_code(record.status);
}

}  // namespace

void add_experiment_command(CLI::App& app, CommonOptions& options) {
  auto experiment = std::make_shared<ExperimentOptions>();
  CLI::App* command = app.add_subcommand(
      "experiment",
      "Test the commit at HEAD (one hypothesis on top of the best): build, run the CTest gates, decide KEEP, "
      "DISCARD-QUALITY, DISCARD-PERFORMANCE or CRASH, record it. KEEP moves refs/autoresearch/best; anything else "
      "archives the commit under refs/autoresearch/discarded/<sha> and resets the branch to the best. A commit "
      "touching a path outside mutable_paths, or a locked path, is REJECTED without being built. Exit 0 KEEP, "
      "3 DISCARD-QUALITY or DISCARD-PERFORMANCE, 4 CRASH, 5 REJECTED, 2 setup or input error.");
  add_candidate_options(*command, experiment->classification, experiment->description,
                        "What kind of change this is; quantization gets a strict zero-regression quality gate");
  command->add_flag("--dry-run", experiment->dry_run,
                    "Make every check the experiment makes before building, print what it would run (presets, "
                    "objective, the judge's build), and stop: nothing is built, recorded or recovered; exit 0, or 5 "
                    "when the commit would be REJECTED");
  add_common_options(*command, options, true);
  add_progress_option(*command, options);
  command->callback([&options, experiment] {
    std::optional<RunPlace> place;
    finish_with(with_file_errors_named(
        [&] { return naming_a_full_disk(place, [&] { return run_experiment(options, *experiment, place); }); }));
  });
}

}  // namespace dit::ar
