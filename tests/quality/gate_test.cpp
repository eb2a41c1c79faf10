// The gates can fail: synthetic golden and candidate render directories, scored and judged
// exactly as the CTest gates do (score_render, then gate_metric / gate_critical_case).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "quality/contract.h"
#include "quality/corpus.h"
#include "quality/gate.h"
#include "quality/metrics.h"
#include "quality/scoring.h"
#include "quality/store.h"

namespace dit::quality {
namespace {

namespace fs = std::filesystem;
using Outputs = std::map<std::string, RenderedCase>;

constexpr const char* kCorpus = R"(# three cases; c is critical
{"id": "a", "model": "tiny_a", "image_size": 32, "class_label": 1, "seed": 1, "sampler": "ddpm", "steps": 4, "cfg_scale": 4.0, "critical": false}
{"id": "b", "model": "tiny_a", "image_size": 32, "class_label": 2, "seed": 2, "sampler": "ddim", "steps": 4, "cfg_scale": 1.5, "critical": false}
{"id": "c", "model": "tiny_b", "image_size": 32, "class_label": 3, "seed": 3, "sampler": "ddpm", "steps": 4, "cfg_scale": 4.0, "critical": true}
)";

// The committed contract's shape, with floors written here so the tests do not move with it
// (set "test" on the CPU; the gates judge under with_floors() of one class's floors).
nlohmann::json test_contract() {
  auto rule = [](const char* direction) {
    return nlohmann::json{{"direction", direction}, {"allowed_regression", {{"absolute", 0.0}, {"relative", 0.0}}}};
  };
  const nlohmann::json exact = {{kLatentRelativeL2, 1e-5}, {kImagePsnr, 60}, {kImageSsim, 0.999},
                                {kMaxAbsPixelError, 2},    {kAllFinite, 1},  {kDeterminism, 1}};
  return {
      {"version", 2},
      {"strict_zero_regression", false},
      {"strict_classifications", {"quantization"}},
      {"required_metrics", {kLatentRelativeL2, kImagePsnr, kImageSsim, kMaxAbsPixelError, kAllFinite, kDeterminism}},
      {"metrics",
       {{kLatentRelativeL2, rule("lower")},
        {kImagePsnr, rule("higher")},
        {kImageSsim, rule("higher")},
        {kMaxAbsPixelError, rule("lower")},
        {kAllFinite, rule("higher")},
        {kDeterminism, rule("higher")}}},
      {"floors", {{"cpu", {{"test", {{"calibration", "none"}, {"margin", "written by the test"}, {"exact", exact}}}}}}},
      {"critical_cases", {{"cases_test.jsonl", {"c"}}}}};
}

Contract judged_contract(const nlohmann::json& text, const std::string& label) {
  const Contract parsed = parse_contract(text.dump(), label);
  return parsed.with_floors(parsed.floors_for("cpu", "test")->exact);
}

const std::vector<Classification> kAllClassifications = {Classification::exact, Classification::numerical,
                                                         Classification::approximate, Classification::quantization};

class Gate : public testing::Test {
 protected:
  void SetUp() override {
    root_ = testing::TempDir() + "/quality_gate_test_" + testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(root_);
    corpus_ = parse_corpus(kCorpus, "cases_test.jsonl");
    contract_ = judged_contract(test_contract(), "contract_test.json");
    std::mt19937 generator(12345);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_int_distribution<int> level(1, 254);
    for (const Case& c : corpus_.cases) {
      RenderedCase out;
      out.latent = Tensor({1, 4, 4, 4});
      for (float& v : out.latent.data) v = normal(generator);
      out.image.width = out.image.height = 32;
      out.image.rgb.resize(32 * 32 * 3);
      for (uint8_t& v : out.image.rgb) v = static_cast<uint8_t>(level(generator));
      golden_[c.id] = out;
    }
    write_render(golden_dir(), golden_);
    baseline_ = score_render(corpus_, golden_dir(), golden_dir());
  }

  std::string golden_dir() const { return root_ + "/baseline/golden"; }

  void write_render(const std::string& dir, const Outputs& outputs, const std::set<std::string>& unstable = {}) {
    fs::create_directories(dir);
    RenderManifest manifest{"test", corpus_.name, corpus_.sha256, "cpu", "fp32", {}};
    for (const auto& [id, out] : outputs) {
      manifest.cases[id] = write_rendered_case(dir, id, out);
      manifest.cases[id].deterministic = !unstable.count(id);
    }
    save_render_manifest(dir, manifest);
  }

  ScoreSet score_candidate(const Outputs& outputs, const std::set<std::string>& unstable = {}) {
    const std::string dir = root_ + "/run/render";
    fs::remove_all(dir);
    write_render(dir, outputs, unstable);
    return score_render(corpus_, dir, golden_dir());
  }

  GateReport metric_gate(const std::string& metric, const ScoreSet& candidate,
                         Classification classification = Classification::exact) const {
    return gate_metric(GateInputs{contract_, corpus_.ids(), baseline_, candidate, classification}, metric,
                       "quality.test." + metric);
  }

  // The required metrics whose gate fails for `candidate`.
  std::set<std::string> failing_metrics(const ScoreSet& candidate,
                                        Classification classification = Classification::exact) const {
    std::set<std::string> failing;
    for (const std::string& metric : contract_.required_metrics) {
      if (!metric_gate(metric, candidate, classification).passed) failing.insert(metric);
    }
    return failing;
  }

  std::string root_;
  Corpus corpus_;
  Contract contract_;
  Outputs golden_;
  ScoreSet baseline_;
};

TEST_F(Gate, TheBaselineScoresItselfPerfectly) {
  for (const Case& c : corpus_.cases) {
    EXPECT_EQ(baseline_.at(c.id, kLatentRelativeL2), 0.0);
    EXPECT_EQ(baseline_.at(c.id, kImagePsnr), kPsnrOfIdenticalImages);
    EXPECT_EQ(baseline_.at(c.id, kImageSsim), 1.0);
    EXPECT_EQ(baseline_.at(c.id, kMaxAbsPixelError), 0.0);
    EXPECT_EQ(baseline_.at(c.id, kAllFinite), 1.0);
    EXPECT_EQ(baseline_.at(c.id, kDeterminism), 1.0);
  }
  EXPECT_TRUE(baseline_.problems.empty());
}

TEST_F(Gate, AnIdenticalCandidatePassesEveryGateUnderEveryClassification) {
  const ScoreSet candidate = score_candidate(golden_);
  for (Classification classification : kAllClassifications) {
    EXPECT_EQ(failing_metrics(candidate, classification), std::set<std::string>{})
        << classification_name(classification);
    const GateReport critical = gate_critical_case(
        GateInputs{contract_, corpus_.ids(), baseline_, candidate, classification}, "c", "quality.test.critical.c");
    EXPECT_TRUE(critical.passed) << critical.to_json().dump(2);
  }
  const nlohmann::json report = metric_gate(kImagePsnr, candidate).to_json();
  EXPECT_EQ(report["gate"], "quality.test.image_psnr");
  EXPECT_EQ(report["passed"], true);
  EXPECT_TRUE(report["reasons"].empty());
  EXPECT_EQ(report["details"]["cases"].size(), 3u);
  EXPECT_EQ(report["details"]["aggregate"]["candidate"]["mean"], kPsnrOfIdenticalImages);
}

TEST_F(Gate, PerturbedLatentFailsTheLatentGateOnly) {
  Outputs candidate = golden_;
  for (float& v : candidate.at("b").latent.data) v *= 1.001f;  // relative error 1e-3
  const ScoreSet scores = score_candidate(candidate);
  EXPECT_NEAR(scores.at("b", kLatentRelativeL2), 1e-3, 1e-6);
  EXPECT_EQ(failing_metrics(scores), std::set<std::string>{kLatentRelativeL2});
  const GateReport report = metric_gate(kLatentRelativeL2, scores);
  ASSERT_EQ(report.reasons.size(), 1u);
  EXPECT_NE(report.reasons[0].find("b: latent_relative_l2"), std::string::npos) << report.reasons[0];
}

TEST_F(Gate, BrightnessShiftFailsThePsnrGateOnly) {
  Outputs candidate = golden_;
  for (uint8_t& v : candidate.at("a").image.rgb) v += 1;  // PSNR 48 dB, SSIM ~ 1 - 3e-5, max error 1
  EXPECT_EQ(failing_metrics(score_candidate(candidate)), std::set<std::string>{kImagePsnr});
}

TEST_F(Gate, OneChannelOffByThreeFailsTheMaxPixelErrorGateOnly) {
  Outputs candidate = golden_;
  candidate.at("a").image.rgb[100] += 3;  // PSNR ~ 105 dB
  EXPECT_EQ(failing_metrics(score_candidate(candidate)), std::set<std::string>{kMaxAbsPixelError});
}

TEST_F(Gate, StructuralNoiseFailsTheSsimGate) {
  Outputs candidate = golden_;
  std::mt19937 generator(7);
  std::uniform_int_distribution<int> noise(-30, 30);
  for (uint8_t& v : candidate.at("c").image.rgb) v = static_cast<uint8_t>(std::clamp(v + noise(generator), 0, 255));
  const std::set<std::string> failing = failing_metrics(score_candidate(candidate));
  EXPECT_TRUE(failing.count(kImageSsim));
  EXPECT_FALSE(failing.count(kLatentRelativeL2));
}

TEST_F(Gate, NonFiniteLatentFailsTheFinitenessGate) {
  Outputs candidate = golden_;
  candidate.at("a").latent.data[5] = NAN;
  const ScoreSet scores = score_candidate(candidate);
  EXPECT_EQ(scores.at("a", kAllFinite), 0.0);
  EXPECT_EQ(failing_metrics(scores), (std::set<std::string>{kAllFinite, kLatentRelativeL2}));
}

TEST_F(Gate, NondeterministicRenderFailsTheDeterminismGateOnly) {
  EXPECT_EQ(failing_metrics(score_candidate(golden_, {"b"})), std::set<std::string>{kDeterminism});
}

TEST_F(Gate, DropInsideTheMarginPassesExactButFailsQuantization) {
  Outputs candidate = golden_;
  for (float& v : candidate.at("a").latent.data) v *= 1.000005f;  // 5e-6, inside the 1e-5 floor
  const ScoreSet scores = score_candidate(candidate);
  for (Classification classification :
       {Classification::exact, Classification::numerical, Classification::approximate}) {
    EXPECT_TRUE(metric_gate(kLatentRelativeL2, scores, classification).passed) << classification_name(classification);
  }
  const GateReport quantized = metric_gate(kLatentRelativeL2, scores, Classification::quantization);
  EXPECT_FALSE(quantized.passed);
  EXPECT_NE(quantized.reasons.at(0).find("strict zero regression"), std::string::npos) << quantized.reasons.at(0);
  // strict_zero_regression in the contract makes every classification strict.
  nlohmann::json strict = test_contract();
  strict["strict_zero_regression"] = true;
  const Contract strict_contract = judged_contract(strict, "strict.json");
  EXPECT_FALSE(gate_metric(GateInputs{strict_contract, corpus_.ids(), baseline_, scores, Classification::exact},
                           kLatentRelativeL2, "g")
                   .passed);
}

TEST_F(Gate, AMissingMetricFails) {
  nlohmann::json with_fid = test_contract();
  with_fid["required_metrics"].push_back("fid");
  with_fid["metrics"]["fid"] = {{"direction", "lower"}, {"allowed_regression", {{"absolute", 0.5}, {"relative", 0.0}}}};
  with_fid["floors"]["cpu"]["test"]["exact"]["fid"] = 0.0;
  const Contract contract = judged_contract(with_fid, "fid.json");
  const ScoreSet candidate = score_candidate(golden_);
  const GateReport report =
      gate_metric(GateInputs{contract, corpus_.ids(), baseline_, candidate, Classification::exact}, "fid", "g");
  EXPECT_FALSE(report.passed);
  EXPECT_NE(report.reasons.at(0).find("no fid score"), std::string::npos) << report.reasons.at(0);
  const GateReport critical =
      gate_critical_case(GateInputs{contract, corpus_.ids(), baseline_, candidate, Classification::exact}, "c", "g");
  EXPECT_FALSE(critical.passed);
}

TEST_F(Gate, AMissingCaseFailsEveryMetricGate) {
  Outputs candidate = golden_;
  candidate.erase("b");
  const ScoreSet scores = score_candidate(candidate);
  EXPECT_EQ(failing_metrics(scores).size(), contract_.required_metrics.size());
  const GateReport report = metric_gate(kImagePsnr, scores);
  EXPECT_NE(report.reasons.at(0).find("b: the candidate has no image_psnr score (not rendered"), std::string::npos)
      << report.reasons.at(0);
}

TEST_F(Gate, ANewCriticalFailureFailsItsGate) {
  Outputs candidate = golden_;
  for (float& v : candidate.at("c").latent.data) v += 0.01f;
  const ScoreSet scores = score_candidate(candidate);
  const GateInputs inputs{contract_, corpus_.ids(), baseline_, scores, Classification::exact};
  const GateReport report = gate_critical_case(inputs, "c", "quality.test.critical.c");
  EXPECT_FALSE(report.passed);
  EXPECT_EQ(report.reasons.at(0), "critical case c passed at baseline and fails now");
  EXPECT_EQ(report.details["passed_at_baseline"], true);
  // A failure elsewhere does not fail this case's gate, and an unknown case fails.
  Outputs other = golden_;
  for (float& v : other.at("a").latent.data) v += 0.01f;
  const ScoreSet other_scores = score_candidate(other);
  EXPECT_TRUE(
      gate_critical_case(GateInputs{contract_, corpus_.ids(), baseline_, other_scores, Classification::exact}, "c", "g")
          .passed);
  EXPECT_FALSE(gate_critical_case(inputs, "zz", "g").passed);
}

TEST_F(Gate, FilesChangedAfterTheRenderAreNotScored) {
  const std::string dir = root_ + "/run/render";
  write_render(dir, golden_);
  std::ofstream(dir + "/" + image_file_name("a"), std::ios::app) << "x";
  const ScoreSet scores = score_render(corpus_, dir, golden_dir());
  EXPECT_FALSE(scores.cases.count("a"));
  EXPECT_NE(scores.problems.at("a").at(0).find("differ from the hashes"), std::string::npos);
}

TEST_F(Gate, ARenderMadeOfLinksToTheGoldensIsNotScored) {
  // Each file a link to the golden one: the bytes would match, so only the links give it away.
  const std::string dir = root_ + "/run/render";
  fs::create_directories(dir);
  for (const auto& entry : fs::directory_iterator(golden_dir()))
    fs::create_symlink(entry.path(), fs::path(dir) / entry.path().filename());
  ScoreSet scores = score_render(corpus_, dir, golden_dir());
  for (const Case& c : corpus_.cases) {
    EXPECT_FALSE(scores.cases.count(c.id)) << c.id;
    EXPECT_NE(scores.problems.at(c.id).at(0).find("must be plain files"), std::string::npos) << c.id;
  }
  // A linked folder is refused too.
  const std::string linked = root_ + "/run/linked";
  fs::create_directory_symlink(golden_dir(), linked);
  scores = score_render(corpus_, linked, golden_dir());
  EXPECT_TRUE(scores.cases.empty());
}

TEST_F(Gate, ARecordedBaselineIsTamperEvidentAndNeverOverwritten) {
  const BaselinePaths here{root_ + "/baseline"};
  save_scores(here.scores(), baseline_);
  write_baseline_manifest(here, "test", corpus_, contract_, load_render_manifest(golden_dir()));
  EXPECT_TRUE(baseline_recorded(here));
  EXPECT_FALSE(baseline_recorded(baseline_paths(root_, "another-set")));
  EXPECT_EQ(verify_baseline(here, corpus_, contract_), std::vector<std::string>{});
  EXPECT_THROW(write_baseline_manifest(here, "test", corpus_, contract_, load_render_manifest(golden_dir())), Error);

  std::ofstream(golden_dir() + "/" + latent_file_name("b"), std::ios::app) << "x";
  std::ofstream(golden_dir() + "/extra.png") << "x";
  const std::vector<std::string> problems = verify_baseline(here, corpus_, contract_);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_NE(problems[0].find("golden/b.latent.safetensors changed"), std::string::npos) << problems[0];
  EXPECT_NE(problems[1].find("golden/extra.png was added"), std::string::npos) << problems[1];

  nlohmann::json other = test_contract();
  other["floors"]["cpu"]["test"]["exact"][kImagePsnr] = 50;
  const Contract other_contract = judged_contract(other, "other.json");
  const std::vector<std::string> contract_problems = verify_baseline(here, corpus_, other_contract);
  EXPECT_NE(contract_problems.at(0).find("another version of the contract"), std::string::npos);
}

}  // namespace
}  // namespace dit::quality

namespace dit::quality {
namespace {

TEST(OutputHash, CoversEveryLatentAndPixelByteAndIsRecorded) {
  RenderedCase out;
  out.latent = Tensor({1, 4, 2, 2}, 0.5f);
  out.image.width = out.image.height = 2;
  out.image.rgb.assign(12, 7);
  const std::string hash = output_hash(out.latent, out.image);
  EXPECT_EQ(hash, output_hash(out.latent, out.image));
  RenderedCase pixel = out;
  pixel.image.rgb[11] = 8;
  EXPECT_NE(output_hash(pixel.latent, pixel.image), hash);
  RenderedCase latent = out;
  latent.latent.data[15] = std::nextafter(0.5f, 1.0f);
  EXPECT_NE(output_hash(latent.latent, latent.image), hash);

  const std::string dir = testing::TempDir() + "/quality_output_hash_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  RenderManifest manifest{"test", "cases.jsonl", "0", "cpu", "fp32", {}};
  manifest.cases["x"] = write_rendered_case(dir, "x", out);
  save_render_manifest(dir, manifest);
  EXPECT_EQ(load_render_manifest(dir).cases.at("x").output_sha256, hash);
}

}  // namespace
}  // namespace dit::quality
