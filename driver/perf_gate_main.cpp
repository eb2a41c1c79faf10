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
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <random>

#include <CLI/CLI.hpp>

#include "core/files.h"
#include "driver/performance_gate.h"
#include "driver/process.h"

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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "dit-perf-gate: compares the candidate's objective benchmark with the best's, interleaved, under the "
      "timed-outputs protocol: the same fresh request seed for both sides each round, their timed outputs compared "
      "image by image, the untimed part of each process bounded. From the sequential rule's first look on (round 7 "
      "of at most 20 by default), a rank interval of the improvement after each round shows the lane's minimum "
      "reached, shows it out of reach, or asks for one more round (at most the lane's max_rounds); then the "
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
    std::cout << "dit-perf-gate: skipped: no DIT_JUDGE_DIR. This gate compares a candidate with the best commit's "
                 "build as perf-request.json describes it, which only `dit-ar experiment` (or `dit-ar baseline`) "
                 "writes.\n";
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
