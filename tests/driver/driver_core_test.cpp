// Unit tests of dit-ar's core: statistics, parsers, config validation, the decision rules,
// the performance gate's rules and process-group timeouts (the durable files: tests/core/).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "driver/config.h"
#include "driver/ctest_results.h"
#include "driver/decision.h"
#include "driver/exit_codes.h"
#include "core/files.h"
#include "driver/git_repository.h"
#include "driver/lock_file.h"
#include "driver/process.h"
#include "driver/recording.h"
#include "driver/slurm.h"
#include "driver/state_directory.h"
#include "driver/statistics.h"
#include "driver/work_git.h"
#include "core/error.h"

namespace fs = std::filesystem;
using namespace dit::ar;

namespace {

fs::path scratch_folder() { return fs::temp_directory_path() / ("dit-ar-core-" + std::to_string(::getpid())); }

fs::path scratch(const std::string& name) {
  fs::create_directories(scratch_folder());
  return scratch_folder() / name;
}

// Removes the scratch folder after the last test.
class ScratchCleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(scratch_folder(), ignored);
  }
};
[[maybe_unused]] const auto* const scratch_cleanup = ::testing::AddGlobalTestEnvironment(new ScratchCleanup);

nlohmann::json minimal_config() {
  return nlohmann::json::parse(R"({
    "project": "p", "default_lane": "l", "mutable_paths": ["src/"], "fixed_paths": ["tools/"],
    "contract": "quality/contract.json",
    "judge": {"targets": ["judge"], "files": ["tools/judge"]},
    "lanes": {"l": {"configure_preset": "c", "test_presets": ["c"],
                    "objective": {"benchmark": "bench/b", "name": "BM_X"}}}})");
}

std::string config_error(const nlohmann::json& document) {
  try {
    parse_config(document, "cfg.json", "/repo");
  } catch (const dit::Error& error) {
    return error.what();
  }
  return "";
}

TestResult result(const std::string& name, std::vector<std::string> labels, TestOutcome outcome) {
  TestResult test;
  test.test.name = name;
  test.test.command = {"/build/" + name};
  test.test.labels = std::move(labels);
  test.outcome = outcome;
  return test;
}

RunFacts passing_run() {
  RunFacts facts;
  facts.tests = {result("unit_a", {"unit"}, TestOutcome::passed),
                 result("quality_psnr", {"quality", "judge"}, TestOutcome::passed),
                 result("critical_3", {"quality", "critical", "judge"}, TestOutcome::passed),
                 result("perf_gate", {"perf", "judge"}, TestOutcome::passed)};
  facts.gate_reports = {
      {{"gate", "psnr"}, {"passed", true}, {"reasons", nlohmann::json::array()}, {"test", "quality_psnr"}},
      {{"gate", "critical"}, {"passed", true}, {"reasons", nlohmann::json::array()}, {"test", "critical_3"}},
      {{"gate", "performance"}, {"passed", true}, {"reasons", nlohmann::json::array()}, {"test", "perf_gate"}}};
  facts.build_dir = "/build";
  facts.source_dir = "/src";
  return facts;
}

}  // namespace

// The job dit-ar work --slurm submits for a candidate: a GPU lane's asks for one GPU (--gres),
// a CPU lane's for none; the lane's time limit, the job's log and folder, sbatch's waiting and
// parsable id, the options passed through before the command, and the worker's command quoted
// whole for --wrap (the CI cluster has no GPU: this is where the GPU request is checked).
// A queued patch keeps the message git format-patch wrote (so its trailers reach the audit);
// a plain diff has none; a header the parser cannot read faithfully is refused.
TEST(FormatPatchMessage, ReadsWhatGitAmWouldCommit) {
  const std::string diff = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n";
  const std::string head =
      "From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001\n"
      "From: A Person <a@example.org>\nDate: Mon, 7 Dec 2026 01:35:34 +0000\n";
  struct Case {
    const char* name;
    std::string patch;
    std::optional<std::string> message;
  };
  const std::vector<Case> cases = {
      {"folded subject, body, trailer",
       head +
           "Subject: [PATCH] Attention at 1024 tokens: fused, fp16 and\n bf16\n\nWhy it is faster.\n\n"
           "A5500-effect: unmeasured\n---\n x | 2 +-\n\n" +
           diff,
       "Attention at 1024 tokens: fused, fp16 and bf16\n\nWhy it is faster.\n\nA5500-effect: unmeasured\n"},
      {"numbered tags, no body", head + "Subject: [PATCH v2 2/3] one line\n\n---\n" + diff, "one line\n"},
      {"CRLF line ends", "From 0123 Mon Sep 17 00:00:00 2001\r\nSubject: [PATCH] crlf\r\n\r\nbody\r\n---\r\n" + diff,
       "crlf\n\nbody\n"},
      {"no --- line: the body ends at the diff", head + "Subject: s\n\nbody\n\n" + diff, "s\n\nbody\n"},
      {"a plain diff", diff, std::nullopt},
      {"a first line From but no header", "From here on\n\n" + diff, std::nullopt},
      {"no subject", head + "\nbody\n---\n" + diff, std::nullopt},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(format_patch_message(c.patch), c.message);
  }
  for (const std::string& header : {std::string("Subject: =?UTF-8?q?f=C3=BCr?=\n"),
                                    std::string("Subject: s\nContent-Transfer-Encoding: base64\n")}) {
    SCOPED_TRACE(header);
    try {
      format_patch_message(head + header + "\nYm9keQ==\n---\n" + diff);
      ADD_FAILURE() << "an encoded header was read";
    } catch (const dit::Error& error) {
      EXPECT_NE(std::string(error.what()).find("does not decode"), std::string::npos) << error.what();
    }
  }
}

TEST(Slurm, AJobAsksForOneGpuOnlyOnAGpuLane) {
  const std::vector<std::string> command{"/opt/dit-ar", "work-item", "--description", "it's a \"test\" $HOME"};
  for (const bool gpu : {true, false}) {
    SCOPED_TRACE(gpu ? "GPU lane" : "CPU lane");
    const SlurmJobRequest job{"dit-ar-0007", "/state/runs/0007/worker.log", "/state", 45, gpu, {"--partition=a5500"}};
    const std::vector<std::string> argv = sbatch_command("/usr/bin/sbatch", job, command);
    ASSERT_FALSE(argv.empty());
    EXPECT_EQ(argv.front(), "/usr/bin/sbatch");
    const auto has = [&](const std::string& word) { return std::find(argv.begin(), argv.end(), word) != argv.end(); };
    EXPECT_EQ(has("--gres=gpu:1"), gpu);
    for (const char* word : {"--wait", "--parsable", "--job-name=dit-ar-0007", "--output=/state/runs/0007/worker.log",
                             "--open-mode=append", "--chdir=/state", "--time=45", "--partition=a5500"})
      EXPECT_TRUE(has(word)) << word;
    const auto options = std::find(argv.begin(), argv.end(), "--partition=a5500");
    ASSERT_EQ(options + 2, argv.end());  // the options, then the command, last
    EXPECT_EQ(argv.back().rfind("--wrap=exec ", 0), 0u) << argv.back();
    // Run by a shell, the wrapped command gives back the words exactly.
    const std::string script = argv.back().substr(std::string("--wrap=exec ").size());
    const std::optional<std::string> echoed = process_output(
        {"/bin/sh", "-c", "for word in " + script + "; do printf '%s\\n' \"$word\"; done"}, std::chrono::seconds(10));
    std::string expected;
    for (const std::string& word : command) expected += word + "\n";
    ASSERT_TRUE(echoed.has_value());
    EXPECT_EQ(*echoed, expected);
  }
}

TEST(Statistics, MedianAndPercentileInterpolate) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(median({4, 1, 2, 3}), 2.5);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4, 5}, 0.95), 4.8);
  EXPECT_THROW(median({}), dit::Error);
}

TEST(Statistics, MannWhitneyExactForSeparatedSamples) {
  // Complete separation of 9 and 9 values: p = 2 / C(18, 9) = 2 / 48620.
  std::vector<double> fast{1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<double> slow{11, 12, 13, 14, 15, 16, 17, 18, 19};
  MannWhitneyResult test = mann_whitney_u(fast, slow);
  EXPECT_TRUE(test.exact);
  EXPECT_DOUBLE_EQ(test.u, 0.0);
  EXPECT_NEAR(test.p_value, 2.0 / 48620.0, 1e-12);
}

TEST(Statistics, MannWhitneyExactSmallCase) {
  // Sizes 3 and 3, U = 1: P(U <= 1) = 2/20, two-sided 0.2.
  MannWhitneyResult test = mann_whitney_u({1, 2, 4}, {3, 5, 6});
  EXPECT_DOUBLE_EQ(test.u, 1.0);
  EXPECT_NEAR(test.p_value, 0.2, 1e-12);
}

TEST(Statistics, MannWhitneyTiesAndIdenticalSamples) {
  std::vector<double> eight(9, 8.0);
  std::vector<double> ten(9, 10.0);
  MannWhitneyResult separated = mann_whitney_u(eight, ten);
  EXPECT_FALSE(separated.exact);
  EXPECT_NEAR(separated.p_value, 4.657e-05, 1e-08);
  EXPECT_DOUBLE_EQ(mann_whitney_u(eight, eight).p_value, 1.0);
  // Interleaved samples are not significant.
  EXPECT_GT(mann_whitney_u({1, 3, 5, 7, 9}, {2, 4, 6, 8, 10}).p_value, 0.5);
}

TEST(Config, AcceptsAMinimalFileWithDefaults) {
  Config config = parse_config(minimal_config(), "cfg.json", "/repo");
  EXPECT_EQ(config.state_dir, fs::path("/repo/.autoresearch"));
  const Lane& lane = config.lane("l");
  EXPECT_EQ(lane.build_preset, "c");
  EXPECT_EQ(lane.build_dir, "build/c");
  EXPECT_EQ(lane.repetitions, 9);
  EXPECT_EQ(lane.objective.direction, Direction::lower);
  EXPECT_THROW(config.lane("other"), dit::Error);
}

// Every stage of one experiment at its limit, each counted: configure 60, build 600, test 1200
// and two test presets: 3 configures (judge, best, candidate), 4 builds (judge, best, the
// candidate's gate inputs and the rest), 2 listings a preset, the tests: 4020 s. A fifth build or
// one listing fewer would change the sum.
TEST(Config, AnExperimentsLimitCountsEveryStage) {
  nlohmann::json document = minimal_config();
  document["timeouts_seconds"] = {{"configure", 60}, {"build", 600}, {"test", 1200}};
  document["lanes"]["l"]["test_presets"] = {"c", "c-perf"};
  const Config config = parse_config(document, "cfg.json", "/repo");
  EXPECT_EQ(experiment_limit_seconds(config, config.lane("l")), 4020);
  document["lanes"]["l"]["test_presets"] = {"c"};
  const Config one_preset = parse_config(document, "cfg.json", "/repo");
  EXPECT_EQ(experiment_limit_seconds(one_preset, one_preset.lane("l")), 3900);
}

TEST(Config, NamesTheFieldThatIsWrong) {
  nlohmann::json document = minimal_config();
  document["lanes"]["l"]["objective"]["unit"] = "sec";
  EXPECT_EQ(config_error(document), "cfg.json.lanes.l.objective.unit: 'sec' is not one of ns, us, ms, s");

  document = minimal_config();
  document["lanes"]["l"]["repetitions"] = 5;
  EXPECT_NE(config_error(document).find("cfg.json.lanes.l.repetitions: must be at least 9"), std::string::npos);

  document = minimal_config();
  document["mutable_path"] = {"x/"};
  EXPECT_NE(config_error(document).find("cfg.json.mutable_path: unknown field"), std::string::npos);

  document = minimal_config();
  document["fixed_paths"] = {"src/kernels/"};
  EXPECT_NE(config_error(document).find("overlaps fixed path"), std::string::npos);

  document = minimal_config();
  document["state_dir"] = "../elsewhere";
  EXPECT_NE(config_error(document).find("must not leave the repository"), std::string::npos);

  document = minimal_config();
  document["default_lane"] = "missing";
  EXPECT_NE(config_error(document).find("'missing' is not one of the lanes"), std::string::npos);

  document = minimal_config();
  document["lanes"]["l"]["refused_classifications"] = {{"fast", "why"}};
  EXPECT_NE(config_error(document).find("cfg.json.lanes.l.refused_classifications.fast: is not exact"),
            std::string::npos);
  document["lanes"]["l"]["refused_classifications"] = {{"approximate", ""}};
  EXPECT_NE(config_error(document).find("refused_classifications.approximate: must be a non-empty reason"),
            std::string::npos);
  document["lanes"]["l"]["objective"]["exact_output_tolerance"] = -1;
  EXPECT_NE(config_error(document).find("exact_output_tolerance: must be at least"), std::string::npos);
}

TEST(Config, ALaneNamesTheClassesItRefusesAndWhy) {
  nlohmann::json document = minimal_config();
  EXPECT_TRUE(parse_config(document, "cfg.json", "/repo").lane("l").refused_classifications.empty());
  document["lanes"]["l"]["refused_classifications"] = {{"approximate", "seeded random weights"}};
  const Lane lane = parse_config(document, "cfg.json", "/repo").lane("l");
  EXPECT_EQ(lane.refused_classifications.at("approximate"), "seeded random weights");
  EXPECT_EQ(lane_to_json(lane, 1.0)["refused_classifications"]["approximate"], "seeded random weights");
}

TEST(Config, ALaneNamesItsGateInputTargets) {
  nlohmann::json document = minimal_config();
  EXPECT_TRUE(parse_config(document, "cfg.json", "/repo").lane("l").gate_input_targets.empty());
  document["lanes"]["l"]["gate_input_targets"] = {"renderer"};
  const Lane lane = parse_config(document, "cfg.json", "/repo").lane("l");
  EXPECT_EQ(lane.gate_input_targets, std::vector<std::string>{"renderer"});
  EXPECT_EQ(lane_from_json(lane_to_json(lane, 1.0), "lane.json").gate_input_targets, lane.gate_input_targets);
  document["lanes"]["l"]["gate_input_targets"] = {"--target"};
  EXPECT_NE(config_error(document).find("cfg.json.lanes.l.gate_input_targets: '--target' is not a build target name"),
            std::string::npos);
  document["lanes"]["l"]["gate_input_targets"] = "renderer";
  EXPECT_NE(config_error(document).find("gate_input_targets"), std::string::npos);
}

TEST(Config, TheProjectConfigRefusesWhatEachLaneCannotJudge) {
  const Config config = load_config(DIT_SOURCE_DIR "/config/autoresearch.json", DIT_SOURCE_DIR);
  for (const auto& [name, lane] : config.lanes) {
    EXPECT_TRUE(lane.refused_classifications.count("approximate")) << name << ": no lane has a trained checkpoint";
    const bool sixteen_bit = name.find("fp16") != std::string::npos || name.find("bf16") != std::string::npos;
    EXPECT_EQ(lane.refused_classifications.count("quantization"), sixteen_bit ? 0u : 1u) << name;
  }
}

TEST(Config, PathWithinMatchesWholeComponents) {
  EXPECT_TRUE(path_within("model/dit.cpp", "model/"));
  EXPECT_TRUE(path_within("model/dit.cpp", "model"));
  EXPECT_TRUE(path_within("CMakeLists.txt", "CMakeLists.txt"));
  EXPECT_FALSE(path_within("modelling/x.cpp", "model/"));
  EXPECT_FALSE(path_within("model", "model/sub/"));
}

TEST(StateDirectory, ADamagedSessionFileIsNamedNeverAnInternalError) {
  StateDirectory state(scratch("damaged-state"));
  fs::create_directories(state.root());
  const nlohmann::json whole = {{"tag", "t"},
                                {"branch", "autoresearch/t"},
                                {"lane", "cpu-smoke"},
                                {"init_commit", "c"},
                                {"locks", nlohmann::json::object()}};
  struct Case {
    std::string name;
    nlohmann::json session;
    std::string expected;
  };
  std::vector<Case> cases = {{"empty", nlohmann::json::object(), "no string field \"tag\""},
                             {"array", nlohmann::json::array(), "not a JSON object"}};
  for (const char* field : {"tag", "branch", "lane", "init_commit", "locks"}) {
    nlohmann::json without = whole;
    without.erase(field);
    cases.push_back({std::string("without_") + field, without, std::string("field \"") + field + "\""});
  }
  nlohmann::json numeric_lane = whole;
  numeric_lane["lane"] = 3;
  cases.push_back({"numeric_lane", numeric_lane, "no string field \"lane\""});
  nlohmann::json bad_baseline = whole;
  bad_baseline["baseline"] = "yes";
  cases.push_back({"baseline_not_an_object", bad_baseline, "field \"baseline\" is not an object"});
  // Each baseline field the commands read, of another type than the one `dit-ar baseline` writes.
  const std::vector<std::pair<std::string, nlohmann::json>> wrong_types = {
      {"commit", 7},
      {"run_dir", nlohmann::json::array()},
      {"recorded_at", false},
      {"gpu", 1.5},
      {"noise_percent", "2"},
      {"min_improvement_percent", nullptr},
      {"effective_min_improvement_percent", nlohmann::json::object()},
      {"goldens", "x"},
      {"test_signature", 3},
      {"warnings", "none"}};
  for (const auto& [field, value] : wrong_types) {
    nlohmann::json session = whole;
    session["baseline"] = {{"commit", "c"}, {"noise_percent", 0.5}};
    session["baseline"][field] = value;
    cases.push_back({"baseline_" + field, session, "baseline." + field + " is not "});
  }
  for (const Case& c : cases) {
    state.store_session(c.session);
    try {
      state.load_session();
      ADD_FAILURE() << c.name << ": a damaged session file was accepted";
    } catch (const dit::Error& error) {
      EXPECT_EQ(error.kind(), dit::ErrorKind::invalid_file) << c.name;
      EXPECT_NE(std::string(error.what()).find(c.expected), std::string::npos) << c.name << ": " << error.what();
      EXPECT_NE(std::string(error.what()).find(state.session_file().string()), std::string::npos) << c.name;
    }
  }
  state.store_session(whole);
  EXPECT_EQ(state.load_session().at("lane"), "cpu-smoke");
  nlohmann::json with_baseline = whole;
  with_baseline["baseline"] = {{"commit", "c"},
                               {"run_dir", "runs/0001"},
                               {"recorded_at", "t"},
                               {"gpu", "cpu"},
                               {"noise_percent", 0.5},
                               {"min_improvement_percent", 1},
                               {"goldens", nlohmann::json::object()},
                               {"warnings", nlohmann::json::array()}};
  state.store_session(with_baseline);
  EXPECT_EQ(state.load_session().at("baseline").at("commit"), "c");
}

TEST(StateDirectory, AResultsLogWithAForeignHeaderIsNamed) {
  StateDirectory state(scratch("foreign-results"));
  fs::create_directories(state.root());
  dit::write_file_atomic(state.results_file(), "name\tvalue\nx\t1\n");
  try {
    state.read_results();
    ADD_FAILURE() << "a results.tsv with a foreign header was read";
  } catch (const dit::Error& error) {
    EXPECT_EQ(error.kind(), dit::ErrorKind::invalid_file);
    EXPECT_NE(std::string(error.what()).find("the header lacks dit-ar's column(s) timestamp, commit"),
              std::string::npos)
        << error.what();
  }
  fs::remove(state.results_file());
  state.append_result({{"commit", "abc"}, {"status", "KEEP"}});
  ASSERT_EQ(state.read_results().size(), 1u);
  EXPECT_EQ(state.read_results().front().at("status"), "KEEP");
}

TEST(CtestResults, ReadsJunitAndConsoleOutcomes) {
  fs::path path = scratch("junit.xml");
  std::ofstream(path) << R"(<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="x" tests="5">
  <testcase name="ok" classname="ok" time="0.5" status="run"><system-out/></testcase>
  <testcase name="bad" classname="bad" time="0.1" status="fail"><failure message=""/></testcase>
  <testcase name="segv" classname="segv" time="0.1" status="fail"><failure message=""/></testcase>
  <testcase name="skip" classname="skip" time="0" status="notrun"><skipped message="SKIP_RETURN_CODE=77"/></testcase>
  <testcase name="needs" classname="needs" time="0" status="notrun"><skipped message="Fixture dependency failed"/></testcase>
</testsuite>)";
  auto junit = parse_junit(path);
  auto console = parse_console_failures(
      "1/5 Test #1: ok ....................   Passed    0.50 sec\n"
      "3/5 Test #3: segv ..................***Exception: SegFault  0.10 sec\n");
  std::vector<SelectedTest> selected;
  for (const char* name : {"ok", "bad", "segv", "skip", "needs", "absent"}) selected.push_back({name, {}, {"unit"}});
  auto results = merge_results(selected, junit, console, "p");
  ASSERT_EQ(results.size(), 6u);
  EXPECT_EQ(results[0].outcome, TestOutcome::passed);
  EXPECT_EQ(results[1].outcome, TestOutcome::failed);
  EXPECT_EQ(results[2].outcome, TestOutcome::crashed);
  EXPECT_EQ(results[3].outcome, TestOutcome::skipped);
  EXPECT_EQ(results[4].outcome, TestOutcome::not_run);
  EXPECT_EQ(results[5].outcome, TestOutcome::missing);
}

TEST(CtestResults, NamesTheFailedGoogleTestCasesOfAFailedTest) {
  fs::path path = scratch("junit-cases.xml");
  std::ofstream(path) << R"(<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="x" tests="2">
  <testcase name="kernels" classname="kernels" time="7.6" status="fail"><failure message="Failed"/><system-out>[ RUN      ] bias/Bias.matches/m512_fp16
harness.cpp:42: Failure
bias/m512_fp16: 1 of 2359296 outputs never written
[  FAILED  ] bias/Bias.matches/m512_fp16, where GetParam() = 16-byte object &lt;00-02&gt; (87 ms)
[  FAILED  ] Flash.rejects_bad_sizes (0 ms)
[  PASSED  ] 174 tests.
[  FAILED  ] 2 tests, listed below:
[  FAILED  ] bias/Bias.matches/m512_fp16, where GetParam() = 16-byte object &lt;00-02&gt;
[  FAILED  ] Flash.rejects_bad_sizes
</system-out></testcase>
  <testcase name="ok" classname="ok" time="0.5" status="run"><system-out>[  FAILED  ] not.a.failure.of.a.passing.test</system-out></testcase>
</testsuite>)";
  auto junit = parse_junit(path);
  EXPECT_EQ(junit.at("kernels").failed_cases,
            (std::vector<std::string>{"bias/Bias.matches/m512_fp16", "Flash.rejects_bad_sizes"}));
  EXPECT_TRUE(junit.at("ok").failed_cases.empty());
  auto results = merge_results({{"kernels", {}, {"unit"}}}, junit, {}, "p");
  ASSERT_EQ(results.size(), 1u);
  RunFacts facts = passing_run();
  facts.tests[0] = results[0];
  Decision decision = decide(facts);
  EXPECT_EQ(decision.status, Status::crash);
  ASSERT_FALSE(decision.reasons.empty());
  EXPECT_EQ(decision.reasons.front(),
            "kernels failed (Failed): 2 failed cases: bias/Bias.matches/m512_fp16, Flash.rejects_bad_sizes");
}

TEST(CtestResults, ReadsLabelsFromTheListing) {
  auto listing = nlohmann::json::parse(R"({"kind": "ctestInfo", "tests": [
    {"name": "g", "command": ["/b/g", "--x"], "properties": [{"name": "LABELS", "value": ["quality", "critical"]}]},
    {"name": "u", "command": ["/b/u"], "properties": [{"name": "WORKING_DIRECTORY", "value": "/b"}]}]})");
  auto tests = parse_test_listing(listing, "listing");
  ASSERT_EQ(tests.size(), 2u);
  EXPECT_EQ(tests[0].labels, (std::vector<std::string>{"quality", "critical"}));
  EXPECT_TRUE(tests[1].labels.empty());
  EXPECT_EQ(tests[1].properties.size(), 1u);
  EXPECT_THROW(parse_test_listing(nlohmann::json::object(), "listing"), dit::Error);
}

TEST(Decision, KeepsOnlyAFullyPassingRun) { EXPECT_EQ(decide(passing_run()).status, Status::keep); }

TEST(Decision, SkippedOrMissingGatesAreCrashes) {
  for (TestOutcome outcome : {TestOutcome::skipped, TestOutcome::not_run, TestOutcome::missing}) {
    RunFacts facts = passing_run();
    facts.tests[1].outcome = outcome;
    EXPECT_EQ(decide(facts).status, Status::crash) << to_string(outcome);
  }
}

TEST(Decision, ARejectionOutranksEverything) {
  RunFacts facts = passing_run();
  facts.stage_failure = "build failed";
  facts.tests[1].outcome = TestOutcome::failed;
  facts.rejections = {"test set differs from the baseline's (preset p): test critical_3: removed"};
  Decision decision = decide(facts);
  EXPECT_EQ(decision.status, Status::rejected);
  EXPECT_EQ(decision.reasons, facts.rejections);
}

TEST(Decision, AJudgeTestWithoutItsReportIsACrash) {
  for (std::size_t report = 0; report < 3; ++report) {
    RunFacts facts = passing_run();
    const std::string test = facts.gate_reports[report].value("test", "");
    facts.gate_reports.erase(facts.gate_reports.begin() + static_cast<long>(report));
    Decision decision = decide(facts);
    EXPECT_EQ(decision.status, Status::crash) << test;
    const bool named = std::any_of(decision.reasons.begin(), decision.reasons.end(), [&](const std::string& reason) {
      return reason == "the judge test " + test + " wrote no report";
    });
    EXPECT_TRUE(named) << test;
  }
}

TEST(Decision, QualityBeforePerformance) {
  RunFacts facts = passing_run();
  facts.tests[1].outcome = TestOutcome::failed;
  facts.tests[3].outcome = TestOutcome::failed;
  facts.gate_reports[2]["passed"] = false;
  EXPECT_EQ(decide(facts).status, Status::discard_quality);
  facts.tests[1].outcome = TestOutcome::passed;
  facts.gate_reports[2]["reasons"] = {"median regressed 3%"};
  Decision decision = decide(facts);
  EXPECT_EQ(decision.status, Status::discard_performance);
  EXPECT_EQ(decision.reasons, std::vector<std::string>{"median regressed 3%"});
}

TEST(Decision, PresetsSkippedAfterAQualityFailureDiscardForQuality) {
  RunFacts facts = passing_run();
  facts.tests[1].outcome = TestOutcome::failed;
  facts.tests.pop_back();  // the performance preset did not run
  facts.gate_reports.pop_back();
  facts.skipped_presets = {"perf"};
  Decision decision = decide(facts);
  EXPECT_EQ(decision.status, Status::discard_quality);
  EXPECT_EQ(decision.reasons.back(), "not run after the quality failure: test preset perf");
  // Skipping is only right after a quality failure; anything else in the run still crashes it.
  facts.tests[1].outcome = TestOutcome::passed;
  EXPECT_EQ(decide(facts).status, Status::crash);
  facts.tests[1].outcome = TestOutcome::failed;
  facts.tests[0].outcome = TestOutcome::crashed;
  EXPECT_EQ(decide(facts).status, Status::crash);
}

TEST(Decision, OtherTestsSkippedAfterAPerformanceDiscardDiscardForPerformance) {
  // The candidate's other tests run after the performance gate; a gate that judged and did not
  // pass decides, and the reasons say what was not run after it.
  RunFacts facts = passing_run();
  facts.tests.erase(facts.tests.begin());  // unit_a: one of the other tests, not run
  facts.tests.back().outcome = TestOutcome::failed;
  facts.gate_reports.back()["passed"] = false;
  facts.gate_reports.back()["reasons"] = {"median regressed 3%"};
  facts.skipped_presets = {"fixture (its other tests: unit_a)"};
  Decision decision = decide(facts);
  EXPECT_EQ(decision.status, Status::discard_performance);
  EXPECT_EQ(decision.reasons,
            (std::vector<std::string>{
                "median regressed 3%",
                "not run after the performance discard: test preset fixture (its other tests: unit_a)"}));
  // A performance gate that passed decides nothing: the skip crashes the run.
  facts.tests.back().outcome = TestOutcome::passed;
  facts.gate_reports.back()["passed"] = true;
  EXPECT_EQ(decide(facts).status, Status::crash);
  // Nor does a failed perf test whose report says it passed.
  facts.tests.back().outcome = TestOutcome::failed;
  EXPECT_EQ(decide(facts).status, Status::crash);
}

TEST(Decision, APerformanceGateSkippedAfterAFailedTestIsACrashNamingBoth) {
  // A correctness test failed with the quality intact: CRASH whatever the performance gate would
  // say, so it is not run; the reasons name the test, then what was not run.
  RunFacts facts = passing_run();
  facts.tests[0].outcome = TestOutcome::failed;
  facts.tests.pop_back();
  facts.gate_reports.pop_back();
  facts.skipped_presets = {"fixture (its performance gate)"};
  Decision decision = decide(facts);
  EXPECT_EQ(decision.status, Status::crash);
  ASSERT_EQ(decision.reasons.size(), 2u);
  EXPECT_EQ(decision.reasons.front().rfind("unit_a failed", 0), 0u) << decision.reasons.front();
  EXPECT_EQ(decision.reasons.back(), "not run after the failure: test preset fixture (its performance gate)");
  // A test that crashed decides as well; with every test passing, the skip itself is the crash.
  facts.tests[0].outcome = TestOutcome::crashed;
  EXPECT_EQ(decide(facts).reasons.back(), "not run after the failure: test preset fixture (its performance gate)");
  facts.tests[0].outcome = TestOutcome::passed;
  decision = decide(facts);
  EXPECT_EQ(decision.status, Status::crash);
  EXPECT_EQ(decision.reasons,
            std::vector<std::string>{"test presets were skipped without a failing quality gate or test"});
}

TEST(Decision, AWrongOutputTheGatesMeasuredIsDiscardQualityNamingTheFailedTestsToo) {
  // A numerical break fails unit tests and gates alike: DISCARD-QUALITY, the reasons naming the
  // gates with their measured values and bounds, then the correctness tests that failed beside.
  RunFacts facts = passing_run();
  facts.tests[0].outcome = TestOutcome::failed;
  facts.tests[1].outcome = TestOutcome::failed;
  facts.gate_reports[0]["passed"] = false;
  facts.gate_reports[0]["reasons"] = {"psnr_mean 21.3 dB under the floor 40 dB"};
  Decision decision = decide(facts);
  EXPECT_EQ(decision.status, Status::discard_quality);
  EXPECT_EQ(decision.reasons,
            (std::vector<std::string>{"quality_psnr failed", "psnr: psnr_mean 21.3 dB under the floor 40 dB",
                                      "also failed: unit_a failed"}));
  // A test that crashed beside it still makes the run a CRASH, which names the gates too.
  facts.tests[0].outcome = TestOutcome::crashed;
  decision = decide(facts);
  EXPECT_EQ(decision.status, Status::crash);
  EXPECT_EQ(decision.reasons, (std::vector<std::string>{"unit_a crashed", "quality_psnr failed",
                                                        "psnr: psnr_mean 21.3 dB under the floor 40 dB"}));
}

TEST(Decision, UnitFailuresCrashesAndMissingReportsAreCrashes) {
  RunFacts facts = passing_run();
  facts.tests[0].outcome = TestOutcome::failed;
  EXPECT_EQ(decide(facts).status, Status::crash);
  facts = passing_run();
  facts.tests[1].outcome = TestOutcome::crashed;
  EXPECT_EQ(decide(facts).status, Status::crash);
  facts = passing_run();
  facts.gate_reports.clear();
  EXPECT_EQ(decide(facts).status, Status::crash);
  facts = passing_run();
  facts.stage_failure = "build failed: exit code 1";
  EXPECT_EQ(decide(facts).status, Status::crash);
}

// The table README.md, program.md and SKILL.md state, a row per decision.
TEST(ExitCodes, EachDecisionExitsWithTheCodeTheDocumentsState) {
  const struct {
    Status status;
    int code;
  } table[] = {{Status::keep, 0},
               {Status::discard_quality, 3},
               {Status::discard_performance, 3},
               {Status::crash, 4},
               {Status::rejected, 5}};
  for (const auto& row : table) {
    EXPECT_EQ(exit_code(row.status), row.code) << to_string(row.status);
    // A script tells a decision from an error by the code alone.
    EXPECT_NE(exit_code(row.status), kExitSetupError) << to_string(row.status);
    EXPECT_NE(exit_code(row.status), kExitInternalError) << to_string(row.status);
  }
  EXPECT_EQ(kExitInternalError, 1);
  EXPECT_EQ(kExitSetupError, 2);
}

// Each pid of `pids` still alive, with its name, state and parent from /proc/<pid>/stat: what
// a failing sweep test prints, so that one failure says who kept the process (its parent).
std::string describe_alive(const std::vector<int>& pids) {
  std::string text;
  for (int pid : pids) {
    if (!process_alive(pid)) continue;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    const size_t name_end = line.rfind(')');
    std::istringstream rest(name_end == std::string::npos ? std::string() : line.substr(name_end + 1));
    std::string state;
    int parent = 0;
    rest >> state >> parent;
    const size_t name_start = line.find('(');
    const std::string name =
        name_start < name_end ? line.substr(name_start + 1, name_end - name_start - 1) : std::string("?");
    text += " [pid " + std::to_string(pid) + " (" + name + ") state " + state + ", parent " + std::to_string(parent) +
            (parent == ::getpid() ? ", this test" : "") + "]";
  }
  return text;
}

TEST(Process, TimeoutKillsTheWholeGroupAndEscapees) {
  become_subreaper();
  fs::path pids = scratch("pids.txt");
  ProcessOptions options;
  // A child that starts a grandchild in its own session (escaping the group), then hangs.
  options.argv = {"sh", "-c", "setsid sleep 300 & echo $! > " + pids.string() + "; sleep 300"};
  options.timeout = std::chrono::seconds(1);
  ProcessResult result = run_process(options);
  EXPECT_TRUE(result.timed_out);
  EXPECT_FALSE(result.succeeded());
  int escapee = 0;
  std::ifstream(pids) >> escapee;
  ASSERT_GT(escapee, 0);
  EXPECT_FALSE(process_alive(escapee)) << "the setsid grandchild survived:" << describe_alive({escapee});
}

TEST(Process, ReportsExitCodesAndMissingPrograms) {
  ProcessOptions options;
  options.argv = {"sh", "-c", "exit 3"};
  ProcessResult result = run_process(options);
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(result.describe(), "exit code 3");
  options.argv = {"/nonexistent/program"};
  result = run_process(options);
  EXPECT_FALSE(result.started);
}

// The pids in `path`, one a line, once it holds `count` of them (waiting up to 10 s).
std::vector<int> await_pids(const fs::path& path, std::size_t count) {
  std::vector<int> pids;
  for (int attempt = 0; attempt < 1000 && pids.size() < count; ++attempt) {
    pids.clear();
    std::ifstream stream(path);
    for (int pid = 0; stream >> pid;) pids.push_back(pid);
    if (pids.size() < count) ::usleep(10'000);
  }
  return pids;
}

// Whether every pid in `pids` is gone within `seconds` (zombies count as gone).
bool all_gone(const std::vector<int>& pids, double seconds) {
  for (int attempt = 0; attempt < seconds * 100; ++attempt) {
    if (std::none_of(pids.begin(), pids.end(), process_alive)) return true;
    ::usleep(10'000);
  }
  return std::none_of(pids.begin(), pids.end(), process_alive);
}

// The stage's whole tree (the child, a background grandchild, a setsid escapee) dies with a
// driver killed by SIGKILL: the supervisor sweeps it.
TEST(Process, ADriverKilledBySigkillLeavesNoProcess) {
  const fs::path pids = scratch("tree-pids.txt");
  fs::remove(pids);
  const pid_t driver = ::fork();
  ASSERT_GE(driver, 0);
  if (driver == 0) {
    ProcessOptions options;
    options.argv = {"sh", "-c",
                    "sleep 300 & echo $! >> " + pids.string() + "; setsid sleep 300 & echo $! >> " + pids.string() +
                        "; echo $$ >> " + pids.string() + "; sleep 300"};
    run_process(options);
    ::_exit(0);
  }
  const std::vector<int> tree = await_pids(pids, 3);
  ASSERT_EQ(tree.size(), 3u) << "the stage did not start";
  ::kill(driver, SIGKILL);
  ::waitpid(driver, nullptr, 0);
  EXPECT_TRUE(all_gone(tree, 5.0)) << "a process of the killed driver's stage is still alive:" << describe_alive(tree);
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {}
}

// The caller's other children (dit-ar work's workers, say) outlive a stage, and one that ended
// meanwhile is still the caller's to reap, with its exit code.
TEST(Process, LeavesTheCallersOtherChildrenAlone) {
  const pid_t ended = ::fork();
  ASSERT_GE(ended, 0);
  if (ended == 0) ::_exit(7);
  const pid_t running = ::fork();
  ASSERT_GE(running, 0);
  if (running == 0) {
    ::pause();
    ::_exit(0);
  }
  ProcessOptions options;
  options.argv = {"sleep", "0.2"};
  EXPECT_TRUE(run_process(options).succeeded());
  EXPECT_TRUE(process_alive(running)) << "the stage's sweep killed another child of the caller";
  ::kill(running, SIGKILL);
  ::waitpid(running, nullptr, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(ended, &status, 0), ended) << "the stage's sweep reaped another child of the caller";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 7);
}

// A supervisor killed by SIGKILL sweeps nothing: its child dies with it (PR_SET_PDEATHSIG) and
// the stage's orphans, a setsid escapee among them, go to the driver (a subreaper), whose
// run_process sweeps them, and them alone.
TEST(Process, AKilledSupervisorsOrphansAreSweptByTheDriver) {
  const fs::path pids = scratch("orphan-pids.txt");
  fs::remove(pids);
  const pid_t driver = ::fork();
  ASSERT_GE(driver, 0);
  if (driver == 0) {
    become_subreaper();
    const pid_t other = ::fork();
    if (other == 0) {
      ::pause();
      ::_exit(0);
    }
    ProcessOptions options;
    // The escapee, then the supervisor (the shell's parent).
    options.argv = {
        "sh", "-c",
        "setsid sleep 300 & echo $! >> " + pids.string() + "; echo $PPID >> " + pids.string() + "; sleep 300"};
    run_process(options);
    const bool other_alive = process_alive(other);
    ::kill(other, SIGKILL);
    ::_exit(other_alive ? 0 : 1);
  }
  const std::vector<int> started = await_pids(pids, 2);
  ASSERT_EQ(started.size(), 2u) << "the stage did not start";
  ::kill(started[1], SIGKILL);
  int status = 0;
  ::waitpid(driver, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the driver's other child did not outlive the stage";
  EXPECT_TRUE(all_gone({started[0]}, 5.0))
      << "the setsid escapee of the killed supervisor's stage is still alive:" << describe_alive({started[0]});
  ::kill(started[0], SIGKILL);
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {}
}

// A new driver cannot take the state directory's lock before the killed one's supervisor has
// swept (it holds the lock's descriptor): when the lock is taken, nothing of the stage is left,
// even a child that ignores SIGTERM.
TEST(Process, TheLockIsTakenOnlyAfterTheKilledDriversSweep) {
  const fs::path pids = scratch("lock-pids.txt");
  const fs::path lock_path = scratch("lock");
  fs::remove(pids);
  const pid_t driver = ::fork();
  ASSERT_GE(driver, 0);
  if (driver == 0) {
    LockFile lock(lock_path);
    ProcessOptions options;
    options.argv = {"sh", "-c", "trap '' TERM; sleep 300 & echo $! >> " + pids.string() + "; sleep 300"};
    run_process(options);
    ::_exit(0);
  }
  const std::vector<int> tree = await_pids(pids, 1);
  ASSERT_EQ(tree.size(), 1u) << "the stage did not start";
  ::kill(driver, SIGKILL);
  ::waitpid(driver, nullptr, 0);
  LockFile lock(lock_path);
  EXPECT_TRUE(std::none_of(tree.begin(), tree.end(), process_alive))
      << "the lock was free while the killed driver's stage was still alive";
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {}
}

TEST(Process, MeasuresTheChildFromSpawnToExit) {
  ProcessOptions options;
  options.argv = {"sleep", "0.2"};
  ProcessResult result = run_process(options);
  EXPECT_TRUE(result.succeeded()) << result.describe();
  EXPECT_GE(result.seconds, 0.2);
  EXPECT_LT(result.seconds, 0.5);
}

// A failure while recording the child's group (inflight.json on a full disk) ends the child.
TEST(Process, AThrowingStartCallbackEndsTheChild) {
  ProcessOptions options;
  options.argv = {"sleep", "300"};
  int group = 0;
  options.on_start = [&group](int process_group) {
    group = process_group;
    throw std::runtime_error("cannot record the group");
  };
  EXPECT_THROW(run_process(options), std::runtime_error);
  ASSERT_GT(group, 0);
  EXPECT_FALSE(process_alive(group)) << "the child outlived the failed start";
}

// A driver killed while recording re-applies the record from inflight.json on its next start:
// applying a record twice must leave exactly what applying it once leaves.
TEST(Recording, ApplyingARecordTwiceIsApplyingItOnce) {
  if (std::system("git --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "git is needed to set up the repository";
  fs::path repository_dir = scratch("recording-repo");
  fs::remove_all(repository_dir);
  fs::create_directories(repository_dir);
  const std::string git = "git -C " + repository_dir.string() + " ";
  ASSERT_EQ(std::system((git + "init -q -b autoresearch/t && " + git + "config user.name t && " + git +
                         "config user.email t@localhost && echo a > " + (repository_dir / "f").string() + " && " + git +
                         "add f && " + git + "commit -q -m one && echo b > " + (repository_dir / "f").string() +
                         " && " + git + "commit -q -am two")
                            .c_str()),
            0);
  GitRepository repository(repository_dir);
  const std::string candidate = repository.head_commit();
  const std::string best = repository.parents(candidate).front();
  repository.set_reference("refs/autoresearch/best", best, "test");
  StateDirectory state(repository_dir / ".state");
  fs::create_directories(state.root());

  ExperimentRecord record;
  record.commit = candidate;
  record.parent = best;
  record.best_before = best;
  record.status = Status::discard_performance;
  record.classification = "exact";
  record.run_dir = "runs/0001-x";
  apply_record(repository, state, record);
  apply_record(repository, state, record);
  EXPECT_EQ(state.read_results().size(), 1u);
  EXPECT_EQ(repository.head_commit(), best);
  EXPECT_EQ(repository.resolve_reference("refs/autoresearch/discarded/" + candidate), candidate);
  auto note = repository.read_note("refs/notes/autoresearch", candidate);
  ASSERT_TRUE(note.has_value());
  EXPECT_NE(note->find("\"status\": \"DISCARD-PERFORMANCE\""), std::string::npos);

  record.status = Status::keep;
  record.commit = best;
  record.run_dir = "runs/0002-y";
  apply_record(repository, state, record);
  apply_record(repository, state, record);
  EXPECT_EQ(state.read_results().size(), 2u);
  EXPECT_EQ(repository.resolve_reference("refs/autoresearch/best"), best);
  EXPECT_EQ(state.load_best()->value("commit", ""), best);
}

// A driver killed inside one of apply_record's git updates leaves libgit2's lock file; the next
// start removes the locks of those updates (no older than the record) and nothing else.
TEST(Recording, AGitUpdateCutShortLeavesNoLockBehind) {
  if (std::system("git --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "git is needed to set up the repository";
  fs::path repository_dir = scratch("locks-repo");
  fs::remove_all(repository_dir);
  fs::create_directories(repository_dir);
  const std::string git = "git -C " + repository_dir.string() + " ";
  ASSERT_EQ(std::system((git + "init -q -b autoresearch/t && " + git + "config user.name t && " + git +
                         "config user.email t@localhost && echo a > " + (repository_dir / "f").string() + " && " + git +
                         "add f && " + git + "commit -q -m one")
                            .c_str()),
            0);
  GitRepository repository(repository_dir);
  const std::string head = repository.head_commit();
  StateDirectory state(repository_dir / ".state");
  fs::create_directories(state.root());
  state.store_session({{"tag", "t"},
                       {"branch", "autoresearch/t"},
                       {"lane", "l"},
                       {"init_commit", head},
                       {"locks", nlohmann::json::object()}});
  const fs::path dot_git = repository_dir / ".git";
  fs::create_directories(dot_git / "refs/autoresearch");
  const std::vector<fs::path> stale = {dot_git / "refs/autoresearch/best.lock", dot_git / "index.lock",
                                       dot_git / "refs/heads/autoresearch/t.lock"};
  const fs::path older = dot_git / "refs/notes/autoresearch.lock";
  const fs::path unrelated = dot_git / "refs/heads/other.lock";
  fs::create_directories(older.parent_path());
  for (const auto& file : stale) std::ofstream(file) << head << "\n";
  std::ofstream(older) << head << "\n";
  std::ofstream(unrelated) << head << "\n";
  fs::last_write_time(older, fs::file_time_type::clock::now() - std::chrono::hours(1));
  EXPECT_THROW(repository.set_reference("refs/autoresearch/best", head, "test"), dit::Error)
      << "libgit2 updated a ref whose lock file was there";

  ExperimentRecord record;
  record.timestamp = utc_timestamp();
  record.commit = head;
  std::vector<fs::path> expected = stale;
  std::sort(expected.begin(), expected.end());
  state.store_inflight({{"phase", "running"}, {"record", record.to_json()}});
  EXPECT_TRUE(remove_stale_git_locks(repository, state).empty())
      << "a run without its start time had its locks removed";
  // A run stopped while it checked the checkout (which refreshes the index): its start counts.
  state.store_inflight({{"phase", "running"}, {"kind", "experiment"}, {"started", record.timestamp}});
  auto removed = remove_stale_git_locks(repository, state);
  std::sort(removed.begin(), removed.end());
  EXPECT_EQ(removed, expected);
  for (const auto& file : stale) std::ofstream(file) << head << "\n";
  state.store_inflight({{"phase", "recording"}, {"kind", "experiment"}, {"record", record.to_json()}});
  removed = remove_stale_git_locks(repository, state);
  std::sort(removed.begin(), removed.end());
  EXPECT_EQ(removed, expected);
  EXPECT_TRUE(fs::exists(older)) << "a lock older than the record was removed";
  EXPECT_TRUE(fs::exists(unrelated)) << "the lock of another branch was removed";
  EXPECT_NO_THROW(repository.set_reference("refs/autoresearch/best", head, "test"));
}

// A torn last line (a writer killed mid-append) is cut before the next row; a file holding only
// a torn header gets the header again.
TEST(StateDirectory, AnAppendCutsATornLastLine) {
  StateDirectory state(scratch("torn-state"));
  fs::remove_all(state.root());
  fs::create_directories(state.root());
  state.append_result({{"commit", "a"}, {"status", "KEEP"}, {"run_dir", "runs/0001-a"}});
  { std::ofstream(state.results_file(), std::ios::app) << "2026-01-01T00:00:00Z\tb\tpar"; }
  state.append_result({{"commit", "c"}, {"status", "CRASH"}, {"run_dir", "runs/0003-c"}});
  auto rows = state.read_results();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].at("commit"), "a");
  EXPECT_EQ(rows[1].at("commit"), "c");
  const std::string text = dit::read_text_file(state.results_file());
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3) << text;

  { std::ofstream(state.results_file(), std::ios::trunc) << "timestamp\tcommit\tpar"; }
  state.append_result({{"commit", "d"}, {"status", "KEEP"}, {"run_dir", "runs/0004-d"}});
  rows = state.read_results();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].at("commit"), "d");
}

// Every run folder without a row is sealed: marked, moved to <id>.interrupted with its files
// read-only, a read-only file in its place; decided and sealed folders are left as they are,
// temporary files beside the records removed, and the numbering goes on after them.
TEST(StateDirectory, SealsTheRunsWithoutADecision) {
  StateDirectory state(scratch("seal-state"));
  fs::remove_all(state.root());
  fs::create_directories(state.runs_dir());
  for (const char* name : {"0001-aaaaaaaa", "0002-bbbbbbbb", "0003-cccccccc.interrupted"}) {
    fs::create_directories(state.runs_dir() / name / "judge");
    std::ofstream(state.runs_dir() / name / "judge" / "report.json") << "{}\n";
  }
  state.append_result({{"commit", "a"}, {"status", "KEEP"}, {"run_dir", "runs/0001-aaaaaaaa"}});
  std::ofstream(state.root() / "inflight.json.tmp.AbC123") << "{";
  std::ofstream(state.root() / "notes.json.tmp.AbC123") << "{";

  const auto sealed = state.seal_undecided_runs();
  ASSERT_EQ(sealed.size(), 1u);
  const fs::path old_path = state.runs_dir() / "0002-bbbbbbbb";
  EXPECT_EQ(sealed.front(), state.runs_dir() / "0002-bbbbbbbb.interrupted");
  EXPECT_TRUE(fs::is_regular_file(old_path)) << "no file in the sealed folder's place";
  EXPECT_TRUE(fs::exists(sealed.front() / "interrupted.json"));
  EXPECT_TRUE(fs::exists(sealed.front() / "judge" / "report.json"));
  const auto write = fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write;
  EXPECT_EQ(fs::status(sealed.front() / "judge" / "report.json").permissions() & write, fs::perms::none);
  EXPECT_EQ(fs::status(old_path).permissions() & write, fs::perms::none);
  EXPECT_FALSE(fs::exists(old_path / "judge")) << "a path into the sealed folder still leads somewhere";
  EXPECT_TRUE(fs::is_directory(state.runs_dir() / "0001-aaaaaaaa")) << "a decided run was sealed";
  EXPECT_FALSE(fs::exists(state.root() / "inflight.json.tmp.AbC123"));
  EXPECT_TRUE(fs::exists(state.root() / "notes.json.tmp.AbC123")) << "a file that is not a record's was removed";
  EXPECT_TRUE(state.seal_undecided_runs().empty()) << "sealing twice sealed again";
  EXPECT_EQ(state.create_run_dir("dddddddd0000").filename(), "0004-dddddddd");
}
