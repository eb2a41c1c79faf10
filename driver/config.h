// dit::ar::Config: the session contract read from config/autoresearch.json (lanes, paths,
// objective, timeouts, quantization policy), validated with errors that name the field.
// Every dit-ar subcommand loads it through load_config(); config/README.md documents the file.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dit::ar {

// Which way the objective improves.
enum class Direction { lower, higher };

// The benchmark whose statistic a lane optimises. `benchmark` is the binary's path relative to
// the build directory; `name` selects the Google Benchmark entry (its run_name or name).
struct Objective {
  std::string benchmark;               // e.g. "bench/bench_e2e"
  std::vector<std::string> arguments;  // extra arguments for every run of the binary
  std::string name;                    // e.g. "BM_E2E/256"
  std::string metric = "real_time";    // a JSON field of the entry: real_time, cpu_time or a counter
  std::string unit = "ms";             // the unit times are converted to (ns, us, ms, s)
  Direction direction = Direction::lower;
  // The performance gate compares the timed outputs of both sides image by image: byte for byte
  // under the `exact` classification, otherwise each safetensors tensor's relative L2 distance
  // to the best's must be at most this.
  double output_tolerance = 1e-2;
  // Under `exact`: 0 (the default) asks for byte-identical files; above 0, each tensor's relative
  // L2 to the best's must be at most this, for lanes where an exact restatement (another GEMM
  // algorithm, split-K, another attention form) moves bytes by rounding: set it to the lane's
  // calibrated latent floor (quality/contract.json).
  double exact_output_tolerance = 0.0;
  // The most the untimed part of a benchmark process (wall time less the timed total) may grow
  // against the best's, in seconds, on top of 10% of the best's (median over the rounds).
  double max_untimed_growth_seconds = 0.5;
};

// Regression limits, in percent, for the secondary measures. "step" is against the current
// best, "total" against the baseline. An empty counter name means "derive from the samples"
// (p95) or "not measured" (peak memory).
struct Guardrails {
  double p95_step_percent = 5.0;
  double p95_total_percent = 10.0;
  double peak_memory_step_percent = 5.0;
  double peak_memory_total_percent = 10.0;
  std::string p95_counter;          // a benchmark counter that already is a p95, if any
  std::string peak_memory_counter;  // a benchmark counter in bytes, e.g. "peak_device_bytes"
};

// One objective lane: how to build and test it, and what counts as better.
struct Lane {
  std::string name;
  std::string description;
  std::string configure_preset;
  std::string build_preset;
  std::vector<std::string> test_presets;  // run in order; their results are merged
  std::string build_dir;                  // relative to the source tree, e.g. "build/a5500"
  // When not empty, the build targets the quality gates' inputs need (the renderer): a candidate
  // builds these first, runs its renders and the quality gates, and builds the rest of the build
  // preset only when they held, so that a quality discard does not wait for the other targets.
  std::vector<std::string> gate_input_targets;
  bool gpu = true;  // whether its stages need a GPU (false: a CPU lane)
  Objective objective;
  double min_improvement_percent = 1.0;
  // The largest minimum improvement the baseline's A/A noise may raise it to: above it the
  // machine is too noisy to judge this lane, and the baseline is not recorded.
  double max_min_improvement_percent = 10.0;
  int repetitions = 9;  // interleaved runs per side of the baseline's A/A noise run (at least 9)
  // The most interleaved rounds the performance gate runs to compare a candidate with the best;
  // its sequential rule stops earlier once the comparison is settled (driver/performance_gate.h).
  int max_rounds = 20;
  Guardrails guardrails;
  // When not empty, what `dit-ar baseline` runs to record the golden outputs for this lane
  // instead of the config's record_baseline_commands (a lane gated by one gate set records
  // that set only).
  std::vector<std::vector<std::string>> record_baseline_commands;
  // Classifications this lane cannot judge, each with the reason `dit-ar experiment` gives when
  // it refuses one (exit 2, before anything runs): e.g. approximate on seeded random weights.
  std::map<std::string, std::string> refused_classifications;
};

// Wall-clock limits per stage, in seconds. A stage that runs past its limit has its whole
// process group killed and the experiment is a CRASH.
struct Timeouts {
  int configure = 600;
  int build = 3600;
  int test = 7200;
  int record_baseline = 3600;
};

// The judge: the targets `dit-ar baseline` builds once per session from the locked tree (in the
// state directory's judge/ folder, never the candidate's build), and their files (relative to
// the build directory), whose sha256 is recorded then and verified before every use.
struct JudgeBuild {
  std::vector<std::string> targets;
  std::vector<std::string> files;
};

struct QuantizationPolicy {
  bool allowed = true;  // whether `--classification quantization` is accepted in this session
};

struct Config {
  std::filesystem::path path;        // the file it was read from
  std::filesystem::path source_dir;  // the repository's working tree (the config's anchor)
  std::string project;
  std::filesystem::path state_dir;  // absolute; the file holds it relative to source_dir
  std::string branch_prefix = "autoresearch/";
  std::string default_lane;
  std::vector<std::string> mutable_paths;  // repository-relative; a trailing "/" marks a folder
  std::vector<std::string> fixed_paths;
  std::string contract;       // repository-relative path of the quality contract
  std::string knowledge_dir;  // repository-relative; the handbook `index` reads
  Timeouts timeouts;
  QuantizationPolicy quantization;
  JudgeBuild judge;
  // Commands run once by `baseline` after its build, before its tests, to record the golden
  // outputs and baseline scores. Placeholders: {source_dir} {build_dir} (the baseline commit's
  // tree and build) {judge_build_dir} {run_dir} {baseline_dir} {state_dir} {lane}.
  std::vector<std::vector<std::string>> record_baseline_commands;
  std::map<std::string, Lane> lanes;

  const Lane& lane(const std::string& name) const;  // throws dit::Error naming the known lanes
};

// Reads and validates the file. Relative paths inside are anchored at `source_dir`.
// Throws dit::Error(invalid_file) naming the file, the field and what is wrong, or
// dit::Error(io) when the file cannot be read.
Config load_config(const std::filesystem::path& path, const std::filesystem::path& source_dir);

// Same, from already parsed JSON (used by tests and by load_config).
Config parse_config(const nlohmann::json& document, const std::filesystem::path& path,
                    const std::filesystem::path& source_dir);

// The longest one experiment of `lane` may take, in seconds: every stage it may run, each to its
// limit (config.timeouts). The judge's and the best's configure and build (rebuilt when missing
// or changed), the candidate's configure, its gate inputs' build and the rest of its build (two
// stages, each with the build limit: the tests' time stops while the rest builds), each test
// preset's listing before the build and again after it, and the tests. A Slurm worker's job asks
// for this (`dit-ar work --slurm`, --time).
long experiment_limit_seconds(const Config& config, const Lane& lane);

// The lane as the JSON the performance gate reads from the run directory (lane.json), with
// the effective minimum improvement (possibly raised by the A/A noise measurement). The driver
// adds "mode": "compare" (candidate against the best) or "noise" (the baseline's A/A run).
nlohmann::json lane_to_json(const Lane& lane, double effective_min_improvement_percent);
Lane lane_from_json(const nlohmann::json& document, const std::string& where);

// True when `path` (repository-relative, "/" separated) lies inside `prefix` (a file, or a
// folder with or without its trailing "/").
bool path_within(const std::string& path, const std::string& prefix);

std::string to_string(Direction direction);

}  // namespace dit::ar
