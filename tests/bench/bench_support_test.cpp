#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "bench/support/bench_support.h"
#include "core/sha256.h"
#include "bench/engine/engine_setup.h"
#include "bench/engine/model_costs.h"
#include "model/config.h"
#include "tests/support/test_support.h"

namespace dit::bench {
namespace {

TEST(SplitArguments, TakesDeclaredOptionsInBothFormsAndLeavesTheRest) {
  const ParsedArguments parsed = split_arguments({"bench_forward", "--weights=/w.safetensors", "--benchmark_filter=256",
                                                  "--precision", "bf16", "--benchmark_min_time=0.01"},
                                                 {"weights", "precision"});
  EXPECT_EQ(parsed.remaining,
            (std::vector<std::string>{"bench_forward", "--benchmark_filter=256", "--benchmark_min_time=0.01"}));
  EXPECT_EQ(parsed.values.at("weights"), "/w.safetensors");
  EXPECT_EQ(parsed.values.at("precision"), "bf16");
}

TEST(SplitArguments, DoesNotMatchAPrefixOfALongerFlag) {
  const ParsedArguments parsed = split_arguments({"b", "--weightsfile=x", "--steps=3"}, {"weights", "steps"});
  EXPECT_EQ(parsed.remaining, (std::vector<std::string>{"b", "--weightsfile=x"}));
  EXPECT_EQ(parsed.values.at("steps"), "3");
  EXPECT_EQ(parsed.values.count("weights"), 0u);
}

TEST(SplitArguments, RejectsAnOptionWithoutValue) {
  EXPECT_THROW(split_arguments({"b", "--weights"}, {"weights"}), std::invalid_argument);
}

TEST(DefaultJsonPath, PrefersTheOutputsDirectoryThenTheDefaultDirectory) {
  EXPECT_EQ(default_json_path("/runs/7/outputs", "bench_e2e", "/build/bench-results"),
            std::optional<std::string>("/runs/7/outputs/bench/bench_e2e.json"));
  EXPECT_EQ(default_json_path(nullptr, "bench_e2e", "/build/bench-results"),
            std::optional<std::string>("/build/bench-results/bench_e2e.json"));
  EXPECT_EQ(default_json_path("", "bench_e2e", "/d"), std::optional<std::string>("/d/bench_e2e.json"));
}

TEST(DefaultJsonPath, WritesNothingForRunsThatAreNotPerfRuns) {
  EXPECT_EQ(default_json_path("/runs/7", nullptr, "/d"), std::nullopt);  // smoke runs
  EXPECT_EQ(default_json_path("/runs/7", "", "/d"), std::nullopt);
  EXPECT_EQ(default_json_path(nullptr, "bench_e2e", nullptr), std::nullopt);
}

TEST(TimedRequest, ReadsTheSeedAndTheOutputsFolder) {
  TimedRequest request = parse_timed_request({});
  EXPECT_EQ(request.seed, 0u);
  EXPECT_EQ(request.outputs_dir, std::nullopt);
  request = parse_timed_request({{"request-seed", "18446744073709551615"}, {"outputs-dir", "/perf/best/3"}});
  EXPECT_EQ(request.seed, 18446744073709551615ull);
  EXPECT_EQ(request.outputs_dir, std::filesystem::path("/perf/best/3"));
  for (const char* bad : {"", "-1", "12x", "0x10", "18446744073709551616", " 5"}) {
    EXPECT_THROW(parse_timed_request({{"request-seed", bad}}), std::invalid_argument) << bad;
  }
  EXPECT_THROW(parse_timed_request({{"outputs-dir", ""}}), std::invalid_argument);
}

TEST(TimedRequest, HarnessOptionsNeverReachGoogleBenchmark) {
  std::vector<std::string> names;
  for (const auto& [name, help] : option_help()) names.push_back(name);
  const ParsedArguments parsed = split_arguments(
      {"bench_cpu", "--benchmark_filter=^BM_CpuForward/batch:1/", "--request-seed=7", "--outputs-dir", "/o/0"}, names);
  EXPECT_EQ(parsed.remaining, (std::vector<std::string>{"bench_cpu", "--benchmark_filter=^BM_CpuForward/batch:1/"}));
  EXPECT_EQ(parsed.values.at("request-seed"), "7");
  EXPECT_EQ(parsed.values.at("outputs-dir"), "/o/0");
}

TEST(ImageRequest, IsAFunctionOfTheSeedAndTheIndexOnly) {
  std::set<uint64_t> seeds;
  for (uint64_t index = 0; index < 1000; ++index) {
    const ImageRequest request = image_request(42, index, 1000);
    EXPECT_EQ(request.seed, image_request(42, index, 1000).seed);
    EXPECT_EQ(request.class_label, image_request(42, index, 1000).class_label);
    EXPECT_GE(request.class_label, 0);
    EXPECT_LT(request.class_label, 1000);
    seeds.insert(request.seed);
    seeds.insert(image_request(42, kUnjudgedImageIndexBase + index, 1000).seed);
  }
  EXPECT_EQ(seeds.size(), 2000u);  // never repeated, timed or not
  EXPECT_NE(image_request(42, 0, 1000).seed, image_request(43, 0, 1000).seed);
  std::set<int> labels;
  for (uint64_t index = 0; index < 200; ++index) labels.insert(image_request(7, index, 1000).class_label);
  EXPECT_GT(labels.size(), 150u);  // spread over the classes
}

TEST(ImageRequest, OutputFileNames) {
  EXPECT_EQ(image_output_name(0), "image-0");
  EXPECT_EQ(image_output_path("/o/3", 12, "latent.safetensors"),
            std::filesystem::path("/o/3/image-12.latent.safetensors"));
}

TEST(Quantile, InterpolatesBetweenOrderStatistics) {
  EXPECT_DOUBLE_EQ(quantile({3, 1, 2}, 0.5), 2.0);
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2}, 0.5), 2.5);
  // numpy.percentile(range(1, 11), 95) == 9.55
  EXPECT_NEAR(quantile({10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, 0.95), 9.55, 1e-12);
  EXPECT_DOUBLE_EQ(quantile({5}, 0.95), 5.0);
  EXPECT_TRUE(std::isnan(quantile({}, 0.5)));
}

TEST(EnvironmentEngineOptions, DitAttentionNamesTheAttentionForm) {
  ::unsetenv("DIT_ATTENTION");
  EXPECT_EQ(dit::bench::environment_engine_options().attention, "");
  ::setenv("DIT_ATTENTION", "flash", 1);
  EXPECT_EQ(dit::bench::environment_engine_options().attention, "flash");
  ::setenv("DIT_GEMM_PLAN", "off", 1);  // the model's own switches still read beside it
  EXPECT_EQ(dit::bench::environment_engine_options().gemm_plan, "off");
  ::unsetenv("DIT_ATTENTION");
  ::unsetenv("DIT_GEMM_PLAN");
}

TEST(ModelCosts, DitXl2ForwardMatchesThePublishedCount) {
  // FACTS.md: about 119 G multiply-accumulates per sample at 256 and 525 G at 512.
  EXPECT_NEAR(forward_macs_per_sample(model_config("DiT-XL/2", 256)) / 1e9, 119.0, 1.5);
  EXPECT_NEAR(forward_macs_per_sample(model_config("DiT-XL/2", 512)) / 1e9, 525.0, 6.0);
  EXPECT_DOUBLE_EQ(forward_flops(model_config("DiT-XL/2", 256), 2),
                   4.0 * forward_macs_per_sample(model_config("DiT-XL/2", 256)));
}

TEST(ModelCosts, SdVaeDecoderMatchesTheEstimate) {
  // FACTS.md: about 311 G multiply-accumulates at 256 (a 32x32 latent); four times the pixels
  // at 512 give a little over four times the work (attention grows with the square).
  const double at_256 = vae_decoder_macs(sd_vae_config(), 32);
  EXPECT_NEAR(at_256 / 1e9, 311.0, 8.0);
  EXPECT_GT(vae_decoder_macs(sd_vae_config(), 64), 4.0 * at_256);
  EXPECT_LT(vae_decoder_macs(sd_vae_config(), 64), 4.5 * at_256);
}

TEST(ModelCosts, WeightBytesFollowThePrecision) {
  const ModelConfig config = model_config("DiT-XL/2", 256);
  EXPECT_NEAR(weight_bytes(config, Precision::fp16) / 1e9, 1.35, 0.02);
  EXPECT_DOUBLE_EQ(weight_bytes(config, Precision::fp32), 2.0 * weight_bytes(config, Precision::bf16));
}

// --- The checkpoint of a suite with a `weights` option ----------------------------------------

// As a suite declares it: the harness then also takes --weights-sha256.
const Option weights_option(kWeightsOptionName, "a checkpoint (test)");

// A file of fresh random bytes at `path`; returns their sha256.
std::string write_random_file(const std::filesystem::path& path) {
  std::mt19937_64 random(dit::test::fresh_seed());
  std::string bytes(1 + random() % 200000, '\0');
  for (char& byte : bytes) byte = static_cast<char>(random());
  std::ofstream(path, std::ios::binary) << bytes;
  return sha256_hex(bytes);
}

TEST(CheckedWeightsSha256, ReturnsTheFilesHashAndRefusesAnyOther) {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("dit-bench-weights-" + std::to_string(getpid()) + ".safetensors");
  const std::string actual = write_random_file(file);
  std::string upper = actual;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const std::string& expected : {std::string(), actual, upper})
    EXPECT_EQ(checked_weights_sha256(file.string(), expected), actual) << expected;

  const std::string wrong = dit::test::random_sha256_hex();
  struct Refusal {
    std::string path, expected, mentions;
  };
  const std::vector<Refusal> refusals = {
      {file.string(), wrong, file.string() + " has sha256 " + actual + ", not the expected " + wrong},
      {file.string() + ".missing", actual, file.string() + ".missing"},
      {file.string(), actual.substr(1), "is not a SHA-256 (64 hexadecimal digits)"},
      {file.string(), actual.substr(1) + "z", "is not a SHA-256"},
  };
  for (const Refusal& refusal : refusals) {
    try {
      checked_weights_sha256(refusal.path, refusal.expected);
      ADD_FAILURE() << "accepted " << refusal.path << " with " << refusal.expected;
    } catch (const std::invalid_argument& error) {
      EXPECT_NE(std::string(error.what()).find(refusal.mentions), std::string::npos) << error.what();
    }
  }
  std::filesystem::remove(file);
}

// A benchmark for run_main to run: cheap and deterministic.
void BM_SupportTestSum(benchmark::State& state) {
  int64_t sum = 0;
  for (auto _ : state) benchmark::DoNotOptimize(sum += 1);
  state.counters["answer"] = 42;
}
BENCHMARK(BM_SupportTestSum);

// A benchmark that follows the timed-outputs protocol, fast enough that Google Benchmark
// calibrates (runs it with 1, 10, ... iterations and reports only the last run).
void BM_SupportTestTimedImages(benchmark::State& state) {
  TimedImages& timed = timed_images();
  for (auto _ : state) {
    const uint64_t index = timed.begin_image();
    const ImageRequest request = image_request(timed_request().seed, index, 1000);
    state.SetIterationTime(1e-5);
    timed.add_timed_seconds(1e-5);
    if (timed_request().outputs_dir) {
      std::ofstream(image_output_path(*timed_request().outputs_dir, index, "txt")) << request.seed;
    }
  }
  timed.publish(state);
}
BENCHMARK(BM_SupportTestTimedImages)->UseManualTime()->Repetitions(2);

// Runs run_main as a benchmark binary would be run, with the given environment.
int run_main_with(std::vector<std::string> arguments, const DeviceProbe& probe) {
  std::vector<char*> argv;
  for (std::string& a : arguments) argv.push_back(a.data());
  argv.push_back(nullptr);
  return run_main(static_cast<int>(arguments.size()), argv.data(), probe);
}

class RunMain : public testing::Test {
 protected:
  void SetUp() override {
    directory_ = std::filesystem::temp_directory_path() / ("dit-bench-support-test-" + std::to_string(getpid()));
    std::filesystem::create_directories(directory_);
    for (const char* name : {"DIT_OUTPUT_DIR", "DIT_BENCH_NAME", "DIT_BENCH_DEFAULT_DIR", "DIT_REQUIRE_GPU"})
      unsetenv(name);
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }
  std::filesystem::path directory_;
};

// Google Benchmark 1.7 frees its context in Shutdown() without forgetting it, so one process
// can complete run_main once: this is the only test that runs benchmarks to the end.
// It also runs the protocol's harness end to end: --request-seed and --outputs-dir, every timed
// image written, calibration runs included, and counted in the reported entries.
TEST_F(RunMain, PerfRunWritesJsonWithBuildAndDeviceContextIntoTheOutputsDirectory) {
  setenv("DIT_OUTPUT_DIR", directory_.c_str(), 1);
  setenv("DIT_BENCH_NAME", "bench_support_test", 1);
  setenv("DIT_BENCH_DEFAULT_DIR", (directory_ / "unused").c_str(), 1);
  setenv("DIT_COMMIT", "abc1234-test", 1);
  const DeviceProbe gpu = [](Context& context) {
    context.emplace_back("gpu_name", "Test GPU");
    return std::optional<std::string>();
  };
  const std::filesystem::path outputs = directory_ / "perf" / "0";
  const std::filesystem::path weights = directory_ / "weights.safetensors";
  const std::string weights_sha256 = write_random_file(weights);
  ASSERT_EQ(run_main_with({"bench_support_test", "--benchmark_filter=BM_SupportTest(Sum|TimedImages)",
                           "--benchmark_min_time=0.001", "--request-seed=99", "--outputs-dir=" + outputs.string(),
                           "--weights=" + weights.string(), "--weights-sha256=" + weights_sha256},
                          gpu),
            0);
  const std::filesystem::path written = directory_ / "bench" / "bench_support_test.json";
  ASSERT_TRUE(std::filesystem::exists(written));
  EXPECT_FALSE(std::filesystem::exists(directory_ / "unused"));
  const nlohmann::json json = nlohmann::json::parse(std::ifstream(written));
  EXPECT_EQ(json["context"]["dit_commit"], "abc1234-test");
  EXPECT_EQ(json["context"]["gpu_name"], "Test GPU");
  EXPECT_EQ(json["context"]["weights"], weights.string());
  EXPECT_EQ(json["context"]["weights_sha256"], weights_sha256);
  for (const char* key : {"dit_build_type", "dit_cuda_architectures", "dit_compiler", "dit_build_dir", "dit_host"}) {
    EXPECT_TRUE(json["context"].contains(key)) << key;
  }
  ASSERT_GE(json["benchmarks"].size(), 3u);
  EXPECT_EQ(json["benchmarks"][0]["name"], "BM_SupportTestSum");
  EXPECT_EQ(json["benchmarks"][0]["answer"], 42);
  unsetenv("DIT_COMMIT");

  // The timed images: files 0..n-1, n the last entry's timed_images, more than the reported
  // iterations (the calibration runs), each from the request seed and its index.
  int64_t reported = 0;
  double counted = 0;
  for (const auto& entry : json["benchmarks"]) {
    if (entry["run_type"] != "iteration" || entry["run_name"] != "BM_SupportTestTimedImages/repeats:2/manual_time") {
      continue;
    }
    reported += entry["iterations"].get<int64_t>();
    counted = std::max(counted, entry["timed_images"].get<double>());
    EXPECT_NEAR(entry["timed_seconds"].get<double>(), entry["timed_images"].get<double>() * 1e-5, 1e-9);
  }
  const auto count = static_cast<uint64_t>(counted);
  EXPECT_GT(count, static_cast<uint64_t>(reported));
  size_t files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(outputs)) ++files;
  EXPECT_EQ(files, count);
  for (uint64_t index = 0; index < count; ++index) {
    uint64_t seed = 0;
    std::ifstream(image_output_path(outputs, index, "txt")) >> seed;
    EXPECT_EQ(seed, image_request(99, index, 1000).seed) << index;
  }
  EXPECT_EQ(timed_request().seed, 99u);
}

TEST_F(RunMain, GpuSuiteSkipsWithoutAGpuAndFailsWhenOneIsRequired) {
  const DeviceProbe no_gpu = [](Context&) { return std::optional<std::string>("no CUDA device"); };
  EXPECT_EQ(run_main_with({"bench_x", "--benchmark_filter=BM_SupportTestSum"}, no_gpu), 77);
  setenv("DIT_REQUIRE_GPU", "1", 1);
  EXPECT_EQ(run_main_with({"bench_x", "--benchmark_filter=BM_SupportTestSum"}, no_gpu), 1);
}

// Before the GPU check: a checkpoint of another sha256 is exit 2, not a skip (77).
TEST_F(RunMain, RejectsACheckpointOfAnotherSha256WithExitCode2BeforeTheGpuCheck) {
  const DeviceProbe no_gpu = [](Context&) { return std::optional<std::string>("no CUDA device"); };
  const std::filesystem::path weights = directory_ / "weights.safetensors";
  const std::string actual = write_random_file(weights);
  const std::vector<std::vector<std::string>> refused = {
      {"--weights=" + weights.string(), "--weights-sha256=" + dit::test::random_sha256_hex()},
      {"--weights=" + (directory_ / "missing.safetensors").string(), "--weights-sha256=" + actual},
      {"--weights=" + weights.string(), "--weights-sha256=" + actual.substr(2)},
      {"--weights-sha256=" + actual},
  };
  for (const std::vector<std::string>& options : refused) {
    std::vector<std::string> arguments = {"bench_x", "--benchmark_filter=BM_SupportTestSum"};
    arguments.insert(arguments.end(), options.begin(), options.end());
    EXPECT_EQ(run_main_with(arguments, no_gpu), 2) << options.front();
  }
  EXPECT_EQ(run_main_with({"bench_x", "--benchmark_filter=BM_SupportTestSum", "--weights=" + weights.string(),
                           "--weights-sha256=" + actual},
                          no_gpu),
            77);
}

TEST_F(RunMain, RejectsUnknownFlagsWithExitCode2) { EXPECT_EQ(run_main_with({"bench_x", "--no-such-flag=1"}, {}), 2); }

TEST_F(RunMain, RejectsAMalformedRequestSeedWithExitCode2) {
  EXPECT_EQ(run_main_with({"bench_x", "--request-seed=twelve"}, {}), 2);
  EXPECT_EQ(run_main_with({"bench_x", "--request-seed"}, {}), 2);
}

}  // namespace
}  // namespace dit::bench
