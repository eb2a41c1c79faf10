// dit-perf-gate: the performance gate the judge's `perf_gate` CTest test runs (labels perf;judge,
// no arguments). It reads $DIT_JUDGE_DIR/perf-request.json (driver/performance_gate.h,
// PerfRequest), runs the candidate's and the best's objective benchmark alternately under the
// timed-outputs protocol (a fresh request seed per round, shared by both sides) until its
// sequential rule settles the comparison (at most the lane's max_rounds; the A/A noise run its
// `repetitions`), and writes its report to the request's `report`. A fixed path: experiments
// cannot change it.
//
// Every benchmark process runs as the side's command_prefix + argv, in its binary's folder,
// with the inherited environment less every DIT_* variable plus the side's environment.
// Exit codes: 0 passed, 1 failed (report written), 2 could not measure (no report: a malformed
// request, a missing binary, a benchmark that failed), 77 skipped (no DIT_JUDGE_DIR).
//
// Outside dit-ar (no DIT_JUDGE_DIR), with DIT_PERF_LANE naming a lane (the lane's perf test
// preset sets it, so `cmake --workflow --preset <lane>` gets it), there is no best to compare
// with: the gate measures the tree's objective once, one benchmark process under the same
// timed-outputs protocol (a fresh request seed, the timed outputs written), prints the figure
// and writes <build>/perf-gate/<lane>/measurement.json; exit 0 when the objective was measured,
// 2 when it could not be. DIT_PERF_CONFIG (the session config) and DIT_PERF_BUILD_DIR (this
// build) come from the test's own properties.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>

#include <CLI/CLI.hpp>

#include "core/error.h"
#include "core/files.h"
#include "driver/benchmark_json.h"
#include "driver/config.h"
#include "driver/performance_gate.h"
#include "driver/process.h"
#include "driver/statistics.h"

namespace {

namespace fs = std::filesystem;
using namespace dit;
using namespace dit::ar;

constexpr int kExitPassed = 0;
constexpr int kExitFailed = 1;
constexpr int kExitCannotMeasure = 2;
constexpr int kExitSkipped = 77;

// A 64-bit request seed nobody knows before the round starts.
std::uint64_t fresh_seed() {
  static std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) ^ static_cast<std::uint64_t>(device());
}

int run_gate(const fs::path& judge_dir) {
  const fs::path request_path = judge_dir / kPerfRequestFile;
  PerfRequest request = parse_perf_request(read_json_file(request_path), request_path.string());
  const fs::path log = request.report.parent_path() / "perf-gate.log";
  GateReport report = run_performance_gate(request, log, fresh_seed);
  report.details["request"] = request_path.string();
  report.details["log"] = log.string();
  write_json_atomic(request.report, report.to_json(), ParentFolders::create);

  std::cout << "performance gate (" << (request.noise ? "A/A noise" : request.classification)
            << "): " << (report.passed ? "passed" : "failed") << "\n";
  if (const auto& sequential = report.details["sequential"]; sequential.is_object()) {
    std::cout << "  rounds: " << sequential.value("rounds_used", 0) << " ("
              << sequential.value("stopping_reason", std::string()) << ")\n";
  }
  for (const auto& reason : report.reasons) std::cout << "  - " << reason << "\n";
  std::cout << "report: " << request.report.string() << "\n";
  return report.passed ? kExitPassed : kExitFailed;
}

// The tree's objective measured once, without a best to compare with (a lane's workflow).
int measure_only(const std::string& lane_name) {
  const char* config_path = std::getenv("DIT_PERF_CONFIG");
  const char* build = std::getenv("DIT_PERF_BUILD_DIR");
  if (!config_path || !*config_path || !build || !*build)
    throw Error(ErrorKind::invalid_argument,
                "DIT_PERF_LANE needs DIT_PERF_CONFIG and DIT_PERF_BUILD_DIR (the "
                "perf_gate test sets both)");
  const fs::path config_file = fs::absolute(config_path);
  const Config config = load_config(config_file, config_file.parent_path().parent_path());
  const Lane& lane = config.lane(lane_name);
  const fs::path binary = fs::path(build) / lane.objective.benchmark;
  if (!fs::exists(binary))
    throw Error(ErrorKind::invalid_argument, "lane " + lane.name + "'s objective benchmark " + binary.string() +
                                                 " is not built (its build preset is " + lane.build_preset + ")");
  const fs::path out = fs::path(build) / "perf-gate" / lane.name;
  fs::remove_all(out);
  fs::create_directories(out / "outputs");
  ProcessOptions process;
  process.argv = {binary.string()};
  for (const auto& argument : lane.objective.arguments) process.argv.push_back(argument);
  const std::uint64_t seed = fresh_seed();
  for (const std::string argument :
       {"--benchmark_out=" + (out / "benchmark.json").string(), std::string("--benchmark_out_format=json"),
        "--request-seed=" + std::to_string(seed), "--outputs-dir=" + (out / "outputs").string()})
    process.argv.push_back(argument);
  process.working_dir = binary.parent_path();
  process.log_path = out / "benchmark.log";
  std::cout << "dit-perf-gate: no DIT_JUDGE_DIR, so no best to compare with: lane " << lane.name
            << "'s objective measured once (" << lane.objective.name << ")\n";
  const ProcessResult result = run_process(process);
  if (!result.succeeded())
    throw Error(ErrorKind::invalid_argument,
                binary.string() + " failed (" + result.describe() + "); see " + process.log_path.string());
  const auto entries = parse_benchmark_json(read_json_file(out / "benchmark.json"), (out / "benchmark.json").string());
  std::vector<double> values;
  for (const auto& entry : entries) {
    if (entry.run_type == "iteration" && entry_matches(entry, lane.objective.name))
      values.push_back(entry_value(entry, lane.objective.metric, lane.objective.unit));
  }
  if (values.empty())
    throw Error(ErrorKind::invalid_argument,
                "the benchmark reported no run of " + lane.objective.name + " (see " + process.log_path.string() + ")");
  std::size_t outputs = 0;
  for (const auto& entry : fs::directory_iterator(out / "outputs")) outputs += entry.is_regular_file() ? 1 : 0;
  const double center = median(values);
  const nlohmann::json measurement = {{"lane", lane.name},
                                      {"objective", lane.objective.name},
                                      {"metric", lane.objective.metric},
                                      {"unit", lane.objective.unit},
                                      {"median", center},
                                      {"values", values},
                                      {"timed_output_files", outputs},
                                      {"request_seed", seed},
                                      {"benchmark", (out / "benchmark.json").string()},
                                      {"seconds", result.seconds},
                                      {"decision", nullptr}};
  write_json_atomic(out / "measurement.json", measurement, ParentFolders::create);
  std::cout << "  " << lane.objective.name << " " << lane.objective.metric << ": median " << center << " "
            << lane.objective.unit << " over " << values.size() << " run(s), " << outputs
            << " timed output file(s)\n  measurement: " << (out / "measurement.json").string() << "\n";
  return kExitPassed;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "dit-perf-gate: compares the candidate's objective benchmark with the best's, interleaved, under the "
      "timed-outputs protocol: the same fresh request seed for both sides each round, their timed outputs compared "
      "image by image, the untimed part of each process bounded. From the sequential rule's first look on (round 4 "
      "of at most 20 by default), rank intervals of the improvement after each round show the lane's minimum "
      "reached (from round 5), show it out of reach, or ask for one more round (at most the lane's max_rounds); then "
      "the "
      "guardrails. Takes no arguments: it reads $DIT_JUDGE_DIR/perf-request.json, which only dit-ar writes, and "
      "skips (77) without DIT_JUDGE_DIR."};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);
    return code == 0 ? 0 : kExitCannotMeasure;  // --help, or arguments it does not take
  }

  const char* judge_dir = std::getenv("DIT_JUDGE_DIR");
  if (!judge_dir || !*judge_dir) {
    const char* lane = std::getenv("DIT_PERF_LANE");
    if (lane && *lane) {
      try {
        return measure_only(lane);
      } catch (const std::exception& error) {
        std::cerr << "dit-perf-gate: cannot measure: " << error.what() << "\n";
        return kExitCannotMeasure;
      }
    }
    std::cout << "dit-perf-gate: skipped: no DIT_JUDGE_DIR and no DIT_PERF_LANE. This gate compares a candidate "
                 "with the best commit's build as perf-request.json describes it, which only `dit-ar experiment` "
                 "(or `dit-ar baseline`) writes; a lane's perf test preset sets DIT_PERF_LANE to measure the tree "
                 "alone.\n";
    return kExitSkipped;
  }
  become_subreaper();
  try {
    return run_gate(judge_dir);
  } catch (const std::exception& error) {
    std::cerr << "dit-perf-gate: cannot measure: " << error.what() << "\n";
    return kExitCannotMeasure;
  }
}
