// Fixed during a session (quality/ is the evaluator; see quality/README.md).
// dit-quality-render: renders a gate set's corpus through the engine (the candidate's outputs for
// the gates, the golden outputs when dit-quality records a baseline) and runs the calibration.
// The one quality program that links the engine; it is never told where the golden files are.
// `render` writes to --out, else <--run-dir>/<set>/render, else $DIT_OUTPUT_DIR/quality/<set>/render
// (the candidate's test stage), else <--default-run-dir>/<set>/render. Of the environment it reads
// DIT_OUTPUT_DIR and DIT_REQUIRE_GPU, no other DIT_* variable.
// Determinism: `render` runs itself again (/proc/self/exe, the same arguments and environment, plus
// the hidden --determinism-pass FILE), on the GPU beside its own render of every case, on the CPU
// after it, and waits for it: that fresh process (a new engine, a new CUDA context) renders every
// case once more and writes only the per-case output_sha256 to FILE, a file in a temporary folder
// under TMPDIR that the parent removes, never in the render directory. A case is deterministic when
// both processes gave the same bytes.
// `calibrate --write-contract PATH` writes the proposed floors into the contract at PATH.
// Every checkpoint a case renders from (its own or the set's: --weights, gate-sets.json) is hashed
// before anything is rendered; a missing one or one of another sha256 is exit 2, nothing written.
// Exit codes: 0 rendered, 1 a render crashed, 2 bad input or setup, 77 skipped (no GPU for a GPU
// set without DIT_REQUIRE_GPU=1).
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/ctest_gpu.h"
#include "core/error.h"
#include "core/files.h"
#include "model/config.h"
#include "model/dit_model.h"
#include "quality/command_line.h"
#include "quality/contract.h"
#include "quality/floors.h"
#include "quality/gpu_probe.h"
#include "quality/renderer/calibrate.h"
#include "quality/renderer/render.h"

extern char** environ;

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
  settings.weights = set.weights;
  if (verbose) settings.log = &std::cout;
  return settings;
}

// Every checkpoint the corpus renders from, each file hashed once: one that is missing, unreadable
// or of another sha256 is a SetupError naming it, before anything is rendered or written. Called
// after the GPU check, so that a GPU set still skips on a machine without the GPU or the file.
// Returns the checkpoints, each once.
std::vector<WeightsReference> check_weights_files(const Corpus& corpus, const GateSet& set,
                                                  const RenderSettings& settings) {
  std::vector<WeightsReference> checked;
  for (const Case& c : corpus.cases) {
    const std::optional<WeightsReference>& checkpoint = case_weights(c, settings);
    if (!checkpoint || std::find(checked.begin(), checked.end(), *checkpoint) != checked.end()) continue;
    const std::string problem = weights_file_problem(*checkpoint);
    if (!problem.empty())
      throw SetupError(c.weights ? set.corpus + ":" + std::to_string(c.line) + ": case " + c.id + ": " + problem
                                 : "gate set " + set.name + " (the weights of case " + c.id + "): " + problem);
    checked.push_back(*checkpoint);
  }
  return checked;
}

constexpr const char* kDeterminismPassOption = "--determinism-pass";
constexpr const char* kHashFileFormat = "dit-quality-determinism/1";

// A folder of its own under TMPDIR for the determinism pass's hash file, removed however the
// render ends: nothing of the pass reaches the render directory the judge reads.
class TemporaryFolder {
 public:
  TemporaryFolder() {
    std::string pattern = (std::filesystem::temp_directory_path() / "dit-quality-determinism-XXXXXX").string();
    if (!mkdtemp(pattern.data()))
      throw Error(ErrorKind::io, "cannot create a temporary folder like " + pattern + " for the determinism pass");
    path_ = pattern;
  }
  ~TemporaryFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TemporaryFolder(const TemporaryFolder&) = delete;
  TemporaryFolder& operator=(const TemporaryFolder&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The second render of `render`: this program again, a fresh process with the same arguments and
// environment and --determinism-pass FILE; case id -> output_sha256 from FILE.
std::map<std::string, std::string> render_in_fresh_process(const std::vector<std::string>& arguments) {
  const TemporaryFolder folder;
  const std::string hash_file = folder.path() + "/output-hashes.json";
  std::vector<std::string> child_arguments = arguments;
  child_arguments.insert(child_arguments.end(), {kDeterminismPassOption, hash_file});
  std::vector<char*> argv;
  for (std::string& argument : child_arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  std::cout.flush();
  pid_t child = 0;
  if (const int error = posix_spawn(&child, "/proc/self/exe", nullptr, nullptr, argv.data(), environ))
    throw Error(ErrorKind::io, std::string("cannot start the determinism pass: ") + std::strerror(error));
  std::cout << "determinism: second render in process " << child << " (this one is " << getpid() << ")\n";
  std::cout.flush();
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR)
      throw Error(ErrorKind::io, std::string("waiting for the determinism pass: ") + std::strerror(errno));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != kExitPassed)
    throw Error(ErrorKind::invalid_argument,
                "the determinism pass (process " + std::to_string(child) + ") " +
                    (WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                       : "was killed by signal " + std::to_string(WTERMSIG(status))));
  const nlohmann::json document = read_json_file(hash_file);
  if (!document.is_object() || document.value("format", "") != kHashFileFormat ||
      document.value("pid", pid_t{-1}) != child || !document.contains("output_sha256") ||
      !document.at("output_sha256").is_object())
    throw Error(ErrorKind::invalid_file,
                hash_file + " is not the determinism pass's hash file of process " + std::to_string(child));
  return document.at("output_sha256").get<std::map<std::string, std::string>>();
}

// The child of render_in_fresh_process: every case once, only the hashes written, to `hash_file`.
int command_determinism_pass(const SetOptions& o, const std::string& hash_file) {
  const GateSet set = resolve_set(o);
  const Inputs inputs = load_renderable_inputs(set);
  const RenderSettings settings = render_settings(set, false);
  if (int code = gpu_gate(set)) return code;
  // The checkpoints are not hashed again: the parent checked them just before, and a file changed
  // since gives other bytes here, which makes its cases not deterministic.
  const std::map<std::string, std::string> hashes = render_output_hashes(inputs.corpus, settings);
  write_json_atomic(hash_file, {{"format", kHashFileFormat}, {"pid", getpid()}, {"output_sha256", hashes}});
  std::cout << "determinism pass in process " << getpid() << " (parent " << getppid() << "): rendered " << hashes.size()
            << " cases\n";
  return kExitPassed;
}

int command_render(const SetOptions& o, const Locations& l, const std::string& out_option,
                   const std::vector<std::string>& arguments) {
  const GateSet set = resolve_set(o);
  const Inputs inputs = load_renderable_inputs(set);
  const RenderSettings settings = render_settings(set, true);
  if (int code = gpu_gate(set)) return code;
  for (const WeightsReference& checkpoint : check_weights_files(inputs.corpus, set, settings))
    std::cout << "weights: " << checkpoint.path << " (sha256 " << checkpoint.sha256 << ", checked)\n";
  const std::string out = out_option.empty() ? render_dir_of(l, set) : out_option;
  try {
    const RenderManifest manifest =
        render_corpus(inputs.corpus, set.name, settings, out, [&] { return render_in_fresh_process(arguments); });
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

// quality/calibration/<device>-<set>.json, the device lower-cased with spaces as dashes.
std::string default_calibration_file(const std::string& device, const std::string& set) {
  std::string name;
  for (char c : device) name += c == ' ' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return "quality/calibration/" + name + "-" + set + ".json";
}

std::string floor_text(const std::optional<double>& value) {
  if (!value) return "(none)";
  std::ostringstream out;
  out << *value;
  return out.str();
}

// One line per floor of (device, set) that differs between `before` (null: none) and `after`.
void print_floor_changes(const SetFloors* before, const SetFloors& after) {
  using Table = std::optional<std::map<std::string, double>>;
  const auto compare = [](const char* name, const Table& old_table, const Table& new_table) {
    std::set<std::string> metrics;
    for (const Table* table : {&old_table, &new_table})
      if (*table)
        for (const auto& [metric, value] : **table) metrics.insert(metric);
    for (const std::string& metric : metrics) {
      const auto value_in = [&](const Table& table) -> std::optional<double> {
        if (!table || !table->count(metric)) return std::nullopt;
        return table->at(metric);
      };
      const std::optional<double> old_value = value_in(old_table), new_value = value_in(new_table);
      if (old_value != new_value)
        std::cout << "  " << name << "." << metric << ": " << floor_text(old_value) << " -> " << floor_text(new_value)
                  << "\n";
    }
  };
  compare("exact", before ? Table(before->exact) : Table(), Table(after.exact));
  compare("numerical", before ? before->numerical : Table(), after.numerical);
  compare("fp32_bound", before ? before->fp32_bound : Table(), after.fp32_bound);
  if (!before || before->calibration != after.calibration)
    std::cout << "  calibration: " << (before ? before->calibration : "(none)") << " -> " << after.calibration << "\n";
  if (!before || before->margin != after.margin) std::cout << "  margin: changed\n";
}

// Holds an exclusive flock on the folder of `path` while alive, so that calibrations of several
// gate sets running at once update one contract in turn and none loses another's floors. The
// folder, not the file: the atomic writer replaces the file by a rename, so a lock on the file's
// inode would not be seen by a process that opens the new one.
class FolderLock {
 public:
  explicit FolderLock(const std::string& path) {
    const std::string folder = std::filesystem::path(path).parent_path().empty()
                                   ? std::string(".")
                                   : std::filesystem::path(path).parent_path().string();
    descriptor_ = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (descriptor_ < 0 || ::flock(descriptor_, LOCK_EX) != 0)
      throw SetupError("--write-contract: cannot lock the folder " + folder + ": " + std::strerror(errno));
  }
  ~FolderLock() {
    if (descriptor_ >= 0) ::close(descriptor_);  // closing releases the lock
  }
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int descriptor_ = -1;
};

// Writes `floors` for (device, set) into the contract at `path`, which must be a valid contract
// before and after (exit 2 otherwise, the file untouched). The read, the edit and the write happen
// under a lock of the contract's folder.
void write_contract_floors(const std::string& path, const std::string& device, const std::string& set,
                           const SetFloors& floors) {
  for (const auto* table : {&floors.exact, floors.numerical ? &*floors.numerical : nullptr,
                            floors.fp32_bound ? &*floors.fp32_bound : nullptr}) {
    if (!table) continue;
    for (const auto& [metric, value] : *table)
      if (!std::isfinite(value))
        throw SetupError("--write-contract: the calibration measured no finite floor for " + metric +
                         " (a restatement gave a non-finite score); " + path + " left as it was");
  }
  const FolderLock lock(path);
  std::string text;
  Contract contract;
  try {
    text = read_text_file(path, "contract ");
    contract = parse_contract(text, path);
  } catch (const Error& error) {
    throw SetupError(std::string("--write-contract: ") + path + " is not a valid contract: " + error.what());
  }
  std::string updated;
  try {
    updated = contract_with_floors(text, device, set, floors);
    parse_contract(updated, path);
  } catch (const Error& error) {
    throw SetupError(std::string("--write-contract: the floors would not make ") + path +
                     " a valid contract: " + error.what());
  }
  write_file_atomic(path, updated);
  const SetFloors* before = contract.floors_for(device, set);
  std::cout << (before ? "changed" : "added") << " floors." << device << "." << set << " in " << path << ":\n";
  print_floor_changes(before, floors);
}

struct CalibrateOptions {
  std::string out, write_contract, calibration_file;
};

int command_calibrate(const SetOptions& o, const CalibrateOptions& c) {
  const GateSet set = resolve_set(o);
  const Inputs inputs = load_renderable_inputs(set);
  const RenderSettings settings = render_settings(set, false);
  std::string why;
  if (set.needs_gpu() && !gpu_available(why)) throw SetupError("gate set " + set.name + " needs a GPU (" + why + ")");
  check_weights_files(inputs.corpus, set, settings);
  if (!c.write_contract.empty()) {  // refuse a bad contract before hours of rendering
    try {
      parse_contract(read_text_file(c.write_contract, "contract "), c.write_contract);
    } catch (const Error& error) {
      throw SetupError("--write-contract: " + c.write_contract + " is not a valid contract: " + error.what());
    }
  }
  const std::string device = device_key(set.backend);
  const Calibration calibration = calibrate(inputs.corpus, set.name, device, settings, &std::cout);
  const nlohmann::json result = calibration.to_json();
  std::cout << "\nworst score per metric over each restatement (vs a reference render):\n";
  for (const auto& r : result["restatements"]) {
    std::cout << "  " << r["name"].get<std::string>() << " (" << r["kind"].get<std::string>()
              << "): " << r["worst"].dump() << "\n";
  }
  std::cout << "worst spread (exact + rounding): " << result["worst_spread"].dump() << "\n";
  if (result.contains("precision_error"))
    std::cout << "precision error (vs fp32):       " << result["precision_error"].dump() << "\n";
  for (const char* kind : {"exact", "numerical", "fp32_bound"})
    if (result["proposed"].contains(kind))
      std::cout << "proposed " << kind << " floors: " << result["proposed"][kind].dump() << "\n";
  std::cout << "margin: " << calibration.proposed.margin << "\n";
  if (const SetFloors* current = inputs.contract.floors_for(device, set.name))
    std::cout << "contract floors (" << device << ", " << set.name << "): " << current->to_json().dump() << "\n";
  if (!c.out.empty()) write_json_atomic(c.out, result, ParentFolders::create);
  if (!c.write_contract.empty()) {
    const std::string file =
        c.calibration_file.empty() ? default_calibration_file(device, set.name) : c.calibration_file;
    write_contract_floors(c.write_contract, device, set.name, calibration.set_floors(file));
  }
  return kExitPassed;
}

}  // namespace

int main(int argc, char** argv) {
  if (!dit::take_ctest_gpu("dit-quality-render")) return 2;  // CTest's GPU, before any CUDA call
  CLI::App app{"dit-quality-render: renders a gate set's corpus through the engine, and calibrates"};
  app.require_subcommand(1);
  SetOptions o;
  Locations l;
  std::string out, determinism_pass;
  CalibrateOptions calibrate_options;
  // The arguments as given, for the determinism pass to run with.
  const std::vector<std::string> arguments(argv, argv + argc);

  CLI::App* render_command = app.add_subcommand("render", "render the candidate's outputs (never reads the golden)");
  add_set_options(render_command, o);
  render_command->add_option("--run-dir", l.run_dir, "render into DIR/<set>/render (default: $DIT_OUTPUT_DIR/quality)");
  render_command->add_option("--default-run-dir", l.default_run_dir, "used when DIT_OUTPUT_DIR is unset");
  render_command->add_option("--out", out, "render into this directory instead of <run dir>/<set>/render");
  render_command->add_option(kDeterminismPassOption, determinism_pass)->group("");  // the second process only

  CLI::App* calibrate_command = app.add_subcommand("calibrate", "measure exact restatements and derive margins");
  add_set_options(calibrate_command, o);
  calibrate_command->add_option("--out", calibrate_options.out, "write the calibration JSON here");
  calibrate_command->add_option("--write-contract", calibrate_options.write_contract,
                                "write the proposed floors for this device and set into this contract file");
  calibrate_command->add_option("--calibration-file", calibrate_options.calibration_file,
                                "the path the --out file is committed under, recorded with the floors "
                                "(default quality/calibration/<device>-<set>.json)");

  return run_command_line(app, argc, argv, "dit-quality-render", [&] {
    if (render_command->parsed() && !determinism_pass.empty()) return command_determinism_pass(o, determinism_pass);
    if (render_command->parsed()) return command_render(o, l, out, arguments);
    if (calibrate_command->parsed()) return command_calibrate(o, calibrate_options);
    return kExitSetup;
  });
}
