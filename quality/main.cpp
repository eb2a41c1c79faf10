// Fixed during a session (quality/ is the evaluator; see quality/README.md).
// dit-quality: render a corpus, record a baseline, score, gate, calibrate.
// Exit codes: 0 passed, 1 a gate failed or a render crashed, 2 bad input or setup,
// 77 skipped (no recorded baseline, or no GPU for a GPU set without DIT_REQUIRE_GPU=1).
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>
#include <stdexcept>

#include <CLI/CLI.hpp>

#include "model/error.h"
#include "quality/calibrate.h"
#include "quality/contract.h"
#include "quality/corpus.h"
#include "quality/files.h"
#include "quality/gate.h"
#include "quality/gate_sets.h"
#include "quality/gpu_probe.h"
#include "quality/render.h"
#include "quality/scoring.h"
#include "quality/store.h"

namespace {

namespace fs = std::filesystem;
using namespace dit;
using namespace dit::quality;

constexpr int kExitPassed = 0, kExitFailed = 1, kExitSetup = 2, kExitSkipped = 77;

// A problem with the command line or the inputs: exit code 2.
struct SetupError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct SetOptions {
  std::string gate_sets, set, corpus, contract, backend, precision, data_dir;
};

struct Locations {
  std::string run_dir, default_run_dir, baseline_dir, default_baseline_dir, classification;
};

void add_set_options(CLI::App* command, SetOptions& o) {
  command->add_option("--gate-sets", o.gate_sets, "gate-sets.json written by CMake (<build>/quality/gate-sets.json)");
  command->add_option("--set", o.set, "the gate set to use (cpu, gpu)");
  command->add_option("--corpus", o.corpus, "corpus .jsonl (overrides the gate set's)");
  command->add_option("--contract", o.contract, "contract.json (overrides the gate set's)");
  command->add_option("--backend", o.backend, "cpu or cuda (overrides the gate set's)");
  command->add_option("--precision", o.precision, "fp32, tf32, fp16 or bf16 (overrides the gate set's)");
  command->add_option("--data-dir", o.data_dir, "tests/data, where the tiny_* model weights live");
}

std::string environment_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

GateSet resolve_set(const SetOptions& o) {
  GateSet set;
  if (!o.gate_sets.empty()) {
    const std::vector<GateSet> sets = load_gate_sets(o.gate_sets);
    std::string names;
    bool found = false;
    for (const GateSet& candidate : sets) {
      names += (names.empty() ? "" : ", ") + candidate.name;
      if (candidate.name == o.set || (o.set.empty() && sets.size() == 1)) {
        set = candidate;
        found = true;
      }
    }
    if (!found) throw SetupError(o.gate_sets + " has no set \"" + o.set + "\" (sets: " + names + ")");
  }
  if (!o.set.empty()) set.name = o.set;
  if (!o.corpus.empty()) set.corpus = o.corpus;
  if (!o.contract.empty()) set.contract = o.contract;
  if (!o.backend.empty()) set.backend = o.backend;
  if (!o.precision.empty()) set.precision = o.precision;
  if (!o.data_dir.empty()) set.data_dir = o.data_dir;
  if (set.name.empty()) set.name = "default";
  if (set.corpus.empty() || set.contract.empty())
    throw SetupError("name a gate set (--gate-sets FILE --set NAME) or give --corpus and --contract");
  return set;
}

struct Inputs {
  Corpus corpus;
  Contract contract;
};

// Loads and cross-checks the corpus and the contract; every problem is a setup error.
Inputs load_inputs(const GateSet& set) {
  Inputs inputs{load_corpus(set.corpus), load_contract(set.contract)};
  for (const Case& c : inputs.corpus.cases) {
    if (is_tiny_model(c.model)) continue;
    try {
      model_config(c.model, c.image_size);
    } catch (const Error& error) {
      throw SetupError(set.corpus + ":" + std::to_string(c.line) + ": " + error.what());
    }
  }
  const std::vector<std::string>& listed = inputs.contract.critical_cases_of(inputs.corpus.name);
  const std::vector<std::string> flagged = inputs.corpus.critical_ids();
  for (const std::string& id : listed) {
    if (!inputs.corpus.contains(id))
      throw SetupError(set.contract + ": critical case \"" + id + "\" is not in " + set.corpus);
    if (std::find(flagged.begin(), flagged.end(), id) == flagged.end())
      throw SetupError(set.contract + ": critical case \"" + id + "\" is not flagged \"critical\": true in " +
                       set.corpus + " (line " + std::to_string(inputs.corpus.at(id).line) + ")");
  }
  for (const std::string& id : flagged) {
    if (std::find(listed.begin(), listed.end(), id) == listed.end())
      throw SetupError(set.corpus + ":" + std::to_string(inputs.corpus.at(id).line) + ": case \"" + id +
                       "\" is flagged critical but " + set.contract + " does not list it");
  }
  return inputs;
}

RenderSettings render_settings(const GateSet& set, bool verbose) {
  RenderSettings settings;
  try {
    settings.backend = parse_backend(set.backend);
    settings.precision = parse_precision(set.precision);
  } catch (const Error& error) {
    throw SetupError(error.what());
  }
  settings.data_dir = set.data_dir;
  if (verbose) settings.log = &std::cout;
  return settings;
}

// 0 when the set can run here; else the exit code to return (77 skip, or 1 under DIT_REQUIRE_GPU=1).
int gpu_gate(const GateSet& set) {
  std::string why;
  if (!set.needs_gpu() || gpu_available(why)) return 0;
  if (environment_or("DIT_REQUIRE_GPU", "") == "1") {
    std::cerr << "FAIL: gate set " << set.name << " needs a GPU (" << why << ") and DIT_REQUIRE_GPU=1 is set\n";
    return kExitFailed;
  }
  std::cout << "SKIP: gate set " << set.name << " needs a GPU (" << why
            << "); set DIT_REQUIRE_GPU=1 to make this a failure\n";
  return kExitSkipped;
}

std::string run_root(const Locations& l) {
  if (!l.run_dir.empty()) return l.run_dir;
  const std::string from_environment = environment_or("DIT_RUN_DIR", "");
  if (!from_environment.empty()) return from_environment + "/quality";
  if (l.default_run_dir.empty()) throw SetupError("no run directory: set DIT_RUN_DIR or pass --run-dir");
  return l.default_run_dir;
}

std::string baseline_root(const Locations& l) {
  if (!l.baseline_dir.empty()) return l.baseline_dir;
  const std::string dir = environment_or("DIT_BASELINE_DIR", l.default_baseline_dir);
  if (dir.empty()) throw SetupError("no baseline directory: set DIT_BASELINE_DIR or pass --baseline-dir");
  return dir;
}

std::string render_dir_of(const Locations& l, const GateSet& set) { return run_root(l) + "/" + set.name + "/render"; }

// ---- render ----------------------------------------------------------------------------------

int command_render(const SetOptions& o, const Locations& l) {
  const GateSet set = resolve_set(o);
  const Inputs inputs = load_inputs(set);
  const RenderSettings settings = render_settings(set, true);
  if (int code = gpu_gate(set)) return code;
  const std::string out = render_dir_of(l, set);
  try {
    const RenderManifest manifest = render_corpus(inputs.corpus, set.name, settings, out);
    int unstable = 0;
    for (const auto& [id, record] : manifest.cases) unstable += !record.deterministic;
    std::cout << "rendered " << manifest.cases.size() << " cases of " << set.corpus << " on " << set.backend << "/"
              << set.precision << " into " << out << (unstable ? " (" + std::to_string(unstable) + " not deterministic)" : "")
              << "\n";
  } catch (const Error& error) {
    std::cerr << "render failed: " << error.what() << "\n";
    return kExitFailed;
  }
  return kExitPassed;
}

// ---- baseline --------------------------------------------------------------------------------

int record_baseline(const GateSet& set, const std::string& baseline_dir) {
  const Inputs inputs = load_inputs(set);
  const RenderSettings settings = render_settings(set, true);
  const BaselinePaths paths = baseline_paths(baseline_dir, set.name);
  if (fs::exists(paths.root) && !fs::is_empty(paths.root))
    throw SetupError("a baseline is already recorded at " + paths.root +
                     "; golden outputs are never regenerated during a session (record into a fresh directory)");
  std::string why;
  if (set.needs_gpu() && !gpu_available(why))
    throw SetupError("gate set " + set.name + " needs a GPU (" + why + "); record the other sets with --set NAME");
  if (settings.precision != Precision::fp32)
    throw SetupError("golden outputs are recorded on the fp32 path; gate set " + set.name + " uses " + set.precision);
  const RenderManifest golden = render_corpus(inputs.corpus, set.name, settings, paths.golden());
  std::vector<std::string> problems;
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

int command_baseline(const SetOptions& o, const Locations& l) {
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
  for (const GateSet& set : sets) record_baseline(set, dir);
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
    write_file_atomically(out, text);
  }
  return scores.problems.empty() ? kExitPassed : kExitFailed;
}

// ---- gate ------------------------------------------------------------------------------------

void write_report(const std::string& path, const GateReport& report) {
  write_file_atomically(path, report.to_json().dump(2) + "\n");
}

int command_gate(const SetOptions& o, const Locations& l, const std::string& metric, const std::string& critical_case) {
  const GateSet set = resolve_set(o);
  const Inputs inputs = load_inputs(set);
  if (metric.empty() == critical_case.empty()) throw SetupError("gate needs exactly one of --metric or --critical-case");
  if (!metric.empty() && !inputs.contract.requires_metric(metric))
    throw SetupError("metric \"" + metric + "\" is not a required metric of " + set.contract);
  if (!critical_case.empty()) {
    const auto& listed = inputs.contract.critical_cases_of(inputs.corpus.name);
    if (std::find(listed.begin(), listed.end(), critical_case) == listed.end())
      throw SetupError("\"" + critical_case + "\" is not a critical case of " + inputs.corpus.name + " in " + set.contract);
  }
  Classification classification;
  try {
    classification = parse_classification(!l.classification.empty() ? l.classification
                                                                     : environment_or("DIT_CLASSIFICATION", "exact"));
  } catch (const Error& error) {
    throw SetupError(error.what());
  }
  const std::string gate_name =
      "quality." + set.name + "." + (metric.empty() ? "critical." + critical_case : metric);
  const std::string report_path = run_root(l) + "/gates/" + gate_name + ".json";
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
              << "  dit-quality baseline --gate-sets " << (o.gate_sets.empty() ? "<build>/quality/gate-sets.json" : o.gate_sets)
              << " --set " << set.name << " --baseline-dir " << baseline_root(l) << "\n"
              << "or `dit-ar baseline`; then point DIT_BASELINE_DIR at that directory.\n";
    return skip(kExitSkipped, "no baseline recorded at " + paths.root);
  }

  std::vector<std::string> problems = verify_baseline(paths, inputs.corpus, inputs.contract);
  const std::string render_dir = render_dir_of(l, set);
  ScoreSet baseline, candidate;
  if (problems.empty()) {
    baseline = load_scores(paths.scores());
    candidate = score_render(inputs.corpus, render_dir, paths.golden());
    write_file_atomically(run_root(l) + "/" + set.name + "/scores.json", candidate.to_json().dump(2) + "\n");
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

// ---- calibrate -------------------------------------------------------------------------------

int command_calibrate(const SetOptions& o, const std::string& out) {
  const GateSet set = resolve_set(o);
  const Inputs inputs = load_inputs(set);
  const RenderSettings settings = render_settings(set, false);
  std::string why;
  if (set.needs_gpu() && !gpu_available(why)) throw SetupError("gate set " + set.name + " needs a GPU (" + why + ")");
  const Calibration calibration = calibrate(inputs.corpus, settings, &std::cout);
  const nlohmann::json result = calibration.to_json(inputs.contract);
  std::cout << "\nworst score per metric over each restatement (vs a reference render):\n";
  for (const auto& r : result["restatements"]) {
    std::cout << "  " << r["name"].get<std::string>() << " (" << r["kind"].get<std::string>() << "): " << r["worst"].dump()
              << "\n";
  }
  std::cout << "worst spread (exact + rounding): " << result["worst_spread"].dump() << "\nproposed floors:    "
            << result["proposed_floor"].dump() << "\ncontract floors:    " << result["contract_floor"].dump() << "\n";
  if (!out.empty()) write_file_atomically(out, result.dump(2) + "\n");
  return kExitPassed;
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
  CLI::App app{"dit-quality: the fixed quality evaluator of DiT AutoResearch (render, baseline, score, gate, calibrate)"};
  app.require_subcommand(1);
  SetOptions o;
  Locations l;
  std::string metric, critical_case, render, golden, out;

  CLI::App* render_command = app.add_subcommand("render", "render the candidate's outputs (never reads the golden)");
  add_set_options(render_command, o);
  render_command->add_option("--run-dir", l.run_dir, "quality run directory (default: $DIT_RUN_DIR/quality)");
  render_command->add_option("--default-run-dir", l.default_run_dir, "used when DIT_RUN_DIR is unset");

  CLI::App* baseline_command = app.add_subcommand("baseline", "record golden outputs and baseline scores (fp32) of --set, or of every set in --gate-sets");
  add_set_options(baseline_command, o);
  baseline_command->add_option("--baseline-dir", l.baseline_dir, "where to record (default: $DIT_BASELINE_DIR)");
  baseline_command->add_option("--default-baseline-dir", l.default_baseline_dir, "used when DIT_BASELINE_DIR is unset");

  CLI::App* score_command = app.add_subcommand("score", "score a render directory against a golden directory");
  add_set_options(score_command, o);
  score_command->add_option("--render", render, "render directory")->required();
  score_command->add_option("--golden", golden, "golden render directory")->required();
  score_command->add_option("--out", out, "write the scores here instead of stdout");

  CLI::App* gate_command = app.add_subcommand("gate", "judge one metric or one critical case against the baseline");
  add_set_options(gate_command, o);
  gate_command->add_option("--metric", metric, "a required metric of the contract");
  gate_command->add_option("--critical-case", critical_case, "a critical case of the corpus");
  gate_command->add_option("--classification", l.classification, "exact, numerical, approximate or quantization "
                                                                  "(default: $DIT_CLASSIFICATION, else exact)");
  gate_command->add_option("--run-dir", l.run_dir, "quality run directory (default: $DIT_RUN_DIR/quality)");
  gate_command->add_option("--default-run-dir", l.default_run_dir, "used when DIT_RUN_DIR is unset");
  gate_command->add_option("--baseline-dir", l.baseline_dir, "recorded baseline (default: $DIT_BASELINE_DIR)");
  gate_command->add_option("--default-baseline-dir", l.default_baseline_dir, "used when DIT_BASELINE_DIR is unset");

  CLI::App* calibrate_command = app.add_subcommand("calibrate", "measure exact restatements and derive margins");
  add_set_options(calibrate_command, o);
  calibrate_command->add_option("--out", out, "write the calibration JSON here");

  CLI::App* check_command = app.add_subcommand("check", "validate the corpus and the contract");
  add_set_options(check_command, o);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::ParseError& error) {
    app.exit(error);
    return kExitSetup;
  }
  try {
    if (render_command->parsed()) return command_render(o, l);
    if (baseline_command->parsed()) return command_baseline(o, l);
    if (score_command->parsed()) return command_score(o, render, golden, out);
    if (gate_command->parsed()) return command_gate(o, l, metric, critical_case);
    if (calibrate_command->parsed()) return command_calibrate(o, out);
    if (check_command->parsed()) return command_check(o);
  } catch (const SetupError& error) {
    std::cerr << "dit-quality: " << error.what() << "\n";
    return kExitSetup;
  } catch (const Error& error) {
    std::cerr << "dit-quality: " << error.what() << "\n";
    return error.kind() == ErrorKind::device ? kExitFailed : kExitSetup;
  } catch (const std::exception& error) {
    std::cerr << "dit-quality: " << error.what() << "\n";
    return kExitFailed;
  }
  return kExitSetup;
}
