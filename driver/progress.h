// The progress of `dit-ar experiment` and `dit-ar baseline` as it happens (--progress):
//   text  the readable lines (the default): one per stage when it ends
//         (`  build                       ok    7.4 s`), a heartbeat line while a long stage runs
//         (`  build                       running 30 s: [123/309] Building CXX ...`);
//   json  one JSON object per line on stdout (newline-delimited, flushed at once), and at the
//         end the decision as one more such line instead of the readable report;
//   none  no progress lines: only the final report (warnings still go to stderr).
//
// The events of --progress=json (this comment is their schema; driver/README.md repeats it).
// Every event has
//   "event"      the kind, below
//   "time"       UTC ISO-8601 with milliseconds, "2026-11-29T19:30:00.123Z"
//   "elapsed_s"  seconds since the command started (a number, millisecond resolution)
// and then, per kind (a key marked ? is absent where it does not apply):
//   "started"          "command" ("experiment" or "baseline"), "commit", "summary"?,
//                      "classification"?, "lane", "gpu": the run begins (after the checks that
//                      can refuse it with exit 2, which print to stderr and emit nothing)
//   "stage_started"    "stage" (the name the text lines give: "configure", "build",
//                      "judge build", "baseline-build", "tests (fixture, gate inputs)",
//                      "judge (fixture, quality)", "record baseline", ...), "preset"? (the
//                      CMake/CTest preset the stage runs)
//   "stage_heartbeat"  "stage", "preset"?, "seconds" (how long the stage has run, whole
//                      seconds), "last_line"? (the text heartbeat's: the last line of the
//                      stage's newest log), "build"? {"done", "total"} (ninja's last
//                      [done/total]), "tests"? {"done", "total"} (ctest's last "done/total Test
//                      #"), "gate"? {"round" (0-based, the round running or last run),
//                      "running"? ("candidate" or "best": the side whose benchmark runs now),
//                      "rounds_done"?, "candidate_median"?, "best_median"? (the medians over
//                      the rounds done of each side's process medians, in "unit"), "unit"?}
//                      (the performance gate's rounds). Every DIT_AR_HEARTBEAT_SECONDS (default
//                      15; 0: never) while a stage runs.
//   "stage_finished"   "stage", "preset"?, "status" ("ok", "FAILED" or "skipped"), "seconds",
//                      "exit_code"? (when the process exited; absent for a signal, a timeout or
//                      a program that did not start), "detail"? (a failure's description, "exit
//                      code 2", "killed by signal 9 ...", "timed out ..."; a skip's reason). A
//                      skipped stage has no stage_started, and "seconds" 0.
//   "phase"            "phase": a step of the driver's own between the stages, just done
//                      ("judge build checked", "best build checked", "candidate tree exported",
//                      "tests listed (<preset>)", "judge verified", "run checked", "recorded");
//                      no text line
//   "note", "warning"  "text": what the text output says on a line of its own
//   "decision"         the fields of the command's --json document (status, commit,
//                      classification, lane, objective, quality, reasons, exit_code, record,
//                      run_dir, ...): always the last event when the run decided. The final
//                      record is printed once, as this event, with or without --json. A command
//                      that ends without one failed (exit 1 or 2: the message is on stderr).
//   "dry_run"          `dit-ar experiment --dry-run`: the fields of its --json document.
// Stages run one after another: each stage_started is followed by that stage's heartbeats and
// then its stage_finished before the next stage starts.
// Whatever --progress says, a run with a folder keeps the same events in <run>/progress.jsonl
// (record_to), the decision last: when each stage started and ended after the command did, and
// so what the driver's own work between the stages took.
#pragma once

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driver/process.h"

namespace dit::ar {

enum class ProgressFormat { text, json, none };

// The values --progress takes, in the order its help gives them.
inline const std::vector<std::string> kProgressFormats{"text", "json", "none"};
// "text", "json" or "none"; nothing for any other name.
std::optional<ProgressFormat> parse_progress_format(const std::string& name);

// A count of steps done of a total: ninja's [done/total], ctest's done/total.
struct StepCount {
  long done = 0;
  long total = 0;
};

// Where the performance gate is, from its log (driver/performance_gate.cpp writes the lines).
struct GateProgress {
  int round = 0;                           // the round running, or the last one done
  std::string running;                     // "candidate" or "best" while its benchmark runs
  std::optional<int> rounds_done;          // rounds done so far
  std::optional<double> candidate_median;  // over the rounds done, of each side's process medians
  std::optional<double> best_median;
  std::string unit;
};

// What a heartbeat says of a running stage, read from the stage's logs.
struct HeartbeatDetail {
  std::string last_line;  // the newest log's last line (last_log_line), as the text heartbeat gives it
  std::optional<StepCount> build;
  std::optional<StepCount> tests;
  std::optional<GateProgress> gate;
};

// The last line of a log, readable: at most 120 characters of its last non-empty line, terminal
// colour sequences removed; empty when the file cannot be read.
std::string last_log_line(const std::filesystem::path& log);

// One line each: ninja's "[123/309] Building ..." (build), ctest's "12/40 Test #5: ..." (tests),
// the performance gate's "[dit-perf-gate] round 3, candidate: ..." (a round's side starting) and
// "[dit-perf-gate] round 3 done: candidate median 15.2 ms, best median 30.1 ms (4 rounds)".
std::optional<StepCount> parse_build_step(const std::string& line);
std::optional<StepCount> parse_test_step(const std::string& line);
// Updates `gate` from one of the gate's lines; false when the line is not one.
bool parse_gate_line(const std::string& line, GateProgress& gate);

// The detail of a stage whose logs are `logs`: the newest's last line, and the last build
// step, test count and gate round any of them shows (in the last 64 KiB of each).
HeartbeatDetail read_heartbeat_detail(const std::vector<std::filesystem::path>& logs);

// The reporter the pipeline and the commands print progress through. Every line is written
// whole, under a mutex, and flushed: the heartbeat's thread and the main thread never interleave.
class ProgressReporter {
 public:
  // text: the readable lines to `text_out` (stdout, or stderr under --json); json: events to
  // `json_out` (stdout); none: nothing. Warnings under none go to `warning_out`.
  ProgressReporter(ProgressFormat format, std::ostream& text_out, std::ostream& json_out, std::ostream& warning_out);

  ProgressFormat format() const { return format_; }
  bool json() const { return format_ == ProgressFormat::json; }

  // The run's first line: `text` in text mode, a "started" event with `fields` in json.
  void run_started(const nlohmann::json& fields, const std::string& text);
  void stage_started(const std::string& stage, const std::string& preset = "");
  void stage_heartbeat(const std::string& stage, const std::string& preset, long seconds,
                       const HeartbeatDetail& detail);
  // `text`, when given, is the readable line instead of the usual one.
  void stage_finished(const std::string& stage, const std::string& preset, const ProcessResult& result,
                      const std::optional<std::string>& text = std::nullopt);
  void stage_skipped(const std::string& stage, const std::string& preset, const std::string& reason);
  // A step of the driver's own just done, as a "phase" event (no text line).
  void phase(const std::string& name);
  // A line of its own ("  the goldens ... were moved to ..."), as it is printed in text mode.
  void note(const std::string& text);
  // "warning: <text>" (to `warning_out` under none).
  void warning(const std::string& text);
  // The final record: an event in json mode and in the run's record; otherwise the command
  // prints its report.
  void decision(const nlohmann::json& document);
  // From now on every event, in any format, is also appended to `file` (the run's
  // progress.jsonl), flushed per line. A file that cannot be opened is an io dit::Error.
  void record_to(const std::filesystem::path& file);
  void dry_run(const nlohmann::json& document);

 private:
  void emit(const std::string& event, nlohmann::json fields);
  void write_text(const std::string& line);

  ProgressFormat format_;
  std::ostream& text_out_;
  std::ostream& json_out_;
  std::ostream& warning_out_;
  std::chrono::steady_clock::time_point started_;
  std::ofstream record_;  // the run's progress.jsonl, once record_to named it
  std::mutex mutex_;
};

// A stage's name padded into the text lines' first column, with at least two spaces after it
// (tools/gpu-host/research-session.sh reads the lines back).
std::string stage_column(const std::string& stage);

}  // namespace dit::ar
