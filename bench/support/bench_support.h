// Fixed during a session (the performance harness).
// The shared main of every benchmark binary and the helpers that need no GPU: suite options
// beyond Google Benchmark's flags, where the JSON goes, the build and commit context, and
// rate counters computed from the timed seconds.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dit::bench {

// A suite's own command-line option, `--name=value` or `--name value`, declared at namespace
// scope (`const Option weights("weights", "...");`). The shared main removes it from argv
// before Google Benchmark sees the rest.
class Option {
 public:
  Option(std::string name, std::string help, std::string default_value = "");
  const std::string& name() const { return name_; }
  const std::string& value() const;  // the default when not given
  bool given() const;

 private:
  std::string name_;
};

// Every declared option, name -> help, for --help output.
std::map<std::string, std::string> option_help();

struct ParsedArguments {
  std::vector<std::string> remaining;         // argv[0] first, then what Benchmark parses
  std::map<std::string, std::string> values;  // declared options that were given
};
// Splits argv into declared options and the rest. Throws std::invalid_argument for a
// declared option without a value.
ParsedArguments split_arguments(const std::vector<std::string>& arguments,
                                const std::vector<std::string>& option_names);

// Where a run writes its JSON when the command line names no --benchmark_out: under the
// driver's run directory (`$DIT_RUN_DIR/bench/<name>.json`), else the perf test's default
// directory (`$DIT_BENCH_DEFAULT_DIR/<name>.json`). Only perf runs set DIT_BENCH_NAME; a smoke
// run or a run by hand writes no file unless asked, so it never overwrites a perf result.
std::optional<std::string> default_json_path(const char* run_dir, const char* bench_name, const char* default_dir);

// Context that needs no GPU: commit (DIT_COMMIT, else `git describe` of the source tree),
// build type, CUDA architectures, compiler, build directory, host name.
using Context = std::vector<std::pair<std::string, std::string>>;
Context build_context();
std::string commit_description();

// Work that runs after option parsing and before the benchmarks (for example a suite's
// command-line mode that writes an output file). Returning an exit code ends the program.
using BeforeBenchmarks = std::function<std::optional<int>()>;
void set_before_benchmarks(BeforeBenchmarks hook);

// Opens the GPU for a GPU suite and appends its context; returns why no GPU is usable, or
// nothing on success.
using DeviceProbe = std::function<std::optional<std::string>(Context& context)>;

// The main of every benchmark binary. With a probe (GPU suites): exit 77 when it finds no
// usable GPU, or 1 when DIT_REQUIRE_GPU=1; listing benchmarks works without one.
int run_main(int argc, char** argv, const DeviceProbe& probe);

// Counters per iteration (`bytes`, `flops`) and as rates over the measured seconds
// (`bytes_per_second`, `flops_per_second`), so that rates follow the GPU time of manually
// timed runs rather than the CPU time Google Benchmark's own rates use. A count of 0 means
// "not known" and publishes no counter.
class RateCounters {
 public:
  RateCounters(double bytes_per_iteration, double flops_per_iteration)
      : bytes_(bytes_per_iteration), flops_(flops_per_iteration) {}
  void add(double seconds) {
    seconds_ += seconds;
    ++iterations_;
  }
  void publish(benchmark::State& state) const;

 private:
  double bytes_, flops_;
  double seconds_ = 0;
  int64_t iterations_ = 0;
};

// The sample at fraction q (0..1) of the values, linearly interpolated between order
// statistics (numpy's default); used for the p50/p95 aggregates of repeated runs.
double quantile(std::vector<double> values, double q);
// Registers p50 and p95 aggregates on a benchmark run with repetitions.
benchmark::internal::Benchmark* with_percentiles(benchmark::internal::Benchmark* b);

// Sets a counter in bytes (reported with 1024-based units).
void set_bytes_counter(benchmark::State& state, const std::string& name, double bytes);

}  // namespace dit::bench
