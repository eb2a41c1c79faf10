// Fixed during a session (quality/ is the evaluator; see quality/README.md).
// What dit-quality (the judge) and dit-quality-render (the renderer) share on the command line:
// the gate-set options, where renders, gate reports and baselines live, the inputs' cross-checks,
// exit codes.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>

#include "quality/contract.h"
#include "quality/corpus.h"
#include "quality/gate_sets.h"

namespace dit::quality {

constexpr int kExitPassed = 0, kExitFailed = 1, kExitSetup = 2, kExitSkipped = 77;

// A problem with the command line or the inputs: exit code 2.
struct SetupError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct SetOptions {
  std::string gate_sets, set, corpus, contract, backend, precision, data_dir;
  std::string weights, weights_sha256;  // the set's checkpoint, given together (--weights, --weights-sha256)
};

// Where a program reads and writes (quality/README.md, "Where files go"). The driver's stages set
// DIT_OUTPUT_DIR (the candidate's outputs: renders), DIT_JUDGE_DIR (the judge's: gate reports),
// DIT_BASELINE_DIR (the goldens) and DIT_CLASSIFICATION; run_dir (--run-dir) overrides the first
// two, and default_run_dir (--default-run-dir) stands in for either one when it is unset.
struct Locations {
  std::string run_dir, default_run_dir, baseline_dir, default_baseline_dir, classification;
};

void add_set_options(CLI::App* command, SetOptions& options);
std::string environment_or(const char* name, const std::string& fallback);

// The set named by --gate-sets/--set, with the single-field overrides applied (--weights and
// --weights-sha256 together, or neither: a SetupError otherwise).
GateSet resolve_set(const SetOptions& options);

struct Inputs {
  Corpus corpus;
  Contract contract;
};
// Loads and cross-checks the corpus and the contract; every problem is a SetupError.
Inputs load_inputs(const GateSet& set);

// 0 when the set can run here; else the exit code to return (77 skip, or 1 under DIT_REQUIRE_GPU=1).
int gpu_gate(const GateSet& set);

std::string output_root(const Locations& locations);    // --run-dir, $DIT_OUTPUT_DIR/quality, the default
std::string judge_root(const Locations& locations);     // --run-dir, $DIT_JUDGE_DIR/quality, the default
std::string baseline_root(const Locations& locations);  // --baseline-dir, $DIT_BASELINE_DIR, the default
std::string render_dir_of(const Locations& locations, const GateSet& set);  // <output root>/<set>/render

// Runs `main` (parses `app` first) and maps what escapes it to the exit codes above.
int run_command_line(CLI::App& app, int argc, char** argv, const std::string& program,
                     const std::function<int()>& main);

}  // namespace dit::quality
