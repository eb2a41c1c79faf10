// dit-perf-gate: the performance gate a `perf` CTest test runs. It measures the candidate's
// objective benchmark and the best commit's build of it, interleaved in one run, and decides
// with driver/performance_gate.h. A fixed path: experiments cannot change it.
//
// Inputs (ARCHITECTURE.md, Between the driver and the tests): DIT_RUN_DIR (lane.json is read
// from it, the report written to gates/performance.json, raw JSON to bench/), DIT_BEST_BUILD_DIR,
// DIT_BASELINE_DIR (performance.json: the baseline's summary, for the total guardrails),
// DIT_CLASSIFICATION (recorded in the report). lane.json's "mode" is "noise" during
// `dit-ar baseline`: the build is then measured against itself (A/A) and the noise reported.
// Without a run directory or a best build it skips with exit code 77: only dit-ar can provide
// them.
// Exit codes: 0 passed, 1 failed (report written), 2 could not measure (no report), 77 skipped.
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>

#include "core/files.h"
#include "driver/performance_gate.h"
#include "driver/process.h"
#include "core/error.h"

namespace {

namespace fs = std::filesystem;
using namespace dit;
using namespace dit::ar;

constexpr int kExitPassed = 0;
constexpr int kExitFailed = 1;
constexpr int kExitCannotMeasure = 2;
constexpr int kExitSkipped = 77;

std::string environment_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

// Runs one side once, returning the benchmark entries it wrote.
std::vector<BenchmarkEntry> measure_once(const fs::path& binary, const Lane& lane, const fs::path& output,
                                         const fs::path& log) {
  ProcessOptions options;
  options.argv.push_back(binary.string());
  for (const auto& argument : lane.objective.arguments) options.argv.push_back(argument);
  options.argv.push_back("--benchmark_out=" + output.string());
  options.argv.push_back("--benchmark_out_format=json");
  options.working_dir = binary.parent_path();
  options.log_path = log;
  ProcessResult result = run_process(options);
  if (!result.succeeded()) {
    throw dit::Error(dit::ErrorKind::io, binary.string() + " " + result.describe() + " (log: " + log.string() + ")");
  }
  return parse_benchmark_json(read_json_file(output), output.string());
}

int run_gate(const fs::path& build_dir, const fs::path& run_dir, const fs::path& best_build_dir,
             const fs::path& baseline_dir, const std::string& classification) {
  nlohmann::json lane_document = read_json_file(run_dir / "lane.json");
  Lane lane = lane_from_json(lane_document, (run_dir / "lane.json").string());
  double min_improvement = lane_document.value("min_improvement_percent", 0.0);
  bool noise_measurement = lane_document.value("mode", "compare") == "noise";
  fs::path candidate_binary = build_dir / lane.objective.benchmark;
  fs::path best_binary = best_build_dir / lane.objective.benchmark;
  for (const auto& binary : {candidate_binary, best_binary}) {
    if (!fs::exists(binary)) throw dit::Error(dit::ErrorKind::io, "benchmark binary not found: " + binary.string());
  }
  fs::path bench_dir = run_dir / "bench";
  fs::create_directories(bench_dir);
  fs::create_directories(run_dir / "gates");
  fs::path log = bench_dir / "perf-gate.log";

  // Alternate which side goes first each round (ABBA), so a drift in clocks or temperature
  // falls on both sides alike.
  Measurement candidate;
  Measurement best;
  for (int round = 0; round < lane.repetitions; ++round) {
    std::string index = std::to_string(round);
    auto run_candidate = [&] {
      add_run(candidate, measure_once(candidate_binary, lane, bench_dir / ("candidate-" + index + ".json"), log), lane);
    };
    auto run_best = [&] {
      add_run(best, measure_once(best_binary, lane, bench_dir / ("best-" + index + ".json"), log), lane);
    };
    if (round % 2 == 0) {
      run_candidate();
      run_best();
    } else {
      run_best();
      run_candidate();
    }
  }

  GateReport report;
  if (noise_measurement) {
    report = evaluate_noise(lane, candidate, best);
  } else {
    std::optional<Summary> baseline;
    if (fs::exists(baseline_dir / "performance.json")) {
      baseline = Summary::from_json(read_json_file(baseline_dir / "performance.json"));
    }
    fs::path hash_file = run_dir / lane.objective.expected_hash_file;
    std::optional<std::string> expected_hash = expected_output_hash(lane, hash_file, candidate);
    report = evaluate_performance(lane, min_improvement, candidate, best, baseline, expected_hash);
    if (!expected_hash && !candidate.hashes.empty()) {
      report.details["output_hash_not_compared"] = "no expected hash at " + hash_file.string();
    }
  }
  report.details["classification"] = classification;
  report.details["candidate_build_dir"] = build_dir.string();
  report.details["best_build_dir"] = best_build_dir.string();
  write_json_atomic(run_dir / "gates" / "performance.json", report.to_json());

  std::cout << "performance gate (" << (noise_measurement ? "A/A noise" : classification)
            << "): " << (report.passed ? "passed" : "failed") << "\n";
  for (const auto& reason : report.reasons) std::cout << "  - " << reason << "\n";
  std::cout << report.details.dump(2) << "\n";
  return report.passed ? kExitPassed : kExitFailed;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "dit-perf-gate: compares the candidate build's objective benchmark with the best commit's build, "
      "interleaved, with a Mann-Whitney U test, the lane's minimum improvement and its guardrails. "
      "Run by a `perf` CTest test under dit-ar, which sets the environment below."};
  std::string build_dir;
  std::string run_dir = environment_or("DIT_RUN_DIR", "");
  std::string best_build_dir = environment_or("DIT_BEST_BUILD_DIR", "");
  std::string baseline_dir = environment_or("DIT_BASELINE_DIR", "");
  std::string classification = environment_or("DIT_CLASSIFICATION", "exact");
  app.add_option("--build-dir", build_dir, "The candidate's build directory (the objective binary is relative to it)")
      ->required();
  app.add_option("--run-dir", run_dir, "Run directory holding lane.json (default: $DIT_RUN_DIR)");
  app.add_option("--best-build-dir", best_build_dir,
                 "The best commit's build directory (default: $DIT_BEST_BUILD_DIR)");
  app.add_option("--baseline-dir", baseline_dir,
                 "Baseline directory with performance.json (default: $DIT_BASELINE_DIR)");
  app.add_option(
      "--classification", classification,
      "exact, numerical, approximate or quantization, recorded in the report (default: $DIT_CLASSIFICATION)");
  CLI11_PARSE(app, argc, argv);

  if (run_dir.empty() || best_build_dir.empty()) {
    std::cout << "dit-perf-gate: skipped: no " << (run_dir.empty() ? "DIT_RUN_DIR" : "DIT_BEST_BUILD_DIR")
              << ". This gate compares a candidate with the best commit's build, which only `dit-ar experiment` "
                 "(or `dit-ar baseline`) provides.\n";
    return kExitSkipped;
  }
  become_subreaper();
  try {
    return run_gate(build_dir, run_dir, best_build_dir, baseline_dir, classification);
  } catch (const std::exception& error) {
    std::cerr << "dit-perf-gate: cannot measure: " << error.what() << "\n";
    return kExitCannotMeasure;
  }
}
