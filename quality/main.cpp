// Fixed during a session (quality/ is the evaluator; see quality/README.md).
// dit-quality, the judge: record a baseline (the golden render comes from dit-quality-render, run
// as a child process), score, gate, check. It links no engine code (ARCHITECTURE.md).
// `gate` reads the candidate's render from $DIT_OUTPUT_DIR/quality/<set>/render (never writing
// there), the goldens from $DIT_BASELINE_DIR, the classification from $DIT_CLASSIFICATION, and
// writes its report to $DIT_JUDGE_DIR/quality/gates/<test name>.json; --run-dir overrides both
// folders, --default-run-dir stands in for an unset variable (standalone use).
// Exit codes: 0 passed, 1 a gate failed or the golden render crashed, 2 bad input or setup,
// 77 skipped (no recorded baseline, or no GPU for a GPU set without DIT_REQUIRE_GPU=1).
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
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

int record_baseline(const GateSet& set, const std::string& baseline_dir, const std::string& renderer) {
  const Inputs inputs = load_inputs(set);
  const BaselinePaths paths = baseline_paths(baseline_dir, set.name);
  if (fs::exists(paths.root) && !fs::is_empty(paths.root))
    throw SetupError("a baseline is already recorded at " + paths.root +
                     "; golden outputs are never regenerated during a session (record into a fresh directory)");
  std::string why;
  if (set.needs_gpu() && !gpu_available(why))
    throw SetupError("gate set " + set.name + " needs a GPU (" + why + "); record the other sets with --set NAME");
  if (set.precision != "fp32")
    throw SetupError("golden outputs are recorded on the fp32 path; gate set " + set.name + " uses " + set.precision);
  if (!fs::is_regular_file(renderer))
    throw SetupError("no renderer at " + renderer + " (build the " + kRendererName + " target, or pass --renderer)");
  std::vector<std::string> command = {renderer,      "render",      "--set",      set.name,      "--corpus",
                                      set.corpus,    "--contract",  set.contract, "--backend",   set.backend,
                                      "--precision", set.precision, "--out",      paths.golden()};
  if (!set.data_dir.empty()) command.insert(command.end(), {"--data-dir", set.data_dir});
  const int rendered = run_program(command);
  if (rendered != kExitPassed) {
    fs::remove_all(paths.root);
    std::cerr << "dit-quality: the golden render of set " << set.name << " failed (" << kRendererName << " exit code "
              << rendered << "); nothing was recorded\n";
    return rendered == kExitSkipped ? kExitSetup : rendered;
  }
  const RenderManifest golden = load_render_manifest(paths.golden());
  std::vector<std::string> problems;
  if (golden.corpus_sha256 != inputs.corpus.sha256 || golden.backend != set.backend || golden.precision != "fp32")
    problems.push_back("the golden render is not of " + set.corpus + " on " + set.backend + "/fp32");
  for (const auto& [id, record] : golden.cases) {
    if (!record.deterministic) problems.push_back(id + " is not deterministic (two renders differ)");
  }
  const ScoreSet scores = score_render(inputs.corpus, paths.golden(), paths.golden());
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
  write_baseline_manifest(paths, set.name, inputs.corpus, inputs.contract, golden);
  std::cout << "recorded the baseline of set " << set.name << " (" << inputs.corpus.cases.size() << " cases, "
            << set.backend << "/fp32) at " << paths.root << "\n";
  return kExitPassed;
}

int command_baseline(const SetOptions& o, const Locations& l, const std::string& renderer_option) {
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

  auto skip = [&](int code, const std::string& why) {
    report.reasons.push_back(why);
    report.details = {{"skipped", code == kExitSkipped}, {"classification", classification_name(classification)}};
    write_report(report_path, report);
    return code;
  };
  if (int code = gpu_gate(set)) return skip(code, "no GPU for gate set " + set.name);
  const BaselinePaths paths = baseline_paths(baseline_root(l), set.name);
  if (!baseline_recorded(paths)) {
    std::cout << "SKIP: no baseline recorded at " << paths.root << ". Record one (fp32, the unmodified engine) with\n"
              << "  dit-quality baseline --gate-sets "
              << (o.gate_sets.empty() ? "<build>/quality/gate-sets.json" : o.gate_sets) << " --set " << set.name
              << " --baseline-dir " << baseline_root(l) << "\n"
              << "or `dit-ar baseline`; then point DIT_BASELINE_DIR at that directory.\n";
    return skip(kExitSkipped, "no baseline recorded at " + paths.root);
  }

  std::vector<std::string> problems = verify_baseline(paths, inputs.corpus, inputs.contract);
  // The candidate's render (its test stage wrote it under $DIT_OUTPUT_DIR): only read here.
  const std::string render_dir = render_dir_of(l, set);
  ScoreSet baseline, candidate;
  if (problems.empty()) {
    baseline = load_scores(paths.scores());
    candidate = score_render(inputs.corpus, render_dir, paths.golden());
    write_file_atomic(judge_root(l) + "/" + set.name + "/scores.json", candidate.to_json().dump(2) + "\n",
                      ParentFolders::create);
    try {
      const RenderManifest rendered = load_render_manifest(render_dir);
      if (rendered.corpus_sha256 != inputs.corpus.sha256)
        problems.push_back("the candidate was rendered from another version of " + inputs.corpus.name);
    } catch (const Error& error) {
      problems.push_back(std::string("no candidate render: ") + error.what());
    }
  }
  const GateInputs gate_inputs{inputs.contract, inputs.corpus.ids(), baseline, candidate, classification};
  if (problems.empty()) {
    report = metric.empty() ? gate_critical_case(gate_inputs, critical_case, gate_name)
                            : gate_metric(gate_inputs, metric, gate_name);
  } else {
    report.reasons = problems;
    report.passed = false;
  }
  report.details["render_dir"] = render_dir;
  report.details["baseline_dir"] = paths.root;
  write_report(report_path, report);
  for (const std::string& reason : report.reasons) std::cout << "  " << reason << "\n";
  std::cout << gate_name << " (" << classification_name(classification) << "): " << (report.passed ? "PASS" : "FAIL")
            << "\nreport: " << report_path << "\n";
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

  CLI::App* baseline_command = app.add_subcommand(
      "baseline", "record golden outputs and baseline scores (fp32) of --set, or of every set in --gate-sets");
  add_set_options(baseline_command, o);
  baseline_command->add_option("--baseline-dir", l.baseline_dir, "where to record (default: $DIT_BASELINE_DIR)");
  baseline_command->add_option("--default-baseline-dir", l.default_baseline_dir, "used when DIT_BASELINE_DIR is unset");
  baseline_command->add_option("--renderer", renderer,
                               std::string("the program that renders the golden outputs "
                                           "(default: ") +
                                   kRendererName + " beside this one)");

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
    if (baseline_command->parsed()) return command_baseline(o, l, renderer);
    if (score_command->parsed()) return command_score(o, render, golden, out);
    if (gate_command->parsed()) return command_gate(o, l, metric, critical_case);
    if (check_command->parsed()) return command_check(o);
    return kExitSetup;
  });
}
