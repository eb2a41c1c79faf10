// Unit tests of the progress reporter (driver/progress.h): the events of --progress=json and
// their fields, one JSON object a line even from two threads, today's readable lines under
// text, nothing under none, and the heartbeat's detail read from ninja's, ctest's and the
// performance gate's logs.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "driver/progress.h"
#include "tests/support/scratch_directory.h"

namespace fs = std::filesystem;
using namespace dit::ar;

namespace {

ProcessResult exited(int code, double seconds) {
  ProcessResult result;
  result.started = true;
  result.exit_code = code;
  result.seconds = seconds;
  return result;
}

// Every line of `text` as JSON; a line that does not parse fails the test.
std::vector<nlohmann::json> json_lines(const std::string& text) {
  std::vector<nlohmann::json> events;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    nlohmann::json event = nlohmann::json::parse(line, nullptr, false);
    EXPECT_FALSE(event.is_discarded()) << "not JSON: " << line;
    EXPECT_TRUE(event.is_object()) << line;
    events.push_back(std::move(event));
  }
  EXPECT_TRUE(text.empty() || text.back() == '\n') << "the last line is not ended";
  return events;
}

void write_file(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

TEST(ProgressFormat, ParsesTheThreeNames) {
  EXPECT_EQ(parse_progress_format("text"), ProgressFormat::text);
  EXPECT_EQ(parse_progress_format("json"), ProgressFormat::json);
  EXPECT_EQ(parse_progress_format("none"), ProgressFormat::none);
  EXPECT_FALSE(parse_progress_format("JSON"));
  EXPECT_FALSE(parse_progress_format(""));
  EXPECT_EQ(kProgressFormats, (std::vector<std::string>{"text", "json", "none"}));
}

TEST(ProgressJson, EveryEventIsOneLineWithItsFields) {
  std::ostringstream text;
  std::ostringstream json;
  std::ostringstream warnings;
  ProgressReporter progress(ProgressFormat::json, text, json, warnings);
  EXPECT_TRUE(progress.json());
  progress.run_started({{"command", "experiment"}, {"commit", "abc"}, {"lane", "fixture"}}, "dit-ar experiment abc");
  progress.stage_started("build", "fixture");
  HeartbeatDetail detail;
  detail.last_line = "[3/9] Building CXX object src/work.cpp.o";
  detail.build = StepCount{3, 9};
  detail.tests = StepCount{2, 4};
  detail.gate = GateProgress{5, "best", 5, 15.25, 30.5, "ms"};
  progress.stage_heartbeat("build", "fixture", 30, detail);
  progress.stage_finished("build", "fixture", exited(0, 7.4321));
  progress.stage_started("tests (fixture)", "fixture");
  progress.stage_finished("tests (fixture)", "fixture", exited(8, 1.5));
  ProcessResult timed_out = exited(-1, 60.0);
  timed_out.timed_out = true;
  timed_out.signal = 9;
  progress.stage_started("judge build");
  progress.stage_finished("judge build", "", timed_out);
  progress.stage_skipped("tests (fixture-perf)", "fixture-perf", "a quality gate failed");
  progress.note("  the goldens were moved to /x");
  progress.warning("rebuilding the best");
  progress.decision({{"status", "DISCARD-QUALITY"}, {"commit", "abc"}, {"exit_code", 3}, {"reasons", {"r"}}});

  EXPECT_EQ(text.str(), "") << "json mode printed readable lines";
  EXPECT_EQ(warnings.str(), "");
  const std::vector<nlohmann::json> events = json_lines(json.str());
  ASSERT_EQ(events.size(), 12u) << json.str();

  const std::regex iso8601(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)");
  double previous = 0.0;
  for (const auto& event : events) {
    ASSERT_TRUE(event.contains("event") && event["event"].is_string()) << event;
    ASSERT_TRUE(event.contains("time") && event["time"].is_string()) << event;
    EXPECT_TRUE(std::regex_match(event["time"].get<std::string>(), iso8601)) << event;
    ASSERT_TRUE(event.contains("elapsed_s") && event["elapsed_s"].is_number()) << event;
    EXPECT_GE(event["elapsed_s"].get<double>(), previous) << event;
    previous = event["elapsed_s"].get<double>();
  }
  std::vector<std::string> kinds;
  for (const auto& event : events) kinds.push_back(event["event"]);
  EXPECT_EQ(kinds, (std::vector<std::string>{"started", "stage_started", "stage_heartbeat", "stage_finished",
                                             "stage_started", "stage_finished", "stage_started", "stage_finished",
                                             "stage_finished", "note", "warning", "decision"}));

  EXPECT_EQ(events[0]["command"], "experiment");
  EXPECT_EQ(events[0]["commit"], "abc");
  EXPECT_EQ(events[0]["lane"], "fixture");

  EXPECT_EQ(events[1]["stage"], "build");
  EXPECT_EQ(events[1]["preset"], "fixture");

  const nlohmann::json& beat = events[2];
  EXPECT_EQ(beat["stage"], "build");
  EXPECT_EQ(beat["preset"], "fixture");
  EXPECT_EQ(beat["seconds"], 30);
  EXPECT_EQ(beat["last_line"], "[3/9] Building CXX object src/work.cpp.o");
  EXPECT_EQ(beat["build"], (nlohmann::json{{"done", 3}, {"total", 9}}));
  EXPECT_EQ(beat["tests"], (nlohmann::json{{"done", 2}, {"total", 4}}));
  EXPECT_EQ(beat["gate"]["round"], 5);
  EXPECT_EQ(beat["gate"]["running"], "best");
  EXPECT_EQ(beat["gate"]["rounds_done"], 5);
  EXPECT_DOUBLE_EQ(beat["gate"]["candidate_median"].get<double>(), 15.25);
  EXPECT_DOUBLE_EQ(beat["gate"]["best_median"].get<double>(), 30.5);
  EXPECT_EQ(beat["gate"]["unit"], "ms");

  EXPECT_EQ(events[3]["stage"], "build");
  EXPECT_EQ(events[3]["status"], "ok");
  EXPECT_DOUBLE_EQ(events[3]["seconds"].get<double>(), 7.432);
  EXPECT_EQ(events[3]["exit_code"], 0);
  EXPECT_FALSE(events[3].contains("detail"));

  EXPECT_EQ(events[5]["status"], "FAILED");
  EXPECT_EQ(events[5]["exit_code"], 8);
  EXPECT_EQ(events[5]["detail"], "exit code 8");

  // A timeout has no exit code; a stage without a preset has no "preset".
  EXPECT_EQ(events[7]["stage"], "judge build");
  EXPECT_FALSE(events[7].contains("preset"));
  EXPECT_FALSE(events[6].contains("preset"));
  EXPECT_EQ(events[7]["status"], "FAILED");
  EXPECT_FALSE(events[7].contains("exit_code"));
  EXPECT_NE(events[7]["detail"].get<std::string>().find("timed out"), std::string::npos);

  EXPECT_EQ(events[8]["stage"], "tests (fixture-perf)");
  EXPECT_EQ(events[8]["preset"], "fixture-perf");
  EXPECT_EQ(events[8]["status"], "skipped");
  EXPECT_EQ(events[8]["seconds"], 0);
  EXPECT_EQ(events[8]["detail"], "a quality gate failed");

  EXPECT_EQ(events[9]["text"], "the goldens were moved to /x");
  EXPECT_EQ(events[10]["text"], "rebuilding the best");

  EXPECT_EQ(events[11]["status"], "DISCARD-QUALITY");
  EXPECT_EQ(events[11]["commit"], "abc");
  EXPECT_EQ(events[11]["exit_code"], 3);
  EXPECT_EQ(events[11]["reasons"], nlohmann::json::array({"r"}));
}

TEST(ProgressJson, AHeartbeatWithoutDetailHasOnlyItsTime) {
  std::ostringstream sink;
  std::ostringstream json;
  ProgressReporter progress(ProgressFormat::json, sink, json, sink);
  progress.stage_heartbeat("configure", "", 15, HeartbeatDetail{});
  const auto events = json_lines(json.str());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["event"], "stage_heartbeat");
  EXPECT_EQ(events[0]["seconds"], 15);
  for (const char* key : {"preset", "last_line", "build", "tests", "gate"})
    EXPECT_FALSE(events[0].contains(key)) << key;
}

TEST(ProgressJson, TheCommonKeysAreNotOverwrittenAndInvalidUtf8IsReplaced) {
  std::ostringstream sink;
  std::ostringstream json;
  ProgressReporter progress(ProgressFormat::json, sink, json, sink);
  progress.decision({{"event", "mine"}, {"time", "then"}, {"status", "KEEP"}});
  HeartbeatDetail detail;
  detail.last_line = "bad \xff\xfe byte";
  progress.stage_heartbeat("build", "", 1, detail);
  const auto events = json_lines(json.str());
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0]["event"], "decision");
  EXPECT_NE(events[0]["time"], "then");
  EXPECT_EQ(events[0]["status"], "KEEP");
  EXPECT_EQ(events[1]["last_line"].get<std::string>().substr(0, 4), "bad ");
}

// Whatever the format, the run's record gets every event from record_to on, the decision too.
TEST(ProgressRecord, TheRunFolderKeepsTheEventsUnderTextProgress) {
  const dit::test::ScratchDirectory scratch;
  const fs::path file = scratch.path() / "progress.jsonl";
  std::ostringstream text;
  std::ostringstream json;
  {
    ProgressReporter progress(ProgressFormat::text, text, json, text);
    progress.stage_finished("before", "", exited(0, 1.0));  // before the record: not in it
    progress.record_to(file);
    progress.run_started({{"command", "experiment"}, {"commit", "abc"}}, "dit-ar experiment abc");
    progress.stage_started("build", "p");
    progress.stage_finished("build", "p", exited(0, 7.25));
    progress.decision({{"status", "KEEP"}, {"exit_code", 0}});
  }
  EXPECT_TRUE(json.str().empty()) << json.str();
  EXPECT_NE(text.str().find("dit-ar experiment abc"), std::string::npos) << text.str();
  std::ifstream stream(file);
  const std::string recorded((std::istreambuf_iterator<char>(stream)), std::istreambuf_iterator<char>());
  const auto events = json_lines(recorded);
  ASSERT_EQ(events.size(), 4u) << recorded;
  EXPECT_EQ(events[0]["event"], "started");
  EXPECT_EQ(events[1]["event"], "stage_started");
  EXPECT_EQ(events[2]["stage"], "build");
  EXPECT_DOUBLE_EQ(events[2]["seconds"].get<double>(), 7.25);
  EXPECT_EQ(events[3]["event"], "decision");
  EXPECT_EQ(events[3]["status"], "KEEP");
  for (const auto& event : events) EXPECT_TRUE(event.contains("elapsed_s")) << event;
}

TEST(ProgressRecord, AFolderThatCannotHoldItIsAnError) {
  std::ostringstream sink;
  ProgressReporter progress(ProgressFormat::none, sink, sink, sink);
  EXPECT_THROW(progress.record_to("/nonexistent-dit-folder/progress.jsonl"), dit::Error);
}

// The heartbeat's thread and the main thread at once: every line is whole.
TEST(ProgressJson, TwoThreadsNeverInterleaveALine) {
  std::ostringstream sink;
  std::ostringstream json;
  ProgressReporter progress(ProgressFormat::json, sink, json, sink);
  HeartbeatDetail detail;
  detail.last_line = std::string(100, 'x');
  detail.build = StepCount{1, 2};
  std::thread beating([&] {
    for (int i = 0; i < 500; ++i) progress.stage_heartbeat("build", "p", i, detail);
  });
  for (int i = 0; i < 500; ++i) progress.stage_finished("configure", "p", exited(0, i));
  beating.join();
  const auto events = json_lines(json.str());
  EXPECT_EQ(events.size(), 1000u);
}

TEST(ProgressText, TheReadableLinesOfToday) {
  std::ostringstream text;
  std::ostringstream json;
  std::ostringstream warnings;
  ProgressReporter progress(ProgressFormat::text, text, json, warnings);
  progress.run_started({{"command", "baseline"}}, "dit-ar baseline abc (lane fixture, on cpu)");
  progress.stage_started("build", "fixture");  // nothing: the text lines say when a stage ends
  HeartbeatDetail detail;
  detail.last_line = "[3/9] Building";
  progress.stage_heartbeat("build", "fixture", 30, detail);
  progress.stage_heartbeat("build", "fixture", 45, HeartbeatDetail{});
  progress.stage_finished("build", "fixture", exited(0, 7.44));
  progress.stage_finished("tests (fixture, gate inputs)", "fixture", exited(8, 1.31));
  progress.stage_finished("record baseline", "", exited(0, 2.0), "  record baseline        ok    2.0 s  tool");
  progress.stage_skipped("tests (fixture)", "fixture", "a quality gate failed");
  progress.note("  the goldens were moved to /x");
  progress.warning("rebuilding the best");
  progress.decision({{"status", "KEEP"}});
  EXPECT_EQ(text.str(),
            "dit-ar baseline abc (lane fixture, on cpu)\n"
            "  build                       running 30 s: [3/9] Building\n"
            "  build                       running 45 s\n"
            "  build                       ok    7.4 s\n"
            "  tests (fixture, gate inputs)  FAILED 1.3 s  (exit code 8)\n"
            "  record baseline        ok    2.0 s  tool\n"
            "  tests (fixture)             skipped (a quality gate failed)\n"
            "  the goldens were moved to /x\n"
            "warning: rebuilding the best\n");
  EXPECT_EQ(json.str(), "");
  EXPECT_EQ(warnings.str(), "");
}

TEST(ProgressNone, NoLinesButWarningsOnStderr) {
  std::ostringstream text;
  std::ostringstream json;
  std::ostringstream warnings;
  ProgressReporter progress(ProgressFormat::none, text, json, warnings);
  progress.run_started({{"command", "experiment"}}, "dit-ar experiment abc");
  progress.stage_started("build");
  progress.stage_heartbeat("build", "", 30, HeartbeatDetail{});
  progress.stage_finished("build", "", exited(0, 1.0));
  progress.stage_skipped("tests (x)", "x", "a quality gate failed");
  progress.note("  a note");
  progress.warning("rebuilding the judge");
  progress.decision({{"status", "KEEP"}});
  EXPECT_EQ(text.str(), "");
  EXPECT_EQ(json.str(), "");
  EXPECT_EQ(warnings.str(), "warning: rebuilding the judge\n");
}

TEST(HeartbeatDetail, ParsesNinjaCtestAndTheGatesLines) {
  EXPECT_EQ(parse_build_step("[123/309] Building CXX object a.o")->done, 123);
  EXPECT_EQ(parse_build_step("[123/309] Building CXX object a.o")->total, 309);
  EXPECT_FALSE(parse_build_step("Building [1/2]"));
  EXPECT_FALSE(parse_build_step("-- Configuring done"));
  const auto tests = parse_test_step(" 12/40 Test  #5: kernels_test ..........   Passed    0.10 sec");
  ASSERT_TRUE(tests);
  EXPECT_EQ(tests->done, 12);
  EXPECT_EQ(tests->total, 40);
  EXPECT_FALSE(parse_test_step("    Start  5: kernels_test"));

  GateProgress gate;
  EXPECT_FALSE(parse_gate_line("Running ./bench", gate));
  EXPECT_TRUE(parse_gate_line("[dit-perf-gate] round 3, candidate: /b/bench --x", gate));
  EXPECT_EQ(gate.round, 3);
  EXPECT_EQ(gate.running, "candidate");
  EXPECT_FALSE(gate.rounds_done);
  EXPECT_TRUE(
      parse_gate_line("[dit-perf-gate] round 3 done: candidate median 15.2 ms, best median 30.1 ms (4 rounds)", gate));
  EXPECT_EQ(gate.round, 3);
  EXPECT_EQ(gate.running, "");
  EXPECT_EQ(gate.rounds_done, 4);
  EXPECT_DOUBLE_EQ(*gate.candidate_median, 15.2);
  EXPECT_DOUBLE_EQ(*gate.best_median, 30.1);
  EXPECT_EQ(gate.unit, "ms");
  EXPECT_TRUE(parse_gate_line("[dit-perf-gate] round 4, best: /b/bench", gate));
  EXPECT_EQ(gate.round, 4);
  EXPECT_EQ(gate.running, "best");
  EXPECT_EQ(gate.rounds_done, 4) << "the medians of the rounds done stay";
  EXPECT_TRUE(
      parse_gate_line("[dit-perf-gate] round 0 done: candidate median 1e+07 ns, best median 2e+07 ns (1 round)", gate));
  EXPECT_DOUBLE_EQ(*gate.candidate_median, 1e7);
  EXPECT_EQ(gate.rounds_done, 1);
}

TEST(HeartbeatDetail, ReadsTheLogsOfAStage) {
  dit::test::ScratchDirectory scratch;
  const fs::path build = scratch.path() / "build.log";
  write_file(build, "[1/3] Building a.o\n[2/3] Building \x1b[1mb.o\x1b[0m\n");
  HeartbeatDetail detail = read_heartbeat_detail({build});
  EXPECT_EQ(detail.last_line, "[2/3] Building b.o");
  ASSERT_TRUE(detail.build);
  EXPECT_EQ(detail.build->done, 2);
  EXPECT_EQ(detail.build->total, 3);
  EXPECT_FALSE(detail.tests);
  EXPECT_FALSE(detail.gate);

  // The judge's stage: ctest's console and the gate's log, the benchmark's own output last.
  const fs::path console = scratch.path() / "ctest.log";
  const fs::path gate = scratch.path() / "perf-gate.log";
  write_file(console,
             "    Start 1: quality_output\n1/2 Test #1: quality_output ...   Passed    0.1 sec\n"
             "    Start 2: perf_gate\n");
  write_file(gate,
             "[dit-perf-gate] round 0, candidate: /c/bench\nBM_Fixture 15 ms\n[dit-perf-gate] round 0, best: /b/bench\n"
             "BM_Fixture 30 ms\n[dit-perf-gate] round 0 done: candidate median 15 ms, best median 30 ms (1 rounds)\n"
             "[dit-perf-gate] round 1, best: /b/bench\nBM_Fixture 31 ms\n");
  fs::last_write_time(console, fs::last_write_time(gate) - std::chrono::seconds(5));
  detail = read_heartbeat_detail({console, gate});
  EXPECT_EQ(detail.last_line, "BM_Fixture 31 ms");
  ASSERT_TRUE(detail.tests);
  EXPECT_EQ(detail.tests->done, 1);
  EXPECT_EQ(detail.tests->total, 2);
  ASSERT_TRUE(detail.gate);
  EXPECT_EQ(detail.gate->round, 1);
  EXPECT_EQ(detail.gate->running, "best");
  EXPECT_EQ(detail.gate->rounds_done, 1);
  EXPECT_DOUBLE_EQ(*detail.gate->candidate_median, 15.0);
  EXPECT_DOUBLE_EQ(*detail.gate->best_median, 30.0);

  // Logs not written yet: nothing to say.
  detail = read_heartbeat_detail({scratch.path() / "missing.log"});
  EXPECT_EQ(detail.last_line, "");
  EXPECT_FALSE(detail.build || detail.tests || detail.gate);
}

TEST(HeartbeatDetail, TheLastLineIsShortAndReadable) {
  dit::test::ScratchDirectory scratch;
  const fs::path log = scratch.path() / "a.log";
  write_file(log, "first\n" + std::string(200, 'y') + "\n\n  \n");
  const std::string line = last_log_line(log);
  EXPECT_EQ(line.size(), 120u);
  EXPECT_EQ(line.substr(117), "...");
  EXPECT_EQ(last_log_line(scratch.path() / "none.log"), "");
}

}  // namespace
