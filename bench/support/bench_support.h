// Fixed during a session (the performance harness).
// The shared main of every benchmark binary and the helpers that need no GPU: suite options
// beyond Google Benchmark's flags, the performance gate's timed-outputs protocol (the request
// seed, the outputs folder, the count of timed images), where the JSON goes, the build and
// commit context, and rate counters computed from the timed seconds.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <filesystem>
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
// candidate's outputs directory (`$DIT_OUTPUT_DIR/bench/<name>.json`, set by the driver for its
// test processes), else the perf test's default directory (`$DIT_BENCH_DEFAULT_DIR/<name>.json`).
// Only perf runs set DIT_BENCH_NAME; a smoke run or a run by hand writes no file unless asked,
// so it never overwrites a perf result.
std::optional<std::string> default_json_path(const char* output_dir, const char* bench_name, const char* default_dir);

// --- The timed-outputs protocol (driver/README.md: the performance gate) ------------------------
//
// `--request-seed=N` (a decimal 64-bit number; 0 when not given) and `--outputs-dir=D` are the
// harness's own options: run_main takes them out of argv before Google Benchmark sees it. An
// objective benchmark (BM_E2E_Image, BM_CpuForward) derives timed image i's request from N and i
// (image_request), ends each timed region at its own device synchronisation and the copy of the
// outputs to the host, and after the timed region writes image i's files into D when D is given
// (image_output_path). i counts every timed iteration of those benchmarks in the process, from
// 0: every repetition, and Google Benchmark's calibration runs too (it runs a benchmark with 1,
// 10, ... iterations until the timed work is long enough, and reports only the last run). The
// counters `timed_images` and `timed_seconds` of every entry they report say how many images
// the process has timed so far and their timed seconds, calibration runs included, so that the
// performance gate can count the images and the timed time of a whole process.
struct TimedRequest {
  uint64_t seed = 0;
  std::optional<std::filesystem::path> outputs_dir;  // nothing is written without it
};
// From the harness options' values (ParsedArguments::values). Throws std::invalid_argument for a
// seed that is not a decimal 64-bit number, or an empty outputs folder.
TimedRequest parse_timed_request(const std::map<std::string, std::string>& values);
// This process's request, as run_main read it from the command line.
const TimedRequest& timed_request();

// Image i's request: a seed (distinct for distinct i under one N, and unpredictable without N)
// and a class label in [0, classes).
struct ImageRequest {
  uint64_t seed = 0;
  int class_label = 0;
};
ImageRequest image_request(uint64_t request_seed, uint64_t index, int classes);
// Indices from here on are for benchmarks that write no outputs (batches, the latents alone):
// their requests still come from N, and never repeat a timed image's.
inline constexpr uint64_t kUnjudgedImageIndexBase = uint64_t{1} << 63;

// "image-<i>", and `dir`/image-<i>.<kind> ("latent.safetensors", "png", "output.safetensors").
std::string image_output_name(uint64_t index);
std::filesystem::path image_output_path(const std::filesystem::path& dir, uint64_t index, const std::string& kind);

// The process's timed images: the index of the next, and the timed seconds of all so far.
class TimedImages {
 public:
  uint64_t begin_image() { return count_++; }  // the index of the image about to be timed
  void add_timed_seconds(double seconds) { seconds_ += seconds; }
  uint64_t count() const { return count_; }
  double seconds() const { return seconds_; }
  // Sets the counters timed_images and timed_seconds (process totals so far) on the entry.
  void publish(benchmark::State& state) const;

 private:
  uint64_t count_ = 0;
  double seconds_ = 0.0;
};
TimedImages& timed_images();

// --- The checkpoint of a suite with a `weights` option -----------------------------------------
//
// A suite that declares Option("weights", ...) (a checkpoint; seeded random weights without it)
// also takes `--weights-sha256=HEX`, the file's SHA-256 in 64 hexadecimal digits. Before the GPU
// check and any benchmark, run_main hashes the file (streamed, once) and ends the process with
// exit 2, naming the file, the expected and the actual hash, when it differs, cannot be read, or
// --weights-sha256 comes without --weights; the JSON context then records `weights` (the path, or
// "seeded random") and, for a file, `weights_sha256`. Listing the benchmarks hashes nothing.
inline constexpr const char* kWeightsOptionName = "weights";
inline constexpr const char* kWeightsSha256OptionName = "weights-sha256";
// The sha256 of the file at `path`, checked against `expected` (64 hexadecimal digits, either
// case) when that is not empty. Throws std::invalid_argument naming the file and the problem.
std::string checked_weights_sha256(const std::string& path, const std::string& expected);

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
