// libFuzzer target for the session config reader (driver/config.cpp, load_config: the format of
// config/autoresearch.json): any byte string either loads into a Config that keeps the rules the
// driver relies on, or is refused with dit::Error(invalid_file), which dit-ar reports with exit
// 2. Every accepted lane survives the trip through lane.json (lane_to_json, written as text,
// then lane_from_json, as the performance gate reads it) unchanged, and every number read is
// the number written. Anything else (a crash, undefined behaviour, another exception) is a
// finding.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "driver/config.h"
#include "fuzz/fuzz_support.h"

namespace {

using dit::fuzz::check;
using namespace dit::ar;

bool same(const Objective& a, const Objective& b) {
  return a.benchmark == b.benchmark && a.arguments == b.arguments && a.name == b.name && a.metric == b.metric &&
         a.unit == b.unit && a.direction == b.direction && a.output_tolerance == b.output_tolerance &&
         a.max_untimed_growth_seconds == b.max_untimed_growth_seconds;
}

bool same(const Guardrails& a, const Guardrails& b) {
  return a.p95_step_percent == b.p95_step_percent && a.p95_total_percent == b.p95_total_percent &&
         a.peak_memory_step_percent == b.peak_memory_step_percent &&
         a.peak_memory_total_percent == b.peak_memory_total_percent && a.p95_counter == b.p95_counter &&
         a.peak_memory_counter == b.peak_memory_counter;
}

bool same(const Lane& a, const Lane& b) {
  return a.name == b.name && a.description == b.description && a.configure_preset == b.configure_preset &&
         a.build_preset == b.build_preset && a.test_presets == b.test_presets && a.build_dir == b.build_dir &&
         same(a.objective, b.objective) && a.min_improvement_percent == b.min_improvement_percent &&
         a.max_min_improvement_percent == b.max_min_improvement_percent && a.repetitions == b.repetitions &&
         same(a.guardrails, b.guardrails) && a.record_baseline_commands == b.record_baseline_commands;
}

bool repository_path(const std::string& path) {
  if (path.empty() || path.front() == '/' || path.find('\\') != std::string::npos) return false;
  return path != ".." && path.rfind("../", 0) != 0 && path.find("/../") == std::string::npos &&
         !(path.size() >= 3 && path.compare(path.size() - 3, 3, "/..") == 0);
}

// A number the file holds, if any, equals the one read (no silent truncation or wrap-around).
void check_number(const nlohmann::json& object, const char* key, double read) {
  if (!object.is_object() || !object.contains(key)) return;
  check(object.at(key).is_number() && object.at(key).get<double>() == read, "a number read is the number written");
}

void check_lane(const Lane& lane, const nlohmann::json& written) {
  check(!lane.test_presets.empty(), "a lane has test presets");
  check(repository_path(lane.build_dir) && repository_path(lane.objective.benchmark), "lane paths stay inside");
  check(lane.repetitions >= 9, "at least 9 repetitions");
  check(std::isfinite(lane.min_improvement_percent) && lane.min_improvement_percent >= 0, "min improvement >= 0");
  check(std::isfinite(lane.max_min_improvement_percent) &&
            lane.max_min_improvement_percent >= lane.min_improvement_percent,
        "the cap on the minimum improvement is at least the minimum");
  const Objective& objective = lane.objective;
  check(objective.unit == "ns" || objective.unit == "us" || objective.unit == "ms" || objective.unit == "s",
        "a known unit");
  check(std::isfinite(objective.output_tolerance) && objective.output_tolerance >= 0, "output tolerance >= 0");
  check(std::isfinite(objective.max_untimed_growth_seconds) && objective.max_untimed_growth_seconds >= 0,
        "untimed growth >= 0");
  for (double limit : {lane.guardrails.p95_step_percent, lane.guardrails.p95_total_percent,
                       lane.guardrails.peak_memory_step_percent, lane.guardrails.peak_memory_total_percent})
    check(std::isfinite(limit) && limit >= 0, "guardrails are finite and >= 0");
  for (const auto& command : lane.record_baseline_commands) check(!command.empty(), "commands are not empty");

  check_number(written, "repetitions", lane.repetitions);
  check_number(written, "min_improvement_percent", lane.min_improvement_percent);
  check_number(written, "max_min_improvement_percent", lane.max_min_improvement_percent);
  if (written.contains("objective")) {
    check_number(written.at("objective"), "output_tolerance", objective.output_tolerance);
    check_number(written.at("objective"), "max_untimed_growth_seconds", objective.max_untimed_growth_seconds);
  }

  // The performance gate's lane.json: written as text by the driver, read back by the gate.
  nlohmann::json lane_json = lane_to_json(lane, lane.min_improvement_percent);
  lane_json["mode"] = "compare";
  const Lane read_back = lane_from_json(nlohmann::json::parse(lane_json.dump(2)), "lane.json");
  check(same(read_back, lane), "a lane reads back from lane.json unchanged");
}

void exercise(const Config& config, const nlohmann::json& written) {
  check(config.source_dir == "/repository", "the config keeps its anchor");
  check(!config.project.empty() || written.at("project").get<std::string>().empty(), "the project is read");
  check(!config.branch_prefix.empty(), "the branch prefix is not empty");
  check(!config.lanes.empty(), "there is a lane");
  check(&config.lane(config.default_lane) == &config.lanes.at(config.default_lane), "the default lane exists");
  try {
    config.lane(std::string("\0none", 5));
    check(false, "an unknown lane is refused");
  } catch (const dit::Error& error) {
    check(error.kind() == dit::ErrorKind::invalid_argument, "an unknown lane is an invalid_argument error");
  }
  check(!config.mutable_paths.empty(), "there is a mutable path");
  for (const auto& path : config.mutable_paths) {
    check(repository_path(path), "mutable paths stay inside the repository");
    for (const auto& fixed : config.fixed_paths) {
      check(!path_within(path, fixed) && !path_within(fixed, path), "mutable and fixed paths do not overlap");
    }
  }
  for (const auto& path : config.fixed_paths) check(repository_path(path), "fixed paths stay inside");
  check(repository_path(config.contract), "the contract lies inside the repository");
  check(!config.judge.targets.empty() && !config.judge.files.empty(), "the judge builds something");
  for (const auto& file : config.judge.files) check(repository_path(file), "judge files stay inside");
  for (int timeout :
       {config.timeouts.configure, config.timeouts.build, config.timeouts.test, config.timeouts.record_baseline})
    check(timeout >= 1, "timeouts are at least a second");
  if (written.contains("timeouts_seconds")) {
    const nlohmann::json& timeouts = written.at("timeouts_seconds");
    check_number(timeouts, "configure", config.timeouts.configure);
    check_number(timeouts, "build", config.timeouts.build);
    check_number(timeouts, "test", config.timeouts.test);
    check_number(timeouts, "record_baseline", config.timeouts.record_baseline);
  }
  for (const auto& command : config.record_baseline_commands) check(!command.empty(), "commands are not empty");
  for (const auto& [name, lane] : config.lanes) {
    check(lane.name == name, "a lane is named by its key");
    check_lane(lane, written.at("lanes").at(name));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = dit::fuzz::as_text(data, size);
  const std::filesystem::path path = dit::fuzz::scratch_dir() / "autoresearch.json";
  dit::fuzz::write_bytes(path, text);
  Config config;
  try {
    config = load_config(path, "/repository");
  } catch (const dit::Error& error) {
    check(error.kind() == dit::ErrorKind::invalid_file, "a refused config is an invalid_file error");
    return 0;
  }
  check(config.path == path, "the config keeps its path");
  exercise(config, nlohmann::json::parse(text));  // past the load, any exception is a finding
  return 0;
}
