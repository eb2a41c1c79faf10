#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "bench/support/bench_support.h"
#include "bench/engine/model_costs.h"
#include "model/config.h"

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

TEST(DefaultJsonPath, PrefersTheRunDirectoryThenTheDefaultDirectory) {
  EXPECT_EQ(default_json_path("/runs/7", "bench_e2e", "/build/bench-results"),
            std::optional<std::string>("/runs/7/bench/bench_e2e.json"));
  EXPECT_EQ(default_json_path(nullptr, "bench_e2e", "/build/bench-results"),
            std::optional<std::string>("/build/bench-results/bench_e2e.json"));
  EXPECT_EQ(default_json_path("", "bench_e2e", "/d"), std::optional<std::string>("/d/bench_e2e.json"));
}

TEST(DefaultJsonPath, WritesNothingForRunsThatAreNotPerfRuns) {
  EXPECT_EQ(default_json_path("/runs/7", nullptr, "/d"), std::nullopt);  // smoke runs
  EXPECT_EQ(default_json_path("/runs/7", "", "/d"), std::nullopt);
  EXPECT_EQ(default_json_path(nullptr, "bench_e2e", nullptr), std::nullopt);
}

TEST(Quantile, InterpolatesBetweenOrderStatistics) {
  EXPECT_DOUBLE_EQ(quantile({3, 1, 2}, 0.5), 2.0);
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2}, 0.5), 2.5);
  // numpy.percentile(range(1, 11), 95) == 9.55
  EXPECT_NEAR(quantile({10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, 0.95), 9.55, 1e-12);
  EXPECT_DOUBLE_EQ(quantile({5}, 0.95), 5.0);
  EXPECT_TRUE(std::isnan(quantile({}, 0.5)));
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

// A benchmark for run_main to run: cheap and deterministic.
void BM_SupportTestSum(benchmark::State& state) {
  int64_t sum = 0;
  for (auto _ : state) benchmark::DoNotOptimize(sum += 1);
  state.counters["answer"] = 42;
}
BENCHMARK(BM_SupportTestSum);

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
    for (const char* name : {"DIT_RUN_DIR", "DIT_BENCH_NAME", "DIT_BENCH_DEFAULT_DIR", "DIT_REQUIRE_GPU"})
      unsetenv(name);
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }
  std::filesystem::path directory_;
};

// Google Benchmark 1.7 frees its context in Shutdown() without forgetting it, so one process
// can complete run_main once: this is the only test that runs benchmarks to the end.
TEST_F(RunMain, PerfRunWritesJsonWithBuildAndDeviceContextIntoTheRunDirectory) {
  setenv("DIT_RUN_DIR", directory_.c_str(), 1);
  setenv("DIT_BENCH_NAME", "bench_support_test", 1);
  setenv("DIT_BENCH_DEFAULT_DIR", (directory_ / "unused").c_str(), 1);
  setenv("DIT_COMMIT", "abc1234-test", 1);
  const DeviceProbe gpu = [](Context& context) {
    context.emplace_back("gpu_name", "Test GPU");
    return std::optional<std::string>();
  };
  ASSERT_EQ(
      run_main_with({"bench_support_test", "--benchmark_filter=BM_SupportTestSum", "--benchmark_min_time=0.001"}, gpu),
      0);
  const std::filesystem::path written = directory_ / "bench" / "bench_support_test.json";
  ASSERT_TRUE(std::filesystem::exists(written));
  EXPECT_FALSE(std::filesystem::exists(directory_ / "unused"));
  const nlohmann::json json = nlohmann::json::parse(std::ifstream(written));
  EXPECT_EQ(json["context"]["dit_commit"], "abc1234-test");
  EXPECT_EQ(json["context"]["gpu_name"], "Test GPU");
  for (const char* key : {"dit_build_type", "dit_cuda_architectures", "dit_compiler", "dit_build_dir", "dit_host"}) {
    EXPECT_TRUE(json["context"].contains(key)) << key;
  }
  ASSERT_EQ(json["benchmarks"].size(), 1u);
  EXPECT_EQ(json["benchmarks"][0]["name"], "BM_SupportTestSum");
  EXPECT_EQ(json["benchmarks"][0]["answer"], 42);
  unsetenv("DIT_COMMIT");
}

TEST_F(RunMain, GpuSuiteSkipsWithoutAGpuAndFailsWhenOneIsRequired) {
  const DeviceProbe no_gpu = [](Context&) { return std::optional<std::string>("no CUDA device"); };
  EXPECT_EQ(run_main_with({"bench_x", "--benchmark_filter=BM_SupportTestSum"}, no_gpu), 77);
  setenv("DIT_REQUIRE_GPU", "1", 1);
  EXPECT_EQ(run_main_with({"bench_x", "--benchmark_filter=BM_SupportTestSum"}, no_gpu), 1);
}

TEST_F(RunMain, RejectsUnknownFlagsWithExitCode2) { EXPECT_EQ(run_main_with({"bench_x", "--no-such-flag=1"}, {}), 2); }

}  // namespace
}  // namespace dit::bench
