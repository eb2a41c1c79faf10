// dit-quality's and dit-quality-render's exit codes: 2 naming the problem for malformed inputs or
// a refused baseline, 77 with the way to record a baseline when none is recorded; the renderer
// writing where --out says; a baseline whose golden render fails recording nothing; a gate
// refusing (2) a render from other weights than the baseline's, and the baseline recording the
// weights it was rendered from; where each
// program reads and writes in the driver's stage views (DIT_OUTPUT_DIR, DIT_JUDGE_DIR,
// DIT_BASELINE_DIR, DIT_CLASSIFICATION) and without them (--default-run-dir); DIT_RUN_DIR is
// read by neither.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/sha256.h"
#include "tests/support/process_runner.h"
#include "tests/quality/one_case_contract.h"

namespace {

namespace fs = std::filesystem;

using Result = dit::test::ProcessResult;
using dit::test::run_program;

Result run(const std::string& arguments) { return run_program(DIT_QUALITY_PROGRAM, arguments); }
Result render(const std::string& arguments) { return run_program(DIT_QUALITY_RENDER_PROGRAM, arguments); }

// `program` run with none of the driver's DIT_* variables but `assignments` (NAME=value ...).
std::string in_environment(const std::string& assignments, const std::string& program) {
  return "env -u DIT_RUN_DIR -u DIT_OUTPUT_DIR -u DIT_JUDGE_DIR -u DIT_BASELINE_DIR -u DIT_BEST_BUILD_DIR "
         "-u DIT_CLASSIFICATION -u DIT_LANE " +
         assignments + " " + program;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class Cli : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TempDir() + "/quality_cli_test_" + testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  std::string real(const std::string& name) const { return std::string(DIT_QUALITY_SOURCE_DIR) + "/" + name; }
  std::string dir_;
};

TEST_F(Cli, CheckAcceptsTheCommittedCorporaAndContract) {
  for (const char* corpus : {"cases.jsonl", "cases_cpu.jsonl"}) {
    const Result result = run("check --corpus " + real(corpus) + " --contract " + real("contract.json"));
    EXPECT_EQ(result.exit_code, 0) << result.output;
  }
}

TEST_F(Cli, AMalformedCorpusLineExitsTwoNamingTheLine) {
  std::ifstream in(real("cases_cpu.jsonl"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text += "{\"id\": \"broken\", \"model\": \"tiny_a\"}\n";
  const int bad_line = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  const std::string corpus = write("cases_cpu.jsonl", text);
  const Result result = run("check --corpus " + corpus + " --contract " + real("contract.json"));
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("cases_cpu.jsonl:" + std::to_string(bad_line) + ": missing field \"image_size\""),
            std::string::npos)
      << result.output;
}

TEST_F(Cli, AnUnknownModelOrSizeExitsTwoNamingTheLine) {
  const std::string corpus = write(
      "cases.jsonl",
      "# one bad case\n"
      R"({"id": "x", "model": "DiT-XL/2", "image_size": 384, "class_label": 1, "seed": 1, "sampler": "ddim", "steps": 50, "cfg_scale": 4.0, "critical": false})"
      "\n");
  const Result result = run("check --corpus " + corpus + " --contract " + real("contract.json"));
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("cases.jsonl:2: image size 384 is not supported"), std::string::npos) << result.output;
}

TEST_F(Cli, AMalformedContractExitsTwoNamingTheField) {
  std::ifstream in(real("contract.json"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string higher = "\"direction\": \"higher\"";
  text.replace(text.find(higher), higher.size(), "\"direction\": \"upward\"");
  const std::string contract = write("contract.json", text);
  const Result result = run("check --corpus " + real("cases_cpu.jsonl") + " --contract " + contract);
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find(".direction must be \"higher\" or \"lower\""), std::string::npos) << result.output;
}

TEST_F(Cli, CriticalCasesThatDisagreeWithTheCorpusExitTwo) {
  std::ifstream in(real("cases_cpu.jsonl"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string critical = "\"critical\": true";
  text.replace(text.find(critical), critical.size(), "\"critical\": false");
  const std::string corpus = write("cases_cpu.jsonl", text);
  const Result result = run("check --corpus " + corpus + " --contract " + real("contract.json"));
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("is not flagged \"critical\": true"), std::string::npos) << result.output;
}

TEST_F(Cli, AGateWithoutABaselineIsAnErrorNamingWhoRecordsIt) {
  const Result result =
      run("gate --corpus " + real("cases_cpu.jsonl") + " --contract " + real("contract.json") +
          " --set cpu --metric image_psnr --run-dir " + dir_ + "/run --baseline-dir " + dir_ + "/no-baseline");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("no baseline recorded at " + dir_ + "/no-baseline/quality/cpu"), std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("quality.cpu.baseline fixture"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("dit-ar baseline"), std::string::npos) << result.output;
  EXPECT_TRUE(fs::exists(dir_ + "/run/gates/quality.cpu.image_psnr.json"));
}

// What a set cannot judge is refused before anything is scored, each with its reason, exit 2.
TEST_F(Cli, AGateRefusesAClassOrADeviceItHasNoFloorsFor) {
  const std::string gate = "gate --corpus " + real("cases_cpu.jsonl") + " --set cpu --metric image_psnr --run-dir " +
                           dir_ + "/run --baseline-dir " + dir_ + "/b --contract ";
  struct Refusal {
    std::string classification, expected;
  };
  for (const Refusal& refusal : std::vector<Refusal>{
           {"numerical", "has no numerical floors"},
           {"approximate", "renders seeded random weights"},
           {"quantization", "has no fp32 golden to judge against"},
       }) {
    const Result result = run(gate + real("contract.json") + " --classification " + refusal.classification);
    EXPECT_EQ(result.exit_code, 2) << refusal.classification << ": " << result.output;
    EXPECT_NE(result.output.find(refusal.expected), std::string::npos) << result.output;
  }
  // A contract with no floors for this device names the command that calibrates them.
  std::ifstream in(real("contract.json"));
  nlohmann::json contract = nlohmann::json::parse(in);
  contract["floors"].erase("cpu");
  const Result result = run(gate + write("contract.json", contract.dump(2)));
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("has no floors for gate set cpu on cpu"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("dit-quality-render calibrate"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("--write-contract"), std::string::npos) << result.output;
}

// The setup fixture of a plain ctest run records a missing baseline and says so; under dit-ar
// (DIT_JUDGE_DIR set) a missing baseline is an error and nothing is recorded.
TEST_F(Cli, BaselineIfMissingRecordsOnceAndNeverUnderTheDriver) {
  const std::string baseline = "baseline --corpus " + real("cases_cpu.jsonl") + " --contract " + real("contract.json") +
                               " --set cpu --data-dir " + DIT_TEST_DATA_DIR + " --renderer " +
                               DIT_QUALITY_RENDER_PROGRAM + " --if-missing --baseline-dir " + dir_ + "/baseline";
  Result result = run_program(in_environment("DIT_JUDGE_DIR=" + dir_ + "/judge", DIT_QUALITY_PROGRAM), baseline);
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("under dit-ar the baseline is recorded by `dit-ar baseline`"), std::string::npos)
      << result.output;
  EXPECT_FALSE(fs::exists(dir_ + "/baseline"));
  // Under dit-ar it is a judge test, and its report says why it failed.
  const std::string judged = read_text(dir_ + "/judge/quality/gates/quality.cpu.baseline.json");
  EXPECT_NE(judged.find("\"passed\": false"), std::string::npos) << judged;
  EXPECT_NE(judged.find("never by a test"), std::string::npos) << judged;
  result = run(baseline);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("no baseline of set cpu at " + dir_ + "/baseline/quality/cpu: recording it now"),
            std::string::npos)
      << result.output;
  EXPECT_TRUE(fs::exists(dir_ + "/baseline/quality/cpu/MANIFEST.json"));
  const std::string manifest = read_text(dir_ + "/baseline/quality/cpu/MANIFEST.json");
  result = run(baseline);
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("the baseline of set cpu is recorded at"), std::string::npos) << result.output;
  EXPECT_EQ(read_text(dir_ + "/baseline/quality/cpu/MANIFEST.json"), manifest);  // not recorded again
  // One recorded under another contract is named, not used and not replaced.
  std::ifstream in(real("contract.json"));
  nlohmann::json contract = nlohmann::json::parse(in);
  contract["about"] = "another version";
  const std::string other = write("contract.json", contract.dump(2));
  result = run("baseline --corpus " + real("cases_cpu.jsonl") + " --contract " + other + " --set cpu --data-dir " +
               DIT_TEST_DATA_DIR + " --renderer " + DIT_QUALITY_RENDER_PROGRAM + " --if-missing --baseline-dir " +
               dir_ + "/baseline");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("recorded under another version of the contract"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("remove " + dir_ + "/baseline/quality/cpu to record it again"), std::string::npos)
      << result.output;
  EXPECT_EQ(read_text(dir_ + "/baseline/quality/cpu/MANIFEST.json"), manifest);
}

TEST_F(Cli, BadGateArgumentsExitTwo) {
  const std::string common = "gate --corpus " + real("cases_cpu.jsonl") + " --contract " + real("contract.json") +
                             " --set cpu --run-dir " + dir_ + "/run --baseline-dir " + dir_ + "/b";
  Result result = run(common + " --metric fid");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("\"fid\" is not a required metric"), std::string::npos) << result.output;
  result = run(common + " --critical-case cpu-b-ddim10-cfg1p5-c7");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  result = run(common + " --metric image_psnr --classification fast");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("unknown classification \"fast\""), std::string::npos) << result.output;
  result = run("gate --no-such-option");
  EXPECT_EQ(result.exit_code, 2) << result.output;
}

TEST_F(Cli, ABaselineIsNeverRecordedOverAnother) {
  fs::create_directories(dir_ + "/baseline/quality/cpu/golden");
  write("baseline/quality/cpu/MANIFEST.json", "{}");
  const Result result = run("baseline --corpus " + real("cases_cpu.jsonl") + " --contract " + real("contract.json") +
                            " --set cpu --baseline-dir " + dir_ + "/baseline");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("never regenerated"), std::string::npos) << result.output;
}

TEST_F(Cli, TheRendererRejectsBadInputWithExitTwo) {
  Result result = render("render --no-such-option");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  const std::string corpus = write(
      "cases.jsonl",
      R"({"id": "x", "model": "DiT-XL/3", "image_size": 256, "class_label": 1, "seed": 1, "sampler": "ddim", "steps": 50, "cfg_scale": 4.0, "critical": false})"
      "\n");
  result = render("render --corpus " + corpus + " --contract " + real("contract.json") + " --out " + dir_ + "/out");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("cases.jsonl:1: unknown model 'DiT-XL/3'"), std::string::npos) << result.output;
  EXPECT_FALSE(fs::exists(dir_ + "/out"));
}

TEST_F(Cli, TheRendererWritesARenderDirectoryWhereOutSays) {
  const Result result = render("render --corpus " + real("cases_cpu.jsonl") + " --contract " + real("contract.json") +
                               " --set cpu --data-dir " + DIT_TEST_DATA_DIR + " --out " + dir_ + "/render");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_TRUE(fs::exists(dir_ + "/render/render.json"));
  EXPECT_TRUE(fs::exists(dir_ + "/render/cpu-b-ddpm10-cfg4-c3.png"));
}

TEST_F(Cli, ABaselineNeedsARenderer) {
  const Result result = run("baseline --corpus " + real("cases_cpu.jsonl") + " --contract " + real("contract.json") +
                            " --set cpu --baseline-dir " + dir_ + "/baseline --renderer " + dir_ + "/no-renderer");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("no renderer at " + dir_ + "/no-renderer"), std::string::npos) << result.output;
}

TEST_F(Cli, AFailedGoldenRenderRecordsNothing) {
  const Result result = run("baseline --corpus " + real("cases_cpu.jsonl") + " --contract " + real("contract.json") +
                            " --set cpu --baseline-dir " + dir_ + "/baseline --renderer /bin/false");
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find("the golden render of set cpu failed"), std::string::npos) << result.output;
  EXPECT_FALSE(fs::exists(dir_ + "/baseline/quality/cpu"));
}

TEST_F(Cli, TheRendererWritesUnderTheOutputDirOrElseTheDefaultRunDir) {
  const std::string set = " --corpus " + real("cases_cpu.jsonl") + " --contract " + real("contract.json") +
                          " --set cpu --data-dir " + DIT_TEST_DATA_DIR + " --default-run-dir " + dir_ + "/default";
  // The candidate's test stage: DIT_OUTPUT_DIR; the other variables are not read.
  Result result = run_program(in_environment("DIT_OUTPUT_DIR=" + dir_ + "/outputs DIT_RUN_DIR=" + dir_ +
                                                 "/run DIT_JUDGE_DIR=" + dir_ + "/judge",
                                             DIT_QUALITY_RENDER_PROGRAM),
                              "render" + set);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_TRUE(fs::exists(dir_ + "/outputs/quality/cpu/render/render.json"));
  EXPECT_NE(result.output.find("into " + dir_ + "/outputs/quality/cpu/render"), std::string::npos) << result.output;
  for (const char* other : {"/run", "/judge", "/default"}) EXPECT_FALSE(fs::exists(dir_ + other)) << other;
  // Standalone: without DIT_OUTPUT_DIR (DIT_RUN_DIR is no longer read), the default run dir.
  result = run_program(in_environment("DIT_RUN_DIR=" + dir_ + "/run", DIT_QUALITY_RENDER_PROGRAM), "render" + set);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_TRUE(fs::exists(dir_ + "/default/cpu/render/render.json"));
  EXPECT_FALSE(fs::exists(dir_ + "/run"));
}

TEST_F(Cli, AGateWritesItsReportUnderTheJudgeDirOrElseTheDefaultRunDir) {
  const std::string gate = "gate --corpus " + real("cases_cpu.jsonl") + " --contract " + real("contract.json") +
                           " --set cpu --metric image_psnr --default-run-dir " + dir_ +
                           "/default --default-baseline-dir " + dir_ + "/default-baseline";
  // The judge stage: the report goes to $DIT_JUDGE_DIR/quality/gates/<test name>.json, nothing
  // to DIT_OUTPUT_DIR; without a baseline at $DIT_BASELINE_DIR the gate is an error.
  Result result = run_program(
      in_environment("DIT_OUTPUT_DIR=" + dir_ + "/outputs DIT_JUDGE_DIR=" + dir_ + "/judge DIT_BASELINE_DIR=" + dir_ +
                         "/baseline DIT_RUN_DIR=" + dir_ + "/run DIT_CLASSIFICATION=exact",
                     DIT_QUALITY_PROGRAM),
      gate);
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("no baseline recorded at " + dir_ + "/baseline/quality/cpu"), std::string::npos)
      << result.output;
  const std::string report = dir_ + "/judge/quality/gates/quality.cpu.image_psnr.json";
  ASSERT_TRUE(fs::exists(report));
  EXPECT_NE(read_text(report).find("\"exact\""), std::string::npos) << read_text(report);
  for (const char* other : {"/outputs", "/run", "/default"}) EXPECT_FALSE(fs::exists(dir_ + other)) << other;
  // Standalone: no variables, the defaults.
  result = run_program(in_environment("DIT_RUN_DIR=" + dir_ + "/run", DIT_QUALITY_PROGRAM), gate);
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("no baseline recorded at " + dir_ + "/default-baseline/quality/cpu"), std::string::npos)
      << result.output;
  EXPECT_TRUE(fs::exists(dir_ + "/default/gates/quality.cpu.image_psnr.json"));
  EXPECT_FALSE(fs::exists(dir_ + "/run"));
}

TEST_F(Cli, AGateJudgesTheRenderInTheOutputDir) {
  const std::string set = " --corpus " + real("cases_cpu.jsonl") + " --contract " + real("contract.json") +
                          " --set cpu --data-dir " + DIT_TEST_DATA_DIR;
  Result result =
      run("baseline" + set + " --baseline-dir " + dir_ + "/baseline --renderer " + DIT_QUALITY_RENDER_PROGRAM);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  result =
      run_program(in_environment("DIT_OUTPUT_DIR=" + dir_ + "/outputs", DIT_QUALITY_RENDER_PROGRAM), "render" + set);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const std::string judge_stage =
      "DIT_BASELINE_DIR=" + dir_ + "/baseline DIT_JUDGE_DIR=" + dir_ + "/judge DIT_CLASSIFICATION=exact DIT_LANE=cli ";
  const std::string gate =
      "gate" + set + " --critical-case cpu-b-ddpm10-cfg4-c3 --default-run-dir " + dir_ + "/default";
  const std::string report = dir_ + "/judge/quality/gates/quality.cpu.critical.cpu-b-ddpm10-cfg4-c3.json";
  result = run_program(in_environment(judge_stage + "DIT_OUTPUT_DIR=" + dir_ + "/outputs", DIT_QUALITY_PROGRAM), gate);
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(read_text(report).find("\"render_dir\": \"" + dir_ + "/outputs/quality/cpu/render\""), std::string::npos)
      << read_text(report);
  EXPECT_NE(read_text(report).find("\"exact\""), std::string::npos) << read_text(report);
  EXPECT_NE(read_text(report).find("\"device\": \"cpu\""), std::string::npos) << read_text(report);
  EXPECT_TRUE(fs::exists(dir_ + "/judge/quality/cpu/scores.json"));
  EXPECT_FALSE(fs::exists(dir_ + "/outputs/quality/gates"));
  EXPECT_FALSE(fs::exists(dir_ + "/outputs/quality/cpu/scores.json"));
  // The render is read from DIT_OUTPUT_DIR alone: an empty one fails the gate (no skip).
  result =
      run_program(in_environment(judge_stage + "DIT_OUTPUT_DIR=" + dir_ + "/empty DIT_RUN_DIR=" + dir_ + "/outputs",
                                 DIT_QUALITY_PROGRAM),
                  gate);
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(read_text(report).find("\"passed\": false"), std::string::npos) << read_text(report);
  EXPECT_FALSE(fs::exists(dir_ + "/empty"));
  // The classification comes from DIT_CLASSIFICATION.
  result = run_program(
      in_environment(judge_stage + "DIT_OUTPUT_DIR=" + dir_ + "/outputs DIT_CLASSIFICATION=fast", DIT_QUALITY_PROGRAM),
      gate);
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("unknown classification \"fast\""), std::string::npos) << result.output;
}

// The checkpoint copies hold tiny_b's own tests/data weights, so every render below has the same
// bytes: a gate refuses on the weights alone, and accepts the same checkpoint at another path.
TEST_F(Cli, AGateRefusesARenderFromOtherWeightsThanTheBaselines) {
  write(
      "tiny.jsonl",
      R"({"id": "tiny-b", "model": "tiny_b", "image_size": 64, "class_label": 3, "seed": 11, "sampler": "ddim", "steps": 3, "cfg_scale": 4.0, "critical": true, "vae": "tiny"})"
      "\n");
  write("contract.json", dit::test::one_case_contract("cli_test", "tiny", "none.json", "test").dump(2));
  std::string copies[2];
  for (int i = 0; i < 2; ++i) {
    fs::create_directories(dir_ + "/copy" + std::to_string(i));
    copies[i] = fs::path(dir_ + "/copy" + std::to_string(i) + "/ckpt.safetensors").lexically_normal().string();
    fs::copy_file(std::string(DIT_TEST_DATA_DIR) + "/dit_tiny_b.weights.safetensors", copies[i]);
  }
  const std::string sha256 = dit::sha256_file(copies[0]);
  const std::string set = " --corpus " + dir_ + "/tiny.jsonl --contract " + dir_ +
                          "/contract.json --set tiny --data-dir " + DIT_TEST_DATA_DIR;
  const std::string from_copy[2] = {" --weights " + copies[0] + " --weights-sha256 " + sha256,
                                    " --weights " + copies[1] + " --weights-sha256 " + sha256};

  Result result =
      run("baseline" + set + " --renderer " + DIT_QUALITY_RENDER_PROGRAM + " --baseline-dir " + dir_ + "/seeded");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  result = run("baseline" + set + from_copy[0] + " --renderer " + DIT_QUALITY_RENDER_PROGRAM + " --baseline-dir " +
               dir_ + "/checkpoint");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const nlohmann::json seeded_manifest = nlohmann::json::parse(read_text(dir_ + "/seeded/quality/tiny/MANIFEST.json"));
  EXPECT_EQ(seeded_manifest.at("weights"), nlohmann::json({{"tiny-b", {{"seed", 0}}}})) << seeded_manifest.dump(2);
  const nlohmann::json manifest = nlohmann::json::parse(read_text(dir_ + "/checkpoint/quality/tiny/MANIFEST.json"));
  EXPECT_EQ(manifest.at("weights"), nlohmann::json({{"tiny-b", {{"path", copies[0]}, {"sha256", sha256}}}}))
      << manifest.dump(2);
  const nlohmann::json golden = nlohmann::json::parse(read_text(dir_ + "/checkpoint/quality/tiny/golden/render.json"));
  EXPECT_EQ(golden.at("cases").at("tiny-b").at("weights"), manifest.at("weights").at("tiny-b"));

  result = render("render" + set + " --run-dir " + dir_ + "/run-seeded");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  result = render("render" + set + from_copy[1] + " --run-dir " + dir_ + "/run-checkpoint");
  ASSERT_EQ(result.exit_code, 0) << result.output;

  struct Row {
    std::string baseline, render;
    int exit_code;
    std::string mentions;
  };
  const std::vector<Row> rows = {
      {"seeded", "seeded", 0, "PASS"},
      {"checkpoint", "checkpoint", 0, "PASS"},  // the same bytes at another path
      {"seeded", "checkpoint", 2,
       "case tiny-b was rendered from checkpoint " + copies[1] + " (sha256 " + sha256 +
           "), the baseline from no checkpoint (the embedded default weights, weights_seed 0)"},
      {"checkpoint", "seeded", 2,
       "case tiny-b was rendered from no checkpoint (the embedded default weights, weights_seed 0), the baseline from "
       "checkpoint " +
           copies[0]},
  };
  for (const Row& row : rows) {
    const std::string name = row.baseline + " baseline, " + row.render + " render";
    result = run_program(in_environment("", DIT_QUALITY_PROGRAM),
                         "gate" + set + " --metric latent_relative_l2 --run-dir " + dir_ + "/run-" + row.render +
                             " --baseline-dir " + dir_ + "/" + row.baseline);
    EXPECT_EQ(result.exit_code, row.exit_code) << name << "\n" << result.output;
    EXPECT_NE(result.output.find(row.mentions), std::string::npos) << name << "\n" << result.output;
    const nlohmann::json report =
        nlohmann::json::parse(read_text(dir_ + "/run-" + row.render + "/gates/quality.tiny.latent_relative_l2.json"));
    EXPECT_EQ(report.at("passed"), row.exit_code == 0) << name << "\n" << report.dump(2);
  }
}

}  // namespace
