// Fixed during a session (quality/ is the evaluator; see quality/README.md).
#include "quality/command_line.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "quality/gpu_probe.h"

namespace dit::quality {

void add_set_options(CLI::App* command, SetOptions& o) {
  command->add_option("--gate-sets", o.gate_sets, "gate-sets.json written by CMake (<build>/quality/gate-sets.json)");
  command->add_option("--set", o.set, "the gate set to use (cpu, gpu)");
  command->add_option("--corpus", o.corpus, "corpus .jsonl (overrides the gate set's)");
  command->add_option("--contract", o.contract, "contract.json (overrides the gate set's)");
  command->add_option("--backend", o.backend, "cpu or cuda (overrides the gate set's)");
  command->add_option("--precision", o.precision, "fp32, tf32, fp16 or bf16 (overrides the gate set's)");
  command->add_option("--data-dir", o.data_dir, "tests/data, where the tiny_* model weights live");
  command->add_option(
      "--weights", o.weights,
      "DiT checkpoint of every case without its own (overrides the gate set's; needs --weights-sha256)");
  command->add_option("--weights-sha256", o.weights_sha256, "the SHA-256 of --weights, 64 hexadecimal digits");
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
  if (!o.weights.empty() || !o.weights_sha256.empty()) {
    const nlohmann::json reference = {{"path", o.weights}, {"sha256", o.weights_sha256}};
    const std::string problem = weights_reference_problem(reference);
    if (o.weights.empty() || o.weights_sha256.empty() || !problem.empty())
      throw SetupError("--weights PATH and --weights-sha256 HEX go together: " +
                       (problem.empty() ? std::string("give both") : "the reference " + problem));
    set.weights = weights_reference_from_json(reference, {});
  }
  if (set.name.empty()) set.name = "default";
  if (set.corpus.empty() || set.contract.empty())
    throw SetupError("name a gate set (--gate-sets FILE --set NAME) or give --corpus and --contract");
  return set;
}

Inputs load_inputs(const GateSet& set) {
  Inputs inputs{load_corpus(set.corpus), load_contract(set.contract)};
  for (const Case& c : inputs.corpus.cases) {
    const std::string problem = model_problem(c);
    if (!problem.empty()) throw SetupError(set.corpus + ":" + std::to_string(c.line) + ": " + problem);
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

namespace {

// --run-dir, else $<variable>/quality, else --default-run-dir.
std::string quality_root(const Locations& l, const char* variable) {
  if (!l.run_dir.empty()) return l.run_dir;
  const std::string from_environment = environment_or(variable, "");
  if (!from_environment.empty()) return from_environment + "/quality";
  if (l.default_run_dir.empty())
    throw SetupError(std::string("no quality directory: set ") + variable + " or pass --run-dir");
  return l.default_run_dir;
}

}  // namespace

std::string output_root(const Locations& l) { return quality_root(l, "DIT_OUTPUT_DIR"); }

std::string judge_root(const Locations& l) { return quality_root(l, "DIT_JUDGE_DIR"); }

std::string baseline_root(const Locations& l) {
  if (!l.baseline_dir.empty()) return l.baseline_dir;
  const std::string dir = environment_or("DIT_BASELINE_DIR", l.default_baseline_dir);
  if (dir.empty()) throw SetupError("no baseline directory: set DIT_BASELINE_DIR or pass --baseline-dir");
  return dir;
}

std::string render_dir_of(const Locations& l, const GateSet& set) {
  return output_root(l) + "/" + set.name + "/render";
}

int run_command_line(CLI::App& app, int argc, char** argv, const std::string& program,
                     const std::function<int()>& main) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::ParseError& error) {
    app.exit(error);
    return kExitSetup;
  }
  try {
    return main();
  } catch (const SetupError& error) {
    std::cerr << program << ": " << error.what() << "\n";
    return kExitSetup;
  } catch (const Error& error) {
    std::cerr << program << ": " << error.what() << "\n";
    return error.kind() == ErrorKind::device ? kExitFailed : kExitSetup;
  } catch (const std::exception& error) {
    std::cerr << program << ": " << error.what() << "\n";
    return kExitFailed;
  }
}

}  // namespace dit::quality
