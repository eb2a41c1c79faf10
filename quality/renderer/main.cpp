// Fixed during a session (quality/ is the evaluator; see quality/README.md).
// dit-quality-render: renders a gate set's corpus through the engine (the candidate's outputs for
// the gates, the golden outputs when dit-quality records a baseline) and runs the calibration.
// The one quality program that links the engine; it is never told where the golden files are.
// `render` writes to --out, else <--run-dir>/<set>/render, else $DIT_OUTPUT_DIR/quality/<set>/render
// (the candidate's test stage), else <--default-run-dir>/<set>/render. Of the environment it reads
// DIT_OUTPUT_DIR and DIT_REQUIRE_GPU, no other DIT_* variable.
// Exit codes: 0 rendered, 1 a render crashed, 2 bad input or setup, 77 skipped (no GPU for a GPU
// set without DIT_REQUIRE_GPU=1).
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "core/error.h"
#include "core/files.h"
#include "model/config.h"
#include "model/dit_model.h"
#include "quality/renderer/calibrate.h"
#include "quality/command_line.h"
#include "quality/gpu_probe.h"
#include "quality/renderer/render.h"

namespace {

using namespace dit;
using namespace dit::quality;

// The corpus cross-checked as the judge does, and every model name checked by the engine too.
Inputs load_renderable_inputs(const GateSet& set) {
  Inputs inputs = load_inputs(set);
  for (const Case& c : inputs.corpus.cases) {
    if (is_tiny_model(c.model)) continue;
    try {
      model_config(c.model, c.image_size);
    } catch (const Error& error) {
      throw SetupError(set.corpus + ":" + std::to_string(c.line) + ": " + error.what());
    }
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

int command_render(const SetOptions& o, const Locations& l, const std::string& out_option) {
  const GateSet set = resolve_set(o);
  const Inputs inputs = load_renderable_inputs(set);
  const RenderSettings settings = render_settings(set, true);
  if (int code = gpu_gate(set)) return code;
  const std::string out = out_option.empty() ? render_dir_of(l, set) : out_option;
  try {
    const RenderManifest manifest = render_corpus(inputs.corpus, set.name, settings, out);
    int unstable = 0;
    for (const auto& [id, record] : manifest.cases) unstable += !record.deterministic;
    std::cout << "rendered " << manifest.cases.size() << " cases of " << set.corpus << " on " << set.backend << "/"
              << set.precision << " into " << out
              << (unstable ? " (" + std::to_string(unstable) + " not deterministic)" : "") << "\n";
  } catch (const Error& error) {
    std::cerr << "render failed: " << error.what() << "\n";
    return kExitFailed;
  }
  return kExitPassed;
}

int command_calibrate(const SetOptions& o, const std::string& out) {
  const GateSet set = resolve_set(o);
  const Inputs inputs = load_renderable_inputs(set);
  const RenderSettings settings = render_settings(set, false);
  std::string why;
  if (set.needs_gpu() && !gpu_available(why)) throw SetupError("gate set " + set.name + " needs a GPU (" + why + ")");
  const Calibration calibration = calibrate(inputs.corpus, settings, &std::cout);
  const nlohmann::json result = calibration.to_json(inputs.contract);
  std::cout << "\nworst score per metric over each restatement (vs a reference render):\n";
  for (const auto& r : result["restatements"]) {
    std::cout << "  " << r["name"].get<std::string>() << " (" << r["kind"].get<std::string>()
              << "): " << r["worst"].dump() << "\n";
  }
  std::cout << "worst spread (exact + rounding): " << result["worst_spread"].dump()
            << "\nproposed floors:    " << result["proposed_floor"].dump()
            << "\ncontract floors:    " << result["contract_floor"].dump() << "\n";
  if (!out.empty()) write_json_atomic(out, result, ParentFolders::create);
  return kExitPassed;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dit-quality-render: renders a gate set's corpus through the engine, and calibrates"};
  app.require_subcommand(1);
  SetOptions o;
  Locations l;
  std::string out;

  CLI::App* render_command = app.add_subcommand("render", "render the candidate's outputs (never reads the golden)");
  add_set_options(render_command, o);
  render_command->add_option("--run-dir", l.run_dir, "render into DIR/<set>/render (default: $DIT_OUTPUT_DIR/quality)");
  render_command->add_option("--default-run-dir", l.default_run_dir, "used when DIT_OUTPUT_DIR is unset");
  render_command->add_option("--out", out, "render into this directory instead of <run dir>/<set>/render");

  CLI::App* calibrate_command = app.add_subcommand("calibrate", "measure exact restatements and derive margins");
  add_set_options(calibrate_command, o);
  calibrate_command->add_option("--out", out, "write the calibration JSON here");

  return run_command_line(app, argc, argv, "dit-quality-render", [&] {
    if (render_command->parsed()) return command_render(o, l, out);
    if (calibrate_command->parsed()) return command_calibrate(o, out);
    return kExitSetup;
  });
}
