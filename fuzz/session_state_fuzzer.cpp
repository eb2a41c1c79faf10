// libFuzzer target for the session's JSON state files (driver/state_directory.cpp and
// driver/session.cpp): the input is at once session.json, best.json, inflight.json and
// best/built.json of a state directory. Each reader and each consumer of what it read (the
// lock check, the effective minimum improvement, the run request with the judge's and the
// goldens' hashes and the test-set signature, the recovery of an interrupted run, `summary`)
// either works or refuses with dit::Error(invalid_file), which dit-ar reports with exit 2.
// What the driver writes reads back as written: session.json, and inflight.json in both of its
// phases. Anything else (a crash, undefined behaviour, nlohmann::json's type_error, out_of_range
// from .at(), another exception) is a finding.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/files.h"
#include "driver/ctest_results.h"
#include "driver/progress.h"
#include "driver/recording.h"
#include "driver/session.h"
#include "driver/state_directory.h"
#include "fuzz/fuzz_support.h"

namespace {

using dit::fuzz::check;
using dit::fuzz::valid_utf8;
using namespace dit::ar;
namespace fs = std::filesystem;

template <typename Use>
void works_or_refuses(Use use) {
  try {
    use();
  } catch (const dit::Error& error) {
    check(error.kind() == dit::ErrorKind::invalid_file, "a damaged state file is an invalid_file error");
  }
}

// A state file read through core's read_json_file. Known gap, outside the driver: the JSON
// parser throws out_of_range 406 for a number beyond a double's range (1e999) and
// read_json_file maps only syntax errors to dit::Error, so that escapes as an internal error;
// it is tolerated here, and only here, until read_json_file maps it too.
template <typename Read>
void read_state(Read read) {
  try {
    works_or_refuses(read);
  } catch (const nlohmann::json::out_of_range& error) {
    check(error.id == 406, "only a number overflow escapes read_json_file");
  }
}

// Whether every number in `value` is finite (JSON text cannot hold the others: written, they
// become null).
bool finite_numbers(const nlohmann::json& value) {
  if (value.is_number_float()) return std::isfinite(value.get<double>());
  if (value.is_structured()) {
    for (const auto& item : value) {
      if (!finite_numbers(item)) return false;
    }
  }
  return true;
}

Config fixture_config(const fs::path& state_dir) {
  Config config;
  config.source_dir = "/repository";
  config.state_dir = state_dir;
  config.project = "fuzz";
  config.default_lane = "cpu";
  Lane lane;
  lane.name = "cpu";
  lane.configure_preset = "cpu";
  lane.build_preset = "cpu";
  lane.test_presets = {"cpu"};
  lane.build_dir = "build/cpu";
  lane.objective.benchmark = "bench/bench_cpu";
  lane.objective.name = "BM_Cpu";
  config.lanes.emplace("cpu", lane);
  return config;
}

void check_session(SessionContext& context, const nlohmann::json& session) {
  const Lane& lane = context.config.lanes.at("cpu");
  for (const char* field : {"tag", "branch", "lane", "init_commit"}) check(session.at(field).is_string(), "fields");
  const nlohmann::json& locks = session.at("locks");
  check(lock_violations(locks, locks).empty(), "locks equal themselves");
  size_t present = 0;
  for (const auto& [path, id] : locks.items()) present += !id.is_null();
  const auto violations = lock_violations(locks, nlohmann::json::object());
  check(violations.size() == present, "every present lock is missed by none");
  for (const auto& violation : violations) check(valid_utf8(violation), "violations are valid UTF-8");

  works_or_refuses([&] {
    const double minimum = effective_min_improvement(session, lane);
    check(std::isfinite(minimum) && minimum >= 0, "the minimum improvement is a percentage");
  });
  if (session.contains("judge")) works_or_refuses([&] { (void)session_judge_files(session); });
  works_or_refuses([&] {
    nlohmann::json inflight = nlohmann::json::object();
    std::ostringstream text, lines, warnings;
    ProgressReporter progress(ProgressFormat::text, text, lines, warnings);
    const RunRequest request =
        session_run_request(context, lane, context.state.runs_dir() / "0001-fuzz", inflight, progress);
    check(request.lane == &lane && request.config == &context.config, "the request is for the session's lane");
    if (request.test_signature) {
      const nlohmann::json& signatures = *request.test_signature;
      const nlohmann::json expected =
          signatures.is_object() && signatures.contains("cpu") ? signatures.at("cpu") : nlohmann::json::array();
      for (const auto& difference : signature_differences(expected, test_signature({}, "/b", "/s")))
        check(valid_utf8(difference), "signature differences are valid UTF-8");
    }
  });
  std::optional<nlohmann::json> best;
  read_state([&] { best = context.state.load_best(); });
  for (bool json : {false, true}) {
    works_or_refuses([&] {
      std::ostringstream out;
      print_summary(out, lane, session, {}, best, 20, json);
      if (json) check(nlohmann::json::accept(out.str()), "summary --json prints JSON");
    });
  }
  // What the driver stores, it loads back unchanged.
  if (finite_numbers(session)) {
    context.state.store_session(session);
    check(context.state.load_session() == session, "session.json reads back as written");
  }
}

void check_inflight(const StateDirectory& state, const nlohmann::json& inflight) {
  InflightRun run;
  try {
    run = parse_inflight(inflight, "inflight.json");
  } catch (const dit::Error& error) {
    check(error.kind() == dit::ErrorKind::invalid_file, "a damaged inflight.json is an invalid_file error");
    return;
  }
  const fs::path run_dir(run.run_dir);
  check(run_dir.is_relative(), "the run folder is relative");
  for (const auto& part : run_dir) check(part != "..", "the run folder stays in the state directory");
  check(run.process_group >= 0, "a process group id is not negative");
  check(!run.record || run.phase == "recording", "only a recording has a record");

  // Both phases as the experiment and baseline commands store them.
  nlohmann::json running{{"phase", "running"},
                         {"kind", run.kind},
                         {"commit", run.commit},
                         {"run_dir", run.run_dir},
                         {"started", "2026-01-01T00:00:00Z"},
                         {"driver_pid", 4242}};
  if (run.process_group > 0) running["process_group"] = run.process_group;
  state.store_inflight(running);
  const InflightRun again = parse_inflight(*state.load_inflight(), "inflight.json");
  check(again.phase == "running" && again.kind == run.kind && again.commit == run.commit &&
            again.run_dir == run.run_dir && again.process_group == run.process_group && !again.record,
        "a running inflight.json reads back");
  if (run.record) {
    const nlohmann::json record = run.record->to_json();
    state.store_inflight({{"phase", "recording"}, {"kind", run.kind}, {"record", record}});
    const InflightRun recording = parse_inflight(*state.load_inflight(), "inflight.json");
    check(recording.record.has_value(), "a recording inflight.json has its record");
    if (finite_numbers(record)) check(recording.record->to_json() == record, "the record reads back as written");
  }
  state.clear_inflight();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = dit::fuzz::as_text(data, size);
  const fs::path root = dit::fuzz::scratch_dir() / "state";
  fs::remove_all(root);
  fs::create_directories(root / "best");
  StateDirectory state(root);
  for (const fs::path& file : {state.session_file(), state.best_file(), state.inflight_file(), state.best_built_file()})
    dit::fuzz::write_bytes(file, text);

  std::optional<nlohmann::json> inflight;
  read_state([&] { inflight = state.load_inflight(); });
  if (inflight) check_inflight(state, *inflight);
  read_state([&] { (void)best_built_commit(dit::read_json_file(state.best_built_file())); });

  std::optional<nlohmann::json> session;
  read_state([&] { session = state.load_session(); });
  if (session) {
    SessionContext context{fixture_config(root), "/repository", nullptr, state};
    check_session(context, *session);
  }
  return 0;
}
