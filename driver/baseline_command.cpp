// dit-ar baseline: builds the unmodified code at init, records the golden outputs and
// baseline scores (record_baseline_commands), runs every test with the gates against that
// baseline and the performance gate as an A/A comparison, then fixes the session's facts:
// the gate set, the baseline performance, the measured noise (raising the lane minimum when
// it is below twice the noise). The baseline commit becomes the best.
#include <iomanip>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>

#include "driver/environment_capture.h"
#include "driver/exit_codes.h"
#include "core/files.h"
#include "driver/lock_file.h"
#include "driver/performance_gate.h"
#include "driver/process.h"
#include "driver/protection.h"
#include "driver/recording.h"
#include "driver/run_guard.h"
#include "driver/sandbox.h"
#include "driver/session.h"
#include "driver/subcommands.h"
#include "core/error.h"

namespace dit::ar {

namespace fs = std::filesystem;

namespace {

std::optional<std::string> record_baseline_outputs(const SessionContext& context, const Lane& lane,
                                                   const RunRequest& request, ProgressReporter& progress) {
  std::map<std::string, std::string> values{{"source_dir", request.source_dir.string()},
                                            {"build_dir", (request.source_dir / lane.build_dir).string()},
                                            {"judge_build_dir", (request.judge_source_dir / lane.build_dir).string()},
                                            {"run_dir", request.run_dir.string()},
                                            {"baseline_dir", request.baseline_dir.string()},
                                            {"state_dir", context.state.root().string()},
                                            {"lane", lane.name}};
  fs::path log = request.run_dir / "record-baseline.log";
  const auto& commands =
      lane.record_baseline_commands.empty() ? context.config.record_baseline_commands : lane.record_baseline_commands;
  for (const auto& command : commands) {
    ProcessOptions options;
    for (const auto& argument : command) options.argv.push_back(expand_placeholders(argument, values));
    options.working_dir = request.source_dir;
    options.drop_inherited_prefixes = {"DIT_"};
    options.log_path = log;
    options.timeout = std::chrono::seconds(context.config.timeouts.record_baseline);
    options.on_start = request.on_child;
    progress.stage_started("record baseline");
    ProcessResult result = run_process(options);
    std::ostringstream line;
    line << "  record baseline        " << (result.succeeded() ? "ok    " : "FAILED ") << std::fixed
         << std::setprecision(1) << result.seconds << " s  " << options.argv.front();
    progress.stage_finished("record baseline", "", result, line.str());
    if (!result.succeeded()) {
      return "recording the baseline (" + options.argv.front() + ") " + result.describe() + "; see " + log.string();
    }
  }
  return std::nullopt;
}

// `place` is set once the run has a folder.
int run_baseline(const CommonOptions& options, std::optional<RunPlace>& place) {
  // Text progress goes to stderr under --json, where stdout carries only the JSON document;
  // --progress=json's events go to stdout, the decision last.
  ProgressReporter progress(parse_progress_format(options.progress).value_or(ProgressFormat::text),
                            options.json ? std::cerr : std::cout, std::cout, std::cerr);
  SessionContext context = open_session_context(options);
  nlohmann::json session = context.state.load_session();
  const Lane& lane = context.config.lane(session.at("lane"));
  LockFile lock(context.state.lock_file());
  for (const auto& stale : remove_stale_git_locks(*context.repository, context.state))
    std::cerr << "dit-ar: removed " << stale.string() << ", left by a git update of a driver that was stopped\n";
  restore_interrupted_baseline(context.state);
  recover_interrupted_run(context, std::cerr);
  report_sealed(context.state, context.state.seal_undecided_runs());
  session = context.state.load_session();  // as the recovery left it
  validate_contract(context.config);
  if (session.contains("baseline")) {
    refuse("the baseline is already recorded (commit " + short_id(session["baseline"].value("commit", "")) + ")",
           "run experiments with dit-ar experiment; to start over, remove " + context.state.root().string() +
               " and run dit-ar init again");
  }
  require_branch_and_clean_tree(context, session);
  GitRepository& repository = *context.repository;
  const std::string head = repository.head_commit();
  const std::string init_commit = session.at("init_commit");
  if (head != init_commit) {
    refuse("the baseline is the unmodified code at init (" + short_id(init_commit) + "), but HEAD is " + short_id(head),
           "git reset --hard " + init_commit);
  }

  // A gate set without floors for this machine's device refuses every gate: found here, before
  // the three builds (about 170 s on a 16-core GPU host) that would reach the gates only to fail.
  const nlohmann::json environment = capture_environment(context.root).document;
  if (const std::string set = lane_gate_set(lane); !set.empty()) {
    const std::string device = lane_floors_device(lane, environment);
    if (!device.empty() &&
        !has_floors(read_json_file(context.config.source_dir / context.config.contract), device, set))
      refuse("the quality contract " + context.config.contract + " has no floors for gate set " + set + " on " +
                 device + " (lane " + lane.name + "): every gate of the set would refuse",
             "calibrate once on this machine, review and commit the contract and its calibration file (the "
             "contract is locked at init: remove " +
                 context.state.root().string() +
                 " and run dit-ar init and dit-ar baseline again): " + calibrate_command(context.config, lane, set));
  }

  ExperimentRecord record;
  record.kind = "baseline";
  record.timestamp = utc_timestamp();
  record.commit = head;
  auto parents = repository.parents(head);
  record.parent = parents.empty() ? "" : parents.front();
  record.lane = lane.name;
  record.gpu = gpu_description();
  record.classification = "baseline";
  record.description = "baseline: " + repository.summary(head);
  record.sandbox = sandbox_status().description;
  fs::path run_dir = context.state.create_run_dir(head);
  record.run_dir = fs::relative(run_dir, context.state.root()).string();
  place = RunPlace{run_dir, context.state.root()};
  progress.record_to(run_dir / "progress.jsonl");
  progress.run_started({{"command", "baseline"}, {"commit", head}, {"lane", lane.name}, {"gpu", record.gpu}},
                       "dit-ar baseline " + short_id(head) + " (lane " + lane.name + ", on " + record.gpu + ")");
  // No baseline is recorded in the session, so whatever the folder holds is what an earlier,
  // failed baseline left (part of the goldens): kept in this run's folder, so that recording
  // them again is not refused and nothing is lost.
  if (fs::exists(context.state.baseline_dir()) && !fs::is_empty(context.state.baseline_dir())) {
    const fs::path aside = run_dir / "earlier-baseline";
    fs::rename(context.state.baseline_dir(), aside);
    progress.note("  the goldens an earlier, failed baseline left were moved to " + aside.string());
  }
  fs::create_directories(context.state.baseline_dir());

  nlohmann::json inflight{{"phase", "running"},        {"kind", "baseline"},          {"commit", head},
                          {"run_dir", record.run_dir}, {"started", record.timestamp}, {"driver_pid", ::getpid()}};
  context.state.store_inflight(inflight);
  RunRequest request = session_run_request(context, lane, run_dir, inflight, progress);
  // The baseline against itself is an exact restatement; the gates judge it so.
  request.classification = "exact";
  request.noise_measurement = true;
  request.min_improvement_percent = lane.min_improvement_percent;
  write_json_atomic(run_dir / "environment.json", environment);

  // The judge is built once from the locked tree; the best and the candidate's trees are two
  // builds of the same commit, so the A/A comparison measures two builds, as experiments do.
  RunFacts facts;
  nlohmann::json signatures = nlohmann::json::object();
  if (auto judge_failure = ensure_judge_build(context, lane, session, request)) {
    facts.stage_failure = judge_failure;
  } else if (auto best_failure = prepare_best_build(context, lane, head, request)) {
    facts.stage_failure = best_failure;
  } else {
    request = session_run_request(context, lane, run_dir, inflight, progress);
    request.classification = "exact";
    request.noise_measurement = true;
    request.min_improvement_percent = lane.min_improvement_percent;
    prepare_candidate_tree(context, lane, head);
    if (auto build_failure = configure_and_build(request, "baseline-")) {
      facts.stage_failure = build_failure;
    } else if (auto record_failure = record_baseline_outputs(context, lane, request, progress)) {
      facts.stage_failure = record_failure;
    } else if (auto listing_failure = list_test_signatures(request, signatures)) {
      facts.stage_failure = listing_failure;
    } else {
      request.goldens = hash_folder(context.state.baseline_dir());
      request.test_signature = signatures;
      request.already_built = true;
      facts = run_commit(request);
    }
  }
  Decision decision = decide(facts);
  refuse_if_out_of_space(context, lane, run_dir, decision.status, head, "baseline");
  record.status = decision.status;
  record.reasons = decision.reasons;
  record.quality = facts.tests.empty() ? "not run" : quality_summary(facts.tests);
  fill_objective(record, facts.gate_reports);

  std::vector<std::string> warnings;
  double effective_minimum = lane.min_improvement_percent;
  // A machine too noisy for the lane: the baseline is not recorded (it can be run again, and the
  // result's `refused_for: noise` field says so to a script).
  bool refused_for_noise = false;
  if (record.status == Status::keep) {
    const nlohmann::json report = *performance_report(facts.gate_reports);
    if (auto problem = noise_cap_problem(lane, report["details"].value("noise_percent", 0.0))) {
      record.status = Status::crash;
      record.reasons = {*problem};
      refused_for_noise = true;
    }
  }
  if (record.status == Status::keep) {
    nlohmann::json report = *performance_report(facts.gate_reports);
    const nlohmann::json& details = report["details"];
    double noise = details.value("noise_percent", 0.0);
    effective_minimum = effective_min_improvement_percent(lane.min_improvement_percent, noise);
    if (effective_minimum > lane.min_improvement_percent) {
      warnings.push_back("lane " + lane.name + ": minimum improvement " +
                         format_number(lane.min_improvement_percent, 4) + "% is below twice the measured noise (" +
                         format_number(noise, 4) + "%); raised to " + format_number(effective_minimum, 4) + "%");
    }
    nlohmann::json performance = details["candidate"];
    performance.erase("samples");
    performance["commit"] = head;
    performance["gpu"] = record.gpu;
    performance["objective"] = details["objective"];
    write_json_atomic(context.state.baseline_dir() / "performance.json", performance);
    // The goldens as the judge will see them, and the driver's own copy to put back what a run
    // changes.
    const FileHashes goldens = hash_folder(context.state.baseline_dir());
    std::error_code ignored;
    fs::remove_all(context.state.pristine_baseline_dir(), ignored);
    fs::create_directories(context.state.pristine_baseline_dir().parent_path());
    fs::copy(context.state.baseline_dir(), context.state.pristine_baseline_dir(), fs::copy_options::recursive);
    session["baseline"] = {{"commit", head},
                           {"run_dir", record.run_dir},
                           {"recorded_at", record.timestamp},
                           {"gpu", record.gpu},
                           {"noise_percent", noise},
                           {"min_improvement_percent", lane.min_improvement_percent},
                           {"effective_min_improvement_percent", effective_minimum},
                           {"goldens", to_json(goldens)},
                           {"test_signature", signatures},
                           {"warnings", warnings}};
    // The baseline's objective is the candidate side of the A/A run; there is no "best before".
    record.best_value.reset();
    record.improvement_percent.reset();
  }
  write_json_atomic(run_dir / "run.json", record.to_json());
  inflight["phase"] = "recording";
  inflight["record"] = record.to_json();
  // The session's baseline facts go into session.json only once the record waits in
  // inflight.json with them: a driver killed between the two leaves a recording that the next
  // start finishes whole (restore_interrupted_baseline), never a session with a baseline and
  // no best.
  if (session.contains("baseline")) inflight["session_baseline"] = session["baseline"];
  context.state.store_inflight(inflight);
  if (session.contains("baseline")) context.state.store_session(session);
  apply_record(repository, context.state, record);
  context.state.clear_inflight();

  // The readable report (part of it under --progress=none too); under --progress=json the
  // decision event alone, printed once, whatever --json says.
  if (!options.json && !progress.json()) {
    std::cout << "\nbaseline: " << (record.status == Status::keep ? "recorded" : "FAILED") << "\n";
    for (const auto& reason : record.reasons) std::cout << "  - " << reason << "\n";
    for (const auto& warning : warnings) std::cout << "warning: " << warning << "\n";
  }
  Fields fields{{"status", to_string(record.status)},
                {"commit", head},
                {"classification", "baseline"},
                {"lane", lane.name},
                {"objective", record.candidate_value ? record.objective_name + " " +
                                                           format_number(record.candidate_value) + " " + record.unit
                                                     : "not measured"},
                {"quality", record.quality},
                {"noise_percent",
                 session.contains("baseline") ? format_number(session["baseline"].value("noise_percent", 0.0), 4) : ""},
                {"min_improvement_percent", format_number(effective_minimum, 4)},
                {"gpu", record.gpu},
                {"run_dir", record.run_dir}};
  if (refused_for_noise) fields.push_back({"refused_for", "noise"});
  for (const auto& reason : record.reasons) fields.push_back({"reason", reason});
  for (const auto& warning : warnings) fields.push_back({"warning", warning});
  const nlohmann::json extra{{"reasons", record.reasons},
                             {"exit_code", exit_code(record.status)},
                             {"record", record.to_json()},
                             {"warnings", warnings}};
  progress.decision(result_document(fields, extra));  // the run's record, and stdout under json
  if (!progress.json()) print_result_block(std::cout, fields, options.json, extra);
  return exit_code(record.status);
}

}  // namespace

void add_baseline_command(CLI::App& app, CommonOptions& options) {
  CLI::App* command = app.add_subcommand(
      "baseline",
      "Build and test the unmodified code at init: record the golden outputs and baseline scores, the gate tests, "
      "the baseline performance and the A/A measurement noise. The baseline becomes the best commit. Exit 0 when "
      "recorded, else the decision's code: 3 DISCARD-QUALITY or DISCARD-PERFORMANCE, 4 CRASH, 5 REJECTED.");
  add_common_options(*command, options, true);
  add_progress_option(*command, options);
  command->callback([&options] {
    std::optional<RunPlace> place;
    finish_with(with_file_errors_named(
        [&] { return naming_a_full_disk(place, [&] { return run_baseline(options, place); }); }));
  });
}

}  // namespace dit::ar
