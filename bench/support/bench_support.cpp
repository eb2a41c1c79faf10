#include "bench/support/bench_support.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include <unistd.h>

#include "core/error.h"
#include "core/sha256.h"

namespace dit::bench {
namespace {

struct OptionRecord {
  std::string help;
  std::string default_value;
  std::optional<std::string> given;
};

std::map<std::string, OptionRecord>& option_registry() {
  static std::map<std::string, OptionRecord> registry;
  return registry;
}

BeforeBenchmarks& before_benchmarks_hook() {
  static BeforeBenchmarks hook;
  return hook;
}

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

bool has_flag(const std::vector<std::string>& arguments, const std::string& flag) {
  return std::any_of(arguments.begin(), arguments.end(),
                     [&](const std::string& a) { return a == flag || a.rfind(flag + "=", 0) == 0; });
}

// Output of a short shell command, trimmed; empty when it fails.
std::string command_output(const std::string& command) {
  std::FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return {};
  std::string out;
  std::array<char, 256> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe)) out += buffer.data();
  if (pclose(pipe) != 0) return {};
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r' || out.back() == ' ')) out.pop_back();
  return out;
}

// splitmix64's finalizer: a bijection of the 64-bit integers that mixes every bit.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

TimedRequest& process_request() {
  static TimedRequest request;
  return request;
}

// The harness's own options: declared like a suite's, so that split_arguments takes them out
// of argv and --help lists them.
const Option request_seed_option("request-seed",
                                 "the performance gate's request seed: timed image i's seed and class label come "
                                 "from it and i (a decimal 64-bit number)",
                                 "0");
const Option outputs_dir_option("outputs-dir",
                                "folder the objective benchmark writes each timed image's outputs to "
                                "(image-<i>.*), after its timed region");

// A suite's checkpoint brings the option of its expected hash (bench_support.h).
void declare_weights_sha256_option() {
  if (!option_registry().count(kWeightsOptionName)) return;
  option_registry().try_emplace(kWeightsSha256OptionName,
                                OptionRecord{"the SHA-256 --weights must have (64 hexadecimal digits); another file "
                                             "is refused with exit code 2",
                                             "", std::nullopt});
}

// Checks the suite's checkpoint against --weights-sha256 and records both in `context`; the
// problem when there is one.
std::optional<std::string> check_weights(Context& context) {
  const auto& registry = option_registry();
  const auto weights = registry.find(kWeightsOptionName);
  if (weights == registry.end()) return std::nullopt;
  const auto expected = registry.find(kWeightsSha256OptionName);
  const bool expected_given = expected != registry.end() && expected->second.given;
  if (!weights->second.given) {
    if (expected_given) return std::string("--weights-sha256 needs --weights (a checkpoint to check)");
    context.emplace_back("weights", "seeded random");
    return std::nullopt;
  }
  try {
    const std::string sha256 =
        checked_weights_sha256(*weights->second.given, expected_given ? *expected->second.given : "");
    context.emplace_back("weights", *weights->second.given);
    context.emplace_back("weights_sha256", sha256);
  } catch (const std::invalid_argument& error) {
    return std::string(error.what());
  }
  return std::nullopt;
}

void print_usage(const char* program) {
  std::printf("%s: a DiT AutoResearch benchmark suite (Google Benchmark flags apply).\n", program);
  const auto help = option_help();
  if (!help.empty()) std::printf("Suite options:\n");
  for (const auto& [name, text] : help) std::printf("  --%s=VALUE  %s\n", name.c_str(), text.c_str());
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Options

Option::Option(std::string name, std::string help, std::string default_value) : name_(std::move(name)) {
  option_registry()[name_] = OptionRecord{std::move(help), std::move(default_value), std::nullopt};
}

const std::string& Option::value() const {
  const OptionRecord& record = option_registry().at(name_);
  return record.given ? *record.given : record.default_value;
}

bool Option::given() const { return option_registry().at(name_).given.has_value(); }

std::map<std::string, std::string> option_help() {
  std::map<std::string, std::string> help;
  for (const auto& [name, record] : option_registry()) {
    help[name] = record.help + (record.default_value.empty() ? "" : " (default " + record.default_value + ")");
  }
  return help;
}

ParsedArguments split_arguments(const std::vector<std::string>& arguments,
                                const std::vector<std::string>& option_names) {
  ParsedArguments parsed;
  for (size_t i = 0; i < arguments.size(); ++i) {
    const std::string& argument = arguments[i];
    bool matched = false;
    if (i > 0 && argument.rfind("--", 0) == 0) {
      for (const std::string& name : option_names) {
        const std::string flag = "--" + name;
        if (argument.rfind(flag + "=", 0) == 0) {
          parsed.values[name] = argument.substr(flag.size() + 1);
          matched = true;
        } else if (argument == flag) {
          if (i + 1 >= arguments.size()) throw std::invalid_argument(flag + " needs a value");
          parsed.values[name] = arguments[++i];
          matched = true;
        }
        if (matched) break;
      }
    }
    if (!matched) parsed.remaining.push_back(argument);
  }
  return parsed;
}

std::optional<std::string> default_json_path(const char* output_dir, const char* bench_name, const char* default_dir) {
  if (!bench_name || !*bench_name) return std::nullopt;
  const std::string file = std::string(bench_name) + ".json";
  if (output_dir && *output_dir) return (std::filesystem::path(output_dir) / "bench" / file).string();
  if (default_dir && *default_dir) return (std::filesystem::path(default_dir) / file).string();
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// The timed-outputs protocol

TimedRequest parse_timed_request(const std::map<std::string, std::string>& values) {
  TimedRequest request;
  if (auto found = values.find(request_seed_option.name()); found != values.end()) {
    const std::string& text = found->second;
    uint64_t seed = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seed);
    if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
      throw std::invalid_argument("--request-seed=" + text + " is not a decimal 64-bit number");
    }
    request.seed = seed;
  }
  if (auto found = values.find(outputs_dir_option.name()); found != values.end()) {
    if (found->second.empty()) throw std::invalid_argument("--outputs-dir needs a folder");
    request.outputs_dir = std::filesystem::path(found->second);
  }
  return request;
}

const TimedRequest& timed_request() { return process_request(); }

ImageRequest image_request(uint64_t request_seed, uint64_t index, int classes) {
  // Distinct odd multiples of the golden ratio apart, then mixed: distinct indices give distinct
  // seeds, and the label is drawn from the seed.
  ImageRequest request;
  request.seed = mix64(request_seed + (index + 1) * 0x9e3779b97f4a7c15ULL);
  request.class_label =
      classes > 0 ? static_cast<int>(mix64(request.seed ^ 0xd1b54a32d192ed03ULL) % static_cast<uint64_t>(classes)) : 0;
  return request;
}

std::string image_output_name(uint64_t index) { return "image-" + std::to_string(index); }

std::filesystem::path image_output_path(const std::filesystem::path& dir, uint64_t index, const std::string& kind) {
  return dir / (image_output_name(index) + "." + kind);
}

void TimedImages::publish(benchmark::State& state) const {
  state.counters["timed_images"] = benchmark::Counter(static_cast<double>(count_));
  state.counters["timed_seconds"] = benchmark::Counter(seconds_);
}

TimedImages& timed_images() {
  static TimedImages images;
  return images;
}

// ---------------------------------------------------------------------------------------------
// The checkpoint

std::string checked_weights_sha256(const std::string& path, const std::string& expected) {
  const bool hex = expected.size() == 64 && std::all_of(expected.begin(), expected.end(), [](char c) {
                     return std::isxdigit(static_cast<unsigned char>(c)) != 0;
                   });
  if (!expected.empty() && !hex)
    throw std::invalid_argument("--weights-sha256=" + expected + " is not a SHA-256 (64 hexadecimal digits)");
  std::string actual;
  try {
    actual = sha256_file(path);
  } catch (const Error& error) {
    throw std::invalid_argument("--weights " + path + ": " + error.what() +
                                (expected.empty() ? "" : " (expected sha256 " + expected + ")"));
  }
  std::string wanted = expected;
  for (char& c : wanted) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!wanted.empty() && actual != wanted)
    throw std::invalid_argument("--weights " + path + " has sha256 " + actual + ", not the expected " + wanted);
  return actual;
}

// ---------------------------------------------------------------------------------------------
// Context

std::string commit_description() {
  const std::string from_environment = environment("DIT_COMMIT");
  if (!from_environment.empty()) return from_environment;
  const std::string described =
      command_output("git -C '" DIT_SOURCE_DIR "' describe --always --dirty --tags 2>/dev/null");
  return described.empty() ? "unknown (no git history; set DIT_COMMIT)" : described;
}

Context build_context() {
  std::array<char, 256> host{};
  gethostname(host.data(), host.size() - 1);
  return {
      {"dit_commit", commit_description()},
      {"dit_build_type", DIT_BUILD_TYPE},
      {"dit_cuda_architectures", DIT_CUDA_ARCHITECTURES},
      {"dit_build_dir", DIT_BUILD_DIR},
      {"dit_compiler", DIT_COMPILER},
      {"dit_host", host.data()},
  };
}

void set_before_benchmarks(BeforeBenchmarks hook) { before_benchmarks_hook() = std::move(hook); }

// ---------------------------------------------------------------------------------------------
// Main

// Counts the benchmarks that ended in an error (State::SkipWithError), so that the process
// exit code says so and a smoke test can fail. Benchmark 1.7 marks such a run error_occurred;
// 1.8 marks it skipped == SkippedWithError.
class ErrorCountingReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) errors_ += failed(run) ? 1 : 0;
    ConsoleReporter::ReportRuns(runs);
  }
  int errors() const { return errors_; }

 private:
  template <typename BenchmarkRun>
  static bool failed(const BenchmarkRun& run) {
    if constexpr (requires { run.error_occurred; }) {
      return run.error_occurred;
    } else {
      using Skipped = decltype(run.skipped);  // dependent, so 1.7's headers never see the name
      return run.skipped == Skipped::SkippedWithError;
    }
  }
  int errors_ = 0;
};

int run_main(int argc, char** argv, const DeviceProbe& probe) {
  std::vector<std::string> arguments(argv, argv + argc);
  declare_weights_sha256_option();
  if (has_flag(arguments, "--help")) {
    print_usage(argv[0]);
    benchmark::Initialize(&argc, argv);  // prints Benchmark's own help and exits
    return 0;
  }

  std::vector<std::string> option_names;
  for (const auto& [name, record] : option_registry()) option_names.push_back(name);
  ParsedArguments parsed;
  try {
    parsed = split_arguments(arguments, option_names);
  } catch (const std::invalid_argument& error) {
    std::fprintf(stderr, "%s: %s\n", argv[0], error.what());
    return 2;
  }
  for (auto& [name, record] : option_registry()) record.given.reset();
  for (const auto& [name, value] : parsed.values) option_registry()[name].given = value;
  try {
    process_request() = parse_timed_request(parsed.values);
  } catch (const std::invalid_argument& error) {
    std::fprintf(stderr, "%s: %s\n", argv[0], error.what());
    return 2;
  }
  if (const auto& outputs = process_request().outputs_dir) {
    std::error_code error;
    std::filesystem::create_directories(*outputs, error);
    if (error) {
      std::fprintf(stderr, "%s: cannot create the outputs folder %s: %s\n", argv[0], outputs->c_str(),
                   error.message().c_str());
      return 2;
    }
  }

  std::vector<std::string> benchmark_arguments = parsed.remaining;
  if (!has_flag(benchmark_arguments, "--benchmark_out") && !has_flag(benchmark_arguments, "--benchmark_list_tests")) {
    const auto path = default_json_path(std::getenv("DIT_OUTPUT_DIR"), std::getenv("DIT_BENCH_NAME"),
                                        std::getenv("DIT_BENCH_DEFAULT_DIR"));
    if (path) {
      std::error_code error;
      std::filesystem::create_directories(std::filesystem::path(*path).parent_path(), error);
      if (error) {
        std::fprintf(stderr, "%s: cannot create the directory of %s: %s\n", argv[0], path->c_str(),
                     error.message().c_str());
        return 2;
      }
      benchmark_arguments.push_back("--benchmark_out=" + *path);
      std::printf("benchmark JSON: %s\n", path->c_str());
    }
  }
  if (has_flag(benchmark_arguments, "--benchmark_out") && !has_flag(benchmark_arguments, "--benchmark_out_format")) {
    benchmark_arguments.push_back("--benchmark_out_format=json");
  }

  std::vector<char*> benchmark_argv;
  for (std::string& argument : benchmark_arguments) benchmark_argv.push_back(argument.data());
  benchmark_argv.push_back(nullptr);
  int benchmark_argc = static_cast<int>(benchmark_arguments.size());
  benchmark::Initialize(&benchmark_argc, benchmark_argv.data());
  if (benchmark::ReportUnrecognizedArguments(benchmark_argc, benchmark_argv.data())) return 2;

  const bool listing = has_flag(benchmark_arguments, "--benchmark_list_tests");
  Context context = build_context();
  if (!listing) {
    if (const std::optional<std::string> problem = check_weights(context)) {
      std::fprintf(stderr, "%s: %s\n", argv[0], problem->c_str());
      return 2;
    }
  }
  if (probe && !listing) {
    const std::optional<std::string> no_gpu = probe(context);
    if (no_gpu) {
      if (environment("DIT_REQUIRE_GPU") == "1") {
        std::fprintf(stderr, "FAIL: this benchmark needs a GPU (%s) and DIT_REQUIRE_GPU=1 is set\n", no_gpu->c_str());
        return 1;
      }
      std::printf("SKIP: no usable GPU (%s); set DIT_REQUIRE_GPU=1 to make this a failure\n", no_gpu->c_str());
      return 77;
    }
  }
  for (const auto& [key, value] : context) benchmark::AddCustomContext(key, value);

  ErrorCountingReporter display;
  try {
    if (before_benchmarks_hook() && !listing) {
      if (const std::optional<int> exit_code = before_benchmarks_hook()()) return *exit_code;
    }
    benchmark::RunSpecifiedBenchmarks(&display);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s: %s\n", argv[0], error.what());
    return 1;
  }
  benchmark::Shutdown();
  if (display.errors() > 0) {
    std::fprintf(stderr, "%s: %d benchmark(s) ended in an error\n", argv[0], display.errors());
    return 1;
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Counters and aggregates

void RateCounters::publish(benchmark::State& state) const {
  using benchmark::Counter;
  const double per_second = seconds_ > 0 ? static_cast<double>(iterations_) / seconds_ : 0.0;
  if (bytes_ > 0) {
    state.counters["bytes"] = Counter(bytes_, Counter::kDefaults, Counter::kIs1024);
    if (per_second > 0)
      state.counters["bytes_per_second"] = Counter(bytes_ * per_second, Counter::kDefaults, Counter::kIs1024);
  }
  if (flops_ > 0) {
    state.counters["flops"] = Counter(flops_);
    if (per_second > 0) state.counters["flops_per_second"] = Counter(flops_ * per_second);
  }
}

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return std::nan("");
  std::sort(values.begin(), values.end());
  const double position = std::clamp(q, 0.0, 1.0) * static_cast<double>(values.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(position));
  const size_t above = std::min(below + 1, values.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return values[below] + fraction * (values[above] - values[below]);
}

benchmark::internal::Benchmark* with_percentiles(benchmark::internal::Benchmark* b) {
  return b->ComputeStatistics("p50", [](const std::vector<double>& v) { return quantile(v, 0.50); })
      ->ComputeStatistics("p95", [](const std::vector<double>& v) { return quantile(v, 0.95); });
}

void set_bytes_counter(benchmark::State& state, const std::string& name, double bytes) {
  state.counters[name] = benchmark::Counter(bytes, benchmark::Counter::kDefaults, benchmark::Counter::kIs1024);
}

}  // namespace dit::bench
