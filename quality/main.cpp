// Fixed during a session (quality/ is the evaluator; see quality/README.md).
// dit-quality, the judge: record a baseline (the golden render comes from dit-quality-render, run
// as a child process), score, gate, check. It links no engine code (ARCHITECTURE.md).
// `gate` reads the candidate's render from $DIT_OUTPUT_DIR/quality/<set>/render (never writing
// there), the goldens from $DIT_BASELINE_DIR, the classification from $DIT_CLASSIFICATION, and
// writes its report to $DIT_JUDGE_DIR/quality/gates/<test name>.json; --run-dir overrides both
// folders, --default-run-dir stands in for an unset variable (standalone use).
// Exit codes: 0 passed, 1 a gate failed or the golden render crashed, 2 bad input or setup (no
// recorded baseline, no floors for this device, a classification the set cannot judge, a render
// from other weights than the baseline's), 77 skipped (no GPU for a GPU set without
// DIT_REQUIRE_GPU=1).
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/error.h"
#include "core/files.h"
#include "quality/command_line.h"
#include "quality/gate.h"
#include "quality/gpu_probe.h"
#include "quality/scoring.h"
#include "quality/store.h"

namespace {

namespace fs = std::filesystem;
using namespace dit;
using namespace dit::quality;

constexpr const char* kRendererName = "dit-quality-render";

// The renderer beside this program, unless --renderer names one.
std::string renderer_path(const std::string& given) {
  if (!given.empty()) return given;
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (error)
    throw SetupError("cannot find this program's folder (/proc/self/exe): " + error.message() +
                     "; pass --renderer PATH");
  return (self.parent_path() / kRendererName).string();
}

// Runs `arguments` (the program first) with this process's stdout and stderr; its exit code.
int run_program(const std::vector<std::string>& arguments) {
  std::vector<char*> argv;
  for (const std::string& argument : arguments) argv.push_back(const_cast<char*>(argument.c_str()));
  argv.push_back(nullptr);
  std::cout.flush();
  pid_t child = 0;
  if (posix_spawn(&child, argv[0], nullptr, nullptr, argv.data(), environ) != 0)
    throw SetupError("cannot start " + arguments[0] + ": " + std::strerror(errno));
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) throw SetupError("cannot wait for " + arguments[0] + ": " + std::strerror(errno));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  std::cerr << arguments[0] << " ended by signal " << WTERMSIG(status) << "\n";
  return kExitFailed;
}

// ---- baseline --------------------------------------------------------------------------------

// Renders `set`'s corpus at `precision` into `out` with the renderer; its exit code.
int render_into(const GateSet& set, const std::string& renderer, const std::string& precision, const std::string& out) {
  std::vector<std::string> command = {renderer,      "render",     "--set",      set.name,    "--corpus",
                                      set.corpus,    "--contract", set.contract, "--backend", set.backend,
                                      "--precision", precision,    "--out",      out};
  if (!set.data_dir.empty()) command.insert(command.end(), {"--data-dir", set.data_dir});
  if (set.weights)
    command.insert(command.end(), {"--weights", set.weights->path, "--weights-sha256", set.weights->sha256});
  return run_program(command);
}

int record_baseline(const GateSet& set, const std::string& baseline_dir, const std::string& renderer) {
  const Inputs inputs = load_inputs(set);
  const BaselinePaths paths = baseline_paths(baseline_dir, set.name);
  if (fs::exists(paths.root) && !fs::is_empty(paths.root))
    throw SetupError("a baseline is already recorded at " + paths.root +
                     "; golden outputs are never regenerated during a session (record into a fresh directory)");
  std::string why;
  if (set.needs_gpu() && !gpu_available(why))
    throw SetupError("gate set " + set.name + " needs a GPU (" + why + "); record the other sets with --set NAME");
  if (set.precision != "fp32" && set.precision != "fp16" && set.precision != "bf16")
    throw SetupError("golden outputs are recorded at fp32, fp16 or bf16; gate set " + set.name + " uses " +
                     set.precision);
  if (!fs::is_regular_file(renderer))
    throw SetupError("no renderer at " + renderer + " (build the " + kRendererName + " target, or pass --renderer)");
  const bool with_reference = set.precision != "fp32";
  for (const auto& [precision, out] : std::vector<std::pair<std::string, std::string>>{
           {set.precision, paths.golden()}, {"fp32", with_reference ? paths.reference() : std::string()}}) {
    if (out.empty()) continue;
    const int rendered = render_into(set, renderer, precision, out);
    if (rendered != kExitPassed) {
      fs::remove_all(paths.root);
      std::cerr << "dit-quality: the " << (out == paths.golden() ? "golden" : "fp32 reference") << " render of set "
                << set.name << " failed (" << kRendererName << " exit code " << rendered << "); nothing was recorded\n";
      return rendered == kExitSkipped ? kExitSetup : rendered;
    }
  }
  const RenderManifest golden = load_render_manifest(paths.golden());
  std::vector<std::string> problems;
  auto check_render = [&](const RenderManifest& render, const std::string& precision, const std::string& what) {
    if (render.corpus_sha256 != inputs.corpus.sha256 || render.backend != set.backend || render.precision != precision)
      problems.push_back("the " + what + " render is not of " + set.corpus + " on " + set.backend + "/" + precision);
    for (const auto& [id, record] : render.cases) {
      if (!record.deterministic)
        problems.push_back(what + " " + id + " is not deterministic (a render in a fresh process differs)");
    }
  };
  check_render(golden, set.precision, "golden");
  const ScoreSet scores = score_render(inputs.corpus, paths.golden(), paths.golden());
  std::optional<ScoreSet> reference_scores;
  if (with_reference) {
    const RenderManifest reference = load_render_manifest(paths.reference());
    check_render(reference, "fp32", "fp32 reference");
    for (const std::string& difference : weights_differences(inputs.corpus, golden, reference))
      problems.push_back("the fp32 reference: " + difference);
    reference_scores = score_render(inputs.corpus, paths.golden(), paths.reference());
    for (const auto& [id, notes] : reference_scores->problems) {
      for (const std::string& note : notes) problems.push_back(id + " against the fp32 reference: " + note);
    }
  }
  for (const Case& c : inputs.corpus.cases) {
    for (const std::string& failure : case_failures(inputs.contract, c.id, scores, scores)) problems.push_back(failure);
  }
  if (!problems.empty()) {
    fs::remove_all(paths.root);
    std::string message = "cannot record a baseline for set " + set.name + ":";
    for (const std::string& p : problems) message += "\n  " + p;
    throw SetupError(message);
  }
  save_scores(paths.scores(), scores);
  if (reference_scores) save_scores(paths.reference_scores(), *reference_scores);
  write_baseline_manifest(paths, set.name, inputs.corpus, inputs.contract, golden);
  std::cout << "recorded the baseline of set " << set.name << " (" << inputs.corpus.cases.size() << " cases, "
            << set.backend << "/" << set.precision << (with_reference ? ", and its fp32 reference" : "") << ") at "
            << paths.root << "\n";
  return kExitPassed;
}

int command_baseline(const SetOptions& o, const Locations& l, const std::string& renderer_option, bool if_missing) {
  const std::string renderer = renderer_path(renderer_option);
  const std::string dir = baseline_root(l);
  std::vector<GateSet> sets;
  if (!o.gate_sets.empty() && o.set.empty()) {
    for (const GateSet& s : load_gate_sets(o.gate_sets)) {
      SetOptions one = o;
      one.set = s.name;
      sets.push_back(resolve_set(one));
    }
  } else {
    sets.push_back(resolve_set(o));
  }
  for (const GateSet& set : sets) {
    if (if_missing) {
      // The setup fixture of a plain `ctest --preset` run: records what is missing and says so.
      // Under dit-ar (DIT_JUDGE_DIR set) the baseline is the driver's: a missing one is an error.
      if (int code = gpu_gate(set)) return code;
      const BaselinePaths paths = baseline_paths(dir, set.name);
      const char* judge = std::getenv("DIT_JUDGE_DIR");
      const bool under_driver = judge && *judge;
      // Under dit-ar this is a judge test: its report says whether the baseline was there.
      auto report = [&](bool passed, const std::string& why) {
        if (!under_driver) return;
        GateReport r;
        r.gate = "quality." + set.name + ".baseline";
        r.passed = passed;
        r.reasons = {why};
        r.details = {{"baseline_dir", paths.root}};
        write_file_atomic(judge_root(l) + "/gates/" + r.gate + ".json", r.to_json().dump(2) + "\n",
                          ParentFolders::create);
      };
      if (baseline_recorded(paths)) {
        report(true, "the baseline is recorded at " + paths.root);
        // Under dit-ar every gate verifies the baseline itself and reports what changed.
        const Inputs inputs = load_inputs(set);
        const std::vector<std::string> stale =
            under_driver ? std::vector<std::string>{} : verify_baseline(paths, inputs.corpus, inputs.contract);
        if (!stale.empty()) {
          std::string message = "the baseline of set " + set.name + " at " + paths.root +
                                " cannot judge this tree (golden outputs are never regenerated in place):";
          for (const std::string& problem : stale) message += "\n  " + problem;
          throw SetupError(message + "\nremove " + paths.root + " to record it again from the unmodified engine");
        }
        std::cout << "the baseline of set " << set.name << " is recorded at " << paths.root << "\n";
        continue;
      }
      if (under_driver) {
        const std::string why = "no baseline of set " + set.name + " at " + paths.root +
                                ": under dit-ar the baseline is recorded by `dit-ar baseline`, never by a test";
        report(false, why);
        throw SetupError(why);
      }
      std::cout << "no baseline of set " << set.name << " at " << paths.root
                << ": recording it now, from this build's engine (the unmodified engine is what it must be)\n";
    }
    if (const int code = record_baseline(set, dir, renderer); code != kExitPassed) return code;
  }
  return kExitPassed;
}

// ---- score -----------------------------------------------------------------------------------

int command_score(const SetOptions& o, const std::string& render, const std::string& golden, const std::string& out) {
  const GateSet set = resolve_set(o);
  const Inputs inputs = load_inputs(set);
  const ScoreSet scores = score_render(inputs.corpus, render, golden);
  const std::string text = scores.to_json().dump(2) + "\n";
  if (out.empty()) {
    std::cout << text;
  } else {
    write_file_atomic(out, text, ParentFolders::create);
  }
  return scores.problems.empty() ? kExitPassed : kExitFailed;
}

// ---- gate ------------------------------------------------------------------------------------

void write_report(const std::string& path, const GateReport& report) {
  write_file_atomic(path, report.to_json().dump(2) + "\n", ParentFolders::create);
}

// The command that calibrates `set` on this device and writes its floors into the contract.
std::string calibrate_command(const SetOptions& o, const GateSet& set) {
  const std::string sets = o.gate_sets.empty() ? "<build>/quality/gate-sets.json" : o.gate_sets;
  return "dit-quality-render calibrate --gate-sets " + sets + " --set " + set.name +
         " --out quality/calibration/<gpu>-" + set.name + ".json --write-contract " + set.contract;
}

// The contract a gate judges `set` under for `classification` on this device: every metric's floor
// from the calibrated floors of its class. Every refusal is a SetupError that says why.
struct Judging {
  Contract contract;                      // with the class's floors
  std::optional<Contract> fp32_contract;  // 16-bit sets: the bound against the fp32 golden
  bool against_reference_only = false;    // quantization: strict against the fp32 golden alone
  std::string device;
};

Judging judging_for(const SetOptions& o, const GateSet& set, const Inputs& inputs, Classification classification) {
  Judging judging{inputs.contract, std::nullopt, false, ""};
  try {
    judging.device = device_key(set.backend);
  } catch (const Error& error) {
    throw SetupError(error.what());
  }
  const SetFloors* floors = inputs.contract.floors_for(judging.device, set.name);
  if (!floors)
    throw SetupError(set.contract + " has no floors for gate set " + set.name + " on " + judging.device +
                     ": its gates have never been calibrated on this device. Calibrate once (it renders the corpus "
                     "as exact restatements), review and commit the result, then record the baseline:\n  " +
                     calibrate_command(o, set));
  const bool sixteen_bit = set.precision != "fp32";
  switch (classification) {
    case Classification::exact: judging.contract = inputs.contract.with_floors(floors->exact); break;
    case Classification::numerical:
      if (!floors->numerical)
        throw SetupError("gate set " + set.name + " on " + judging.device +
                         " has no numerical floors in the contract (no change of arithmetic mode was calibrated "
                         "there): a numerical change cannot be judged on this set");
      judging.contract = inputs.contract.with_floors(*floors->numerical);
      break;
    case Classification::approximate:
      throw SetupError("gate set " + set.name +
                       " renders seeded random weights: with them fewer steps or a cached computation give "
                       "unrelated images, so an approximate change cannot be judged; it needs a lane whose corpus "
                       "names a trained checkpoint");
    case Classification::quantization:
      if (!sixteen_bit || !floors->fp32_bound)
        throw SetupError("gate set " + set.name +
                         " has no fp32 golden to judge against: quantization is judged strictly against the "
                         "baseline's distance from the fp32 golden, which only a 16-bit set records (its own "
                         "golden would make strict mean bit-identical)");
      judging.contract = inputs.contract.with_floors(floors->exact);
      judging.against_reference_only = true;
      break;
  }
  if (sixteen_bit) {
    if (!floors->fp32_bound)
      throw SetupError(set.contract + ": floors." + judging.device + "." + set.name +
                       " has no fp32_bound, which a 16-bit set needs; recalibrate:\n  " + calibrate_command(o, set));
    judging.fp32_contract = inputs.contract.with_floors(*floors->fp32_bound);
  }
  return judging;
}

GateReport run_gate(const GateInputs& inputs, const std::string& metric, const std::string& critical_case,
                    const std::string& gate_name) {
  return metric.empty() ? gate_critical_case(inputs, critical_case, gate_name) : gate_metric(inputs, metric, gate_name);
}

int command_gate(const SetOptions& o, const Locations& l, const std::string& metric, const std::string& critical_case) {
  const GateSet set = resolve_set(o);
  const Inputs inputs = load_inputs(set);
  if (metric.empty() == critical_case.empty())
    throw SetupError("gate needs exactly one of --metric or --critical-case");
  if (!metric.empty() && !inputs.contract.requires_metric(metric))
    throw SetupError("metric \"" + metric + "\" is not a required metric of " + set.contract);
  if (!critical_case.empty()) {
    const auto& listed = inputs.contract.critical_cases_of(inputs.corpus.name);
    if (std::find(listed.begin(), listed.end(), critical_case) == listed.end())
      throw SetupError("\"" + critical_case + "\" is not a critical case of " + inputs.corpus.name + " in " +
                       set.contract);
  }
  Classification classification;
  try {
    classification = parse_classification(!l.classification.empty() ? l.classification
                                                                    : environment_or("DIT_CLASSIFICATION", "exact"));
  } catch (const Error& error) {
    throw SetupError(error.what());
  }
  const std::string gate_name = "quality." + set.name + "." + (metric.empty() ? "critical." + critical_case : metric);
  // The report goes where the decision reads it: $DIT_JUDGE_DIR/quality/gates/<test name>.json.
  const std::string report_path = judge_root(l) + "/gates/" + gate_name + ".json";
  GateReport report;
  report.gate = gate_name;

  auto not_judged = [&](int code, const std::string& why) {
    report.reasons.push_back(why);
    report.details = {{"skipped", code == kExitSkipped}, {"classification", classification_name(classification)}};
    write_report(report_path, report);
    return code;
  };
  if (int code = gpu_gate(set)) return not_judged(code, "no GPU for gate set " + set.name);
  Judging judging;
  try {
    judging = judging_for(o, set, inputs, classification);
  } catch (const SetupError& error) {
    std::cerr << "dit-quality: " << error.what() << "\n";
    return not_judged(kExitSetup, error.what());
  }
  const BaselinePaths paths = baseline_paths(baseline_root(l), set.name);
  if (!baseline_recorded(paths)) {
    const std::string why = "no baseline recorded at " + paths.root +
                            " (a plain `ctest --preset` records it first, in its quality." + set.name +
                            ".baseline fixture; under dit-ar, `dit-ar baseline` does)";
    std::cerr << "dit-quality: " << why << "\n";
    return not_judged(kExitSetup, why);
  }

  std::vector<std::string> problems = verify_baseline(paths, inputs.corpus, inputs.contract);
  // The candidate's render (its test stage wrote it under $DIT_OUTPUT_DIR): only read here.
  const std::string render_dir = render_dir_of(l, set);
  std::optional<RenderManifest> rendered;
  std::string no_render;
  try {
    rendered = load_render_manifest(render_dir);
  } catch (const Error& error) {
    no_render = std::string("no candidate render: ") + error.what();
  }
  if (problems.empty() && rendered) {
    // Scores against a golden of other weights would say nothing of the engine: refused.
    const std::vector<std::string> differences =
        weights_differences(inputs.corpus, load_render_manifest(paths.golden()), *rendered);
    if (!differences.empty()) {
      std::string why = "the candidate was rendered from other weights than the baseline of set " + set.name +
                        " (record a baseline for these weights, or render the baseline's):";
      for (const std::string& difference : differences) why += "\n  " + difference;
      std::cerr << "dit-quality: " << why << "\n";
      return not_judged(kExitSetup, why);
    }
  }
  ScoreSet baseline, candidate, baseline_to_fp32, candidate_to_fp32;
  if (problems.empty()) {
    baseline = load_scores(paths.scores());
    candidate = score_render(inputs.corpus, render_dir, paths.golden());
    nlohmann::json written = candidate.to_json();
    if (judging.fp32_contract) {
      if (!fs::is_regular_file(paths.reference_scores())) {
        problems.push_back("the baseline of 16-bit set " + set.name + " has no fp32 reference (" +
                           paths.reference_scores() + "): record it again");
      } else {
        baseline_to_fp32 = load_scores(paths.reference_scores());
        candidate_to_fp32 = score_render(inputs.corpus, render_dir, paths.reference());
        written = {{"against_golden", written}, {"against_fp32_golden", candidate_to_fp32.to_json()}};
      }
    }
    write_file_atomic(judge_root(l) + "/" + set.name + "/scores.json", written.dump(2) + "\n", ParentFolders::create);
    if (!rendered) {
      problems.push_back(no_render);
    } else {
      if (rendered->corpus_sha256 != inputs.corpus.sha256)
        problems.push_back("the candidate was rendered from another version of " + inputs.corpus.name);
      if (rendered->precision != set.precision || rendered->backend != set.backend)
        problems.push_back("the candidate was rendered on " + rendered->backend + "/" + rendered->precision + ", not " +
                           set.backend + "/" + set.precision);
    }
  }
  if (problems.empty()) {
    const std::vector<std::string> ids = inputs.corpus.ids();
    if (judging.against_reference_only) {
      // Strict, against the baseline's own distance from the fp32 golden: a score the baseline
      // does not have by construction, so strict does not mean bit-identical.
      report = run_gate({judging.contract, ids, baseline_to_fp32, candidate_to_fp32, classification}, metric,
                        critical_case, gate_name);
      report.details["judged_against"] = "fp32 golden";
    } else {
      report = run_gate({judging.contract, ids, baseline, candidate, classification}, metric, critical_case, gate_name);
      report.details["judged_against"] = "golden";
      if (judging.fp32_contract) {
        const GateReport bound =
            run_gate({*judging.fp32_contract, ids, baseline_to_fp32, candidate_to_fp32, Classification::exact}, metric,
                     critical_case, gate_name);
        for (const std::string& reason : bound.reasons) report.reasons.push_back("fp32 golden: " + reason);
        report.details["fp32_golden"] = bound.details;
        report.passed = report.reasons.empty();
      }
    }
  } else {
    report.reasons = problems;
    report.passed = false;
  }
  report.details["device"] = judging.device;
  report.details["render_dir"] = render_dir;
  report.details["baseline_dir"] = paths.root;
  write_report(report_path, report);
  for (const std::string& reason : report.reasons) std::cout << "  " << reason << "\n";
  std::cout << gate_name << " (" << classification_name(classification) << ", floors of " << set.name << " on "
            << judging.device << "): " << (report.passed ? "PASS" : "FAIL") << "\nreport: " << report_path << "\n";
  return report.passed ? kExitPassed : kExitFailed;
}

// ---- check -----------------------------------------------------------------------------------

int command_check(const SetOptions& o) {
  const GateSet set = resolve_set(o);
  const Inputs inputs = load_inputs(set);
  std::cout << set.corpus << ": " << inputs.corpus.cases.size() << " cases (" << inputs.corpus.critical_ids().size()
            << " critical); " << set.contract << ": " << inputs.contract.required_metrics.size()
            << " required metrics: OK\n";
  return kExitPassed;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dit-quality: the fixed quality judge of DiT AutoResearch (baseline, score, gate, check)"};
  app.require_subcommand(1);
  SetOptions o;
  Locations l;
  std::string metric, critical_case, render, golden, out, renderer;
  bool if_missing = false;

  CLI::App* baseline_command = app.add_subcommand(
      "baseline",
      "record golden outputs and baseline scores of --set, or of every set in --gate-sets (16-bit sets: "
      "also their fp32 reference)");
  add_set_options(baseline_command, o);
  baseline_command->add_option("--baseline-dir", l.baseline_dir, "where to record (default: $DIT_BASELINE_DIR)");
  baseline_command->add_option("--default-baseline-dir", l.default_baseline_dir, "used when DIT_BASELINE_DIR is unset");
  baseline_command->add_option("--renderer", renderer,
                               std::string("the program that renders the golden outputs "
                                           "(default: ") +
                                   kRendererName + " beside this one)");
  baseline_command->add_flag("--if-missing", if_missing,
                             "record only the sets with no baseline yet, saying so (a plain ctest run's setup "
                             "fixture); with DIT_JUDGE_DIR set (dit-ar) a missing baseline is an error");

  CLI::App* score_command = app.add_subcommand("score", "score a render directory against a golden directory");
  add_set_options(score_command, o);
  score_command->add_option("--render", render, "render directory")->required();
  score_command->add_option("--golden", golden, "golden render directory")->required();
  score_command->add_option("--out", out, "write the scores here instead of stdout");

  CLI::App* gate_command = app.add_subcommand("gate", "judge one metric or one critical case against the baseline");
  add_set_options(gate_command, o);
  gate_command->add_option("--metric", metric, "a required metric of the contract");
  gate_command->add_option("--critical-case", critical_case, "a critical case of the corpus");
  gate_command->add_option("--classification", l.classification,
                           "exact, numerical, approximate or quantization "
                           "(default: $DIT_CLASSIFICATION, else exact)");
  gate_command->add_option("--run-dir", l.run_dir,
                           "read the render from DIR/<set>/render and write the report to DIR/gates/ (default: "
                           "the render from $DIT_OUTPUT_DIR/quality, the report to $DIT_JUDGE_DIR/quality)");
  gate_command->add_option("--default-run-dir", l.default_run_dir,
                           "used for either of DIT_OUTPUT_DIR and DIT_JUDGE_DIR that is unset");
  gate_command->add_option("--baseline-dir", l.baseline_dir, "recorded baseline (default: $DIT_BASELINE_DIR)");
  gate_command->add_option("--default-baseline-dir", l.default_baseline_dir, "used when DIT_BASELINE_DIR is unset");

  CLI::App* check_command = app.add_subcommand("check", "validate the corpus and the contract");
  add_set_options(check_command, o);

  return run_command_line(app, argc, argv, "dit-quality", [&] {
    if (baseline_command->parsed()) return command_baseline(o, l, renderer, if_missing);
    if (score_command->parsed()) return command_score(o, render, golden, out);
    if (gate_command->parsed()) return command_gate(o, l, metric, critical_case);
    if (check_command->parsed()) return command_check(o);
    return kExitSetup;
  });
}
