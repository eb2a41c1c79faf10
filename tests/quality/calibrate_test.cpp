// The rules that turn measured calibration spreads into contract floors (quality/README.md),
// which restatements each backend and precision renders, and the calibration JSON of a CPU run.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "quality/metrics.h"
#include "quality/renderer/calibrate.h"

namespace dit::quality {
namespace {

TEST(Calibration, FloorsFollowTheDocumentedRules) {
  // The CPU corpus's measured rounding spread (README) gives the committed floors.
  EXPECT_NEAR(proposed_floor(kLatentRelativeL2, 2.1196978480642274e-07), 2.2e-6, 1e-18);
  EXPECT_DOUBLE_EQ(proposed_floor(kImagePsnr, 89.02561563555346), 79.0);
  EXPECT_NEAR(proposed_floor(kImageSsim, 0.9999998713835585), 0.99999, 1e-15);
  EXPECT_DOUBLE_EQ(proposed_floor(kMaxAbsPixelError, 1.0), 2.0);
  // Zero spreads fall back to the minimums; large ones scale.
  EXPECT_DOUBLE_EQ(proposed_floor(kLatentRelativeL2, 0.0), 1e-6);
  EXPECT_NEAR(proposed_floor(kLatentRelativeL2, 3.14e-5), 3.2e-4, 1e-16);
  EXPECT_DOUBLE_EQ(proposed_floor(kImagePsnr, kPsnrOfIdenticalImages), 80.0);
  EXPECT_NEAR(proposed_floor(kImageSsim, 0.999), 0.99, 1e-15);
  EXPECT_DOUBLE_EQ(proposed_floor(kMaxAbsPixelError, 3.0), 6.0);
  EXPECT_DOUBLE_EQ(proposed_floor(kAllFinite, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(proposed_floor(kDeterminism, 1.0), 1.0);
}

MetricValues distances(double latent, double psnr, double ssim, double pixels) {
  return {{kLatentRelativeL2, latent}, {kImagePsnr, psnr}, {kImageSsim, ssim}, {kMaxAbsPixelError, pixels}};
}

MetricValues with_pass_fail(MetricValues values) {
  values[kAllFinite] = 1.0;
  values[kDeterminism] = 1.0;
  return values;
}

// Whether `floor` is at least as lenient as `exact` for every metric they share.
void expect_not_stricter(const MetricValues& floor, const MetricValues& exact, const std::string& what) {
  for (const auto& [metric, value] : floor) {
    if (!exact.count(metric)) continue;
    const bool lower_is_better = metric == kLatentRelativeL2 || metric == kMaxAbsPixelError;
    if (lower_is_better)
      EXPECT_GE(value, exact.at(metric)) << what << " " << metric;
    else
      EXPECT_LE(value, exact.at(metric)) << what << " " << metric;
  }
}

void expect_values(const MetricValues& actual, const MetricValues& expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (const auto& [metric, value] : expected) {
    ASSERT_TRUE(actual.count(metric)) << what << " lacks " << metric;
    EXPECT_NEAR(actual.at(metric), value, 1e-12 * std::max(1.0, std::abs(value))) << what << " " << metric;
  }
}

struct FloorCase {
  std::string name;
  MetricValues worst_spread;
  std::optional<MetricValues> yardstick, precision_error;
  MetricValues exact;
  std::optional<MetricValues> numerical, fp32_bound;
};

TEST(Calibration, EachClassFollowsItsRuleAndIsNeverStricterThanExact) {
  const std::vector<FloorCase> cases = {
      // A 16-bit set: the precision error is far beyond the exact spread and sets both classes.
      {"fp16-like", distances(1e-4, 60.0, 0.9999, 3.0), distances(5e-3, 40.2, 0.995, 12.0),
       distances(5e-3, 40.2, 0.995, 12.0), with_pass_fail(distances(1e-3, 50.0, 0.999, 6.0)),
       with_pass_fail(distances(5e-3, 40.0, 0.995, 12.0)), distances(1e-2, 37.0, 0.99, 25.0)},
      // A precision error below the exact spread: both classes fall back to the exact floors.
      {"small-precision-error", distances(1e-3, 45.0, 0.999, 10.0), distances(1e-5, 90.0, 0.9999999, 0.0),
       distances(1e-5, 90.0, 0.9999999, 0.0), with_pass_fail(distances(1e-2, 35.0, 0.99, 20.0)),
       with_pass_fail(distances(1e-2, 35.0, 0.99, 20.0)), distances(1e-2, 35.0, 0.99, 20.0)},
      // An fp32 GPU set: TF32's spread is the numerical yardstick, no fp32 bound.
      {"fp32-gpu-like", distances(2e-6, 95.0, 0.99999995, 1.0), distances(3.3e-4, 58.4, 0.99991, 4.0), std::nullopt,
       with_pass_fail(distances(2e-5, 80.0, 0.99999, 2.0)), with_pass_fail(distances(3.3e-4, 58.0, 0.99991, 4.0)),
       std::nullopt},
      // A CPU set: bit-for-bit restatements and no yardstick: exact floors at their minimums only.
      {"cpu-like", distances(0.0, kPsnrOfIdenticalImages, 1.0, 0.0), std::nullopt, std::nullopt,
       with_pass_fail(distances(1e-6, 80.0, 0.99999, 2.0)), std::nullopt, std::nullopt},
  };
  for (const FloorCase& c : cases) {
    const ProposedFloors proposed = propose_floors(c.worst_spread, c.yardstick, "the yardstick", c.precision_error);
    expect_values(proposed.exact, c.exact, c.name + " exact");
    ASSERT_EQ(proposed.numerical.has_value(), c.numerical.has_value()) << c.name;
    ASSERT_EQ(proposed.fp32_bound.has_value(), c.fp32_bound.has_value()) << c.name;
    if (c.numerical) {
      expect_values(*proposed.numerical, *c.numerical, c.name + " numerical");
      expect_not_stricter(*proposed.numerical, proposed.exact, c.name + " numerical");
    }
    if (c.fp32_bound) {
      expect_values(*proposed.fp32_bound, *c.fp32_bound, c.name + " fp32_bound");
      expect_not_stricter(*proposed.fp32_bound, proposed.exact, c.name + " fp32_bound");
    }
    EXPECT_NE(proposed.margin.find("exact: "), std::string::npos) << proposed.margin;
    EXPECT_EQ(proposed.margin.find("numerical: none") != std::string::npos, !c.yardstick) << proposed.margin;
    EXPECT_EQ(proposed.margin.find("fp32_bound: ") != std::string::npos, c.precision_error.has_value())
        << proposed.margin;
  }
}

TEST(Calibration, NumericalAndFp32BoundNeverStricterThanExactOverAGridOfSpreads) {
  for (double spread : {0.0, 1e-7, 3e-5, 1e-3, 0.2}) {
    for (double error : {0.0, 1e-7, 4e-5, 2e-3, 0.3}) {
      const MetricValues worst = distances(spread, 150.0 - 1e3 * spread, 1.0 - spread, 100 * spread);
      const MetricValues measured = distances(error, 150.0 - 1e3 * error, 1.0 - error, 100 * error);
      const ProposedFloors proposed = propose_floors(worst, measured, "the yardstick", measured);
      const std::string what = "spread " + std::to_string(spread) + " error " + std::to_string(error);
      expect_not_stricter(*proposed.numerical, proposed.exact, what + " numerical");
      expect_not_stricter(*proposed.fp32_bound, proposed.exact, what + " fp32_bound");
      expect_not_stricter(*proposed.fp32_bound, *proposed.numerical, what + " fp32_bound vs numerical");
    }
  }
}

Corpus one_case_corpus(const std::string& model, int image_size, const std::string& vae) {
  return parse_corpus("{\"id\": \"c1\", \"model\": \"" + model + "\", \"image_size\": " + std::to_string(image_size) +
                          ", \"class_label\": 3, \"seed\": 11, \"sampler\": \"ddim\", \"steps\": 3, \"cfg_scale\": "
                          "4.0, \"vae\": \"" +
                          vae + "\", \"weights_seed\": 0, \"critical\": false}\n",
                      "calibrate_test.jsonl");
}

struct PlanCase {
  Backend backend;
  Precision precision;
  std::vector<std::string> names;  // in order
};

TEST(Calibration, EachBackendAndPrecisionRestatesWithItsOwnExactChanges) {
  const std::vector<std::string> gpu_exact = {"fresh-instance",  "batch-front",      "batch-back",
                                              "gemm-plan-off",   "gemm-candidate-1", "gemm-candidate-2",
                                              "attention-naive", "graphs-off"};
  const auto plus = [](std::vector<std::string> names, const std::string& name) {
    names.push_back(name);
    return names;
  };
  const std::vector<PlanCase> cases = {
      {Backend::cpu, Precision::fp32, {"fresh-instance", "batch-front", "batch-back", "one-thread", "weights-one-ulp"}},
      {Backend::cuda, Precision::fp32, plus(gpu_exact, "tf32")},
      {Backend::cuda, Precision::tf32, gpu_exact},
      {Backend::cuda, Precision::fp16, plus(gpu_exact, "vae-bias-unfused")},
      {Backend::cuda, Precision::bf16, plus(gpu_exact, "vae-bias-unfused")},
  };
  const int threads = omp_get_max_threads();
  omp_set_num_threads(2);
  for (const PlanCase& c : cases) {
    RenderSettings settings;
    settings.backend = c.backend;
    settings.precision = c.precision;
    settings.data_dir = DIT_TEST_DATA_DIR;
    const Corpus corpus =
        c.backend == Backend::cpu ? one_case_corpus("tiny_b", 64, "tiny") : one_case_corpus("DiT-XL/2", 256, "sd");
    std::vector<std::string> names;
    for (const Restatement& r : planned_restatements(corpus, settings)) {
      names.push_back(r.name);
      const std::string expected_kind = r.name == "weights-one-ulp" ? "rounding"
                                        : r.name == "tf32"          ? "numerical"
                                                                    : "exact";
      EXPECT_EQ(r.kind, expected_kind) << r.name;
      EXPECT_FALSE(r.description.empty()) << r.name;
    }
    EXPECT_EQ(names, c.names) << backend_name(c.backend) << "/" << precision_name(c.precision);
  }
  omp_set_num_threads(threads);
}

TEST(Calibration, CpuCalibrationJsonHasTheVersion2FieldsAndNoNumericalOrFp32Bound) {
  RenderSettings settings;
  settings.data_dir = DIT_TEST_DATA_DIR;
  const Corpus corpus = one_case_corpus("tiny_b", 64, "tiny");
  const Calibration calibration = calibrate(corpus, "cpu", "cpu", settings, nullptr);
  const nlohmann::json json = calibration.to_json();
  EXPECT_EQ(json.at("format"), kCalibrationFormat);
  EXPECT_EQ(json.at("device"), "cpu");
  EXPECT_EQ(json.at("set"), "cpu");
  EXPECT_EQ(json.at("backend"), "cpu");
  EXPECT_EQ(json.at("precision"), "fp32");
  EXPECT_EQ(json.at("corpus_sha256"), corpus.sha256);
  ASSERT_TRUE(json.at("restatements").is_array());
  for (const auto& r : json.at("restatements")) {
    for (const char* key : {"name", "kind", "description", "worst", "scores"}) EXPECT_TRUE(r.contains(key)) << key;
    EXPECT_TRUE(r.at("worst").contains(kLatentRelativeL2)) << r.dump();
  }
  for (const char* metric : {kLatentRelativeL2, kImagePsnr, kImageSsim, kMaxAbsPixelError})
    EXPECT_TRUE(json.at("worst_spread").contains(metric)) << metric;
  EXPECT_FALSE(json.contains("precision_error"));
  const nlohmann::json& proposed = json.at("proposed");
  for (const char* metric : {kLatentRelativeL2, kImagePsnr, kImageSsim, kMaxAbsPixelError, kAllFinite, kDeterminism})
    EXPECT_TRUE(proposed.at("exact").contains(metric)) << metric;
  EXPECT_FALSE(proposed.contains("numerical"));
  EXPECT_FALSE(proposed.contains("fp32_bound"));
  EXPECT_FALSE(proposed.at("margin").get<std::string>().empty());
  const SetFloors floors = calibration.set_floors("quality/calibration/cpu-cpu.json");
  EXPECT_EQ(floors.calibration, "quality/calibration/cpu-cpu.json");
  EXPECT_EQ(floors.exact, calibration.proposed.exact);
  EXPECT_FALSE(floors.numerical);
  EXPECT_FALSE(floors.fp32_bound);
}

}  // namespace
}  // namespace dit::quality
