// Contract parsing (every malformation named) and the threshold rules.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "quality/contract.h"

namespace dit::quality {
namespace {

using nlohmann::json;

json valid_contract() {
  return json::parse(R"({
    "version": 2,
    "strict_zero_regression": false,
    "strict_classifications": ["quantization"],
    "required_metrics": ["psnr", "error"],
    "metrics": {
      "psnr": {"direction": "higher", "allowed_regression": {"absolute": 1.0, "relative": 0.1}},
      "error": {"direction": "lower", "allowed_regression": {"absolute": 0.5, "relative": 0.0}}
    },
    "floors": {
      "cpu": {"small": {"calibration": "quality/calibration/cpu-small.json", "margin": "10x",
                        "exact": {"psnr": 60, "error": 0.25}}},
      "NVIDIA H200": {"small": {"calibration": "quality/calibration/h200-small.json", "margin": "10x",
                                "exact": {"psnr": 70, "error": 0.1}, "numerical": {"psnr": 50, "error": 0.3},
                                "fp32_bound": {"psnr": 40}}}
    },
    "critical_cases": {"cases.jsonl": ["x"]}
  })");
}

std::string error_of(const json& contract) {
  try {
    parse_contract(contract.dump(), "contract.json");
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::invalid_file);
    return error.what();
  }
  ADD_FAILURE() << "no error for " << contract.dump();
  return "";
}

TEST(Contract, ParsesAValidContract) {
  const Contract contract = parse_contract(valid_contract().dump(), "contract.json");
  EXPECT_EQ(contract.required_metrics, (std::vector<std::string>{"psnr", "error"}));
  EXPECT_EQ(contract.rule("psnr").direction, Direction::higher_is_better);
  EXPECT_EQ(contract.rule("error").direction, Direction::lower_is_better);
  EXPECT_FALSE(contract.rule("error").floor.has_value());  // floors come per device, set and class
  EXPECT_EQ(contract.critical_cases_of("cases.jsonl"), (std::vector<std::string>{"x"}));
  const SetFloors* cpu = contract.floors_for("cpu", "small");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->exact.at("psnr"), 60);
  EXPECT_FALSE(cpu->numerical.has_value());
  EXPECT_FALSE(cpu->fp32_bound.has_value());
  const SetFloors* h200 = contract.floors_for("NVIDIA H200", "small");
  ASSERT_NE(h200, nullptr);
  EXPECT_EQ(h200->numerical->at("error"), 0.3);
  EXPECT_EQ(h200->fp32_bound->at("psnr"), 40);
  EXPECT_EQ(contract.floors_for("NVIDIA RTX A5500", "small"), nullptr);  // not calibrated there
  EXPECT_EQ(contract.floors_for("cpu", "other"), nullptr);
  EXPECT_THROW(contract.critical_cases_of("other.jsonl"), Error);
  EXPECT_EQ(contract.sha256.size(), 64u);
  EXPECT_EQ(contract.version, 2);
}

TEST(Contract, QuantizationIsAlwaysStrict) {
  const Contract contract = parse_contract(valid_contract().dump(), "contract.json");
  EXPECT_TRUE(contract.strict_for(Classification::quantization));
  EXPECT_FALSE(contract.strict_for(Classification::exact));
  EXPECT_FALSE(contract.strict_for(Classification::approximate));
  json strict = valid_contract();
  strict["strict_zero_regression"] = true;
  EXPECT_TRUE(parse_contract(strict.dump(), "c").strict_for(Classification::exact));
}

TEST(Contract, ThresholdTakesTheLargerMarginAndTheFloor) {
  const Contract parsed = parse_contract(valid_contract().dump(), "contract.json");
  const Contract contract = parsed.with_floors(parsed.floors_for("cpu", "small")->exact);
  const MetricRule& psnr = contract.rule("psnr");
  // Baseline 150 (identical images): the margin alone would allow 135; the floor allows 60.
  EXPECT_DOUBLE_EQ(psnr.threshold(150), 60);
  // Baseline 50 (below the floor): max(1, 0.1 * 50) = 5 below it.
  EXPECT_DOUBLE_EQ(psnr.threshold(50), 45);
  EXPECT_TRUE(psnr.within_threshold(45, 50));
  EXPECT_FALSE(psnr.within_threshold(44.9, 50));
  EXPECT_FALSE(psnr.within_threshold(NAN, 50));
  const MetricRule& error = contract.rule("error");
  EXPECT_DOUBLE_EQ(error.threshold(0), 0.5);  // the margin (0.5) beats the floor (0.25)
  // Another class's floors replace these, and a metric the table lacks has none.
  const Contract numerical = parsed.with_floors(*parsed.floors_for("NVIDIA H200", "small")->numerical);
  EXPECT_DOUBLE_EQ(numerical.rule("psnr").threshold(150), 50);
  const Contract bound = parsed.with_floors(*parsed.floors_for("NVIDIA H200", "small")->fp32_bound);
  EXPECT_DOUBLE_EQ(bound.rule("psnr").threshold(150), 40);
  EXPECT_FALSE(bound.rule("error").floor.has_value());
  EXPECT_TRUE(error.within_threshold(0.5, 0));
  EXPECT_FALSE(error.within_threshold(0.51, 0));
  EXPECT_TRUE(error.no_worse(0.1, 0.2));
  EXPECT_FALSE(error.no_worse(0.2, 0.1));
  EXPECT_FALSE(error.no_worse(INFINITY, 0.1));
}

TEST(Contract, NamesEveryMalformation) {
  struct Bad {
    std::function<void(json&)> edit;
    std::string expected;
  };
  const std::vector<Bad> cases = {
      {[](json& c) { c.erase("required_metrics"); }, "missing field \"required_metrics\""},
      {[](json& c) { c["version"] = 1; }, "version must be 2"},
      {[](json& c) { c.erase("floors"); }, "missing field \"floors\""},
      {[](json& c) { c["strict_zero_regression"] = "no"; }, "strict_zero_regression must be true or false"},
      {[](json& c) { c["strict_classifications"] = json::array({"exact"}); }, "must include \"quantization\""},
      {[](json& c) { c["strict_classifications"].push_back("fast"); }, "unknown classification \"fast\""},
      {[](json& c) { c["required_metrics"] = json::array(); }, "required_metrics is empty"},
      {[](json& c) { c["required_metrics"].push_back("ssim"); }, "required metric \"ssim\" has no rule"},
      {[](json& c) { c["required_metrics"].push_back("psnr"); }, "lists \"psnr\" twice"},
      {[](json& c) { c["metrics"]["psnr"]["direction"] = "up"; },
       "metrics.psnr.direction must be \"higher\" or \"lower\""},
      {[](json& c) { c["metrics"]["psnr"]["allowed_regression"]["absolute"] = -1; },
       "allowed_regression.absolute must be a finite number >= 0"},
      {[](json& c) { c["metrics"]["psnr"]["allowed_regression"].erase("relative"); },
       "metrics.psnr.allowed_regression must be"},
      {[](json& c) { c["metrics"]["psnr"]["floor"] = 60; }, "metrics.psnr.floor: floors are per device and gate set"},
      {[](json& c) { c["floors"] = json::array(); }, "floors must map device names to gate sets"},
      {[](json& c) { c["floors"]["cpu"]["small"].erase("calibration"); },
       "floors.cpu.small: missing field \"calibration\""},
      {[](json& c) { c["floors"]["cpu"]["small"]["exact"].erase("error"); },
       "floors.cpu.small.exact has no floor for required metric \"error\""},
      {[](json& c) { c["floors"]["cpu"]["small"]["exact"]["psnr"] = "high"; },
       "floors.cpu.small.exact.psnr must be a finite number"},
      {[](json& c) {
         c["floors"]["cpu"]["small"]["numerical"] = json{{"psnr", 1}};
       },
       "floors.cpu.small.numerical has no floor for required metric \"error\""},
      {[](json& c) { c["floors"]["NVIDIA H200"]["small"]["fp32_bound"]["ssim"] = 1; },
       "floors.NVIDIA H200.small: \"ssim\" is not a metric of the contract"},
      {[](json& c) { c["floors"]["cpu"]["small"]["ceiling"] = json::object(); },
       "floors.cpu.small: unknown field \"ceiling\""},
      {[](json& c) { c["metrics"]["psnr"]["flor"] = 3; }, "metrics.psnr: unknown field \"flor\""},
      {[](json& c) { c["critical_cases"]["cases.jsonl"] = "x"; }, "critical_cases.cases.jsonl must be an array"},
      {[](json& c) { c["margins"] = 1; }, "unknown field \"margins\""},
  };
  for (const Bad& bad : cases) {
    json contract = valid_contract();
    bad.edit(contract);
    const std::string message = error_of(contract);
    EXPECT_EQ(message.rfind("contract.json: ", 0), 0u) << message;
    EXPECT_NE(message.find(bad.expected), std::string::npos) << message;
  }
  try {
    parse_contract("{\"version\": 2,", "contract.json");
    ADD_FAILURE() << "truncated JSON accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("contract.json: not valid JSON"), std::string::npos);
  }
}

TEST(Contract, TheCommittedContractParsesAndCoversEveryComputedMetric) {
  const Contract contract = load_contract(DIT_QUALITY_SOURCE_DIR "/contract.json");
  const SetFloors* cpu = contract.floors_for("cpu", "cpu");
  ASSERT_NE(cpu, nullptr) << "the CI gate set has no floors on the CPU";
  for (const char* metric :
       {"latent_relative_l2", "image_psnr", "image_ssim", "max_abs_pixel_error", "all_finite", "determinism"}) {
    EXPECT_TRUE(contract.requires_metric(metric)) << metric;
    EXPECT_TRUE(cpu->exact.count(metric)) << metric;
  }
  EXPECT_TRUE(contract.strict_for(Classification::quantization));
}

TEST(Classification, ParsesTheFourNames) {
  EXPECT_EQ(parse_classification("exact"), Classification::exact);
  EXPECT_EQ(parse_classification("numerical"), Classification::numerical);
  EXPECT_EQ(parse_classification("approximate"), Classification::approximate);
  EXPECT_EQ(parse_classification("quantization"), Classification::quantization);
  EXPECT_THROW(parse_classification("fast"), Error);
}

}  // namespace
}  // namespace dit::quality
