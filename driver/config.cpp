// Loads config/autoresearch.json into dit::ar::Config, rejecting anything malformed with the
// file, the field and the reason, so a typo never turns into a silently different session.
#include "driver/config.h"

#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "core/files.h"
#include "core/error.h"

namespace dit::ar {

namespace {

using nlohmann::json;

// The baseline's A/A noise run: with fewer interleaved runs per side, the half interquartile
// range it measures the noise by rests on two or three samples.
constexpr int kMinimumRepetitions = 9;
// The performance gate's ceiling: never fewer chances than the nine fixed rounds it used to run;
// a lane that needs more than a hundred is too noisy for the gate to be worth its time.
constexpr int kMinimumMaxRounds = 9;
constexpr int kMaximumMaxRounds = 100;

[[noreturn]] void fail(const std::string& where, const std::string& message) {
  throw Error(ErrorKind::invalid_file, where + ": " + message);
}

// Field readers: each names the full path of the field ("lanes.cpu.objective.name") on error.
const json* find(const json& object, const std::string& key) {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string read_string(const json& object, const std::string& key, const std::string& where,
                        std::optional<std::string> fallback = std::nullopt) {
  const json* value = find(object, key);
  if (!value) {
    if (fallback) return *fallback;
    fail(where + "." + key, "missing (a string is required)");
  }
  if (!value->is_string()) fail(where + "." + key, "must be a string, not " + std::string(value->type_name()));
  return value->get<std::string>();
}

double read_number(const json& object, const std::string& key, const std::string& where, double fallback,
                   double minimum) {
  const json* value = find(object, key);
  if (!value) return fallback;
  if (!value->is_number()) fail(where + "." + key, "must be a number, not " + std::string(value->type_name()));
  double number = value->get<double>();
  // lane.json (JSON text) could not hold another: it would read back as null.
  if (!std::isfinite(number)) fail(where + "." + key, "must be a finite number");
  if (number < minimum) fail(where + "." + key, "must be at least " + std::to_string(minimum));
  return number;
}

int read_int(const json& object, const std::string& key, const std::string& where, int fallback, int minimum) {
  const json* value = find(object, key);
  if (!value) return fallback;
  if (!value->is_number_integer()) fail(where + "." + key, "must be an integer");
  // Checked before narrowing: 4294967305 must not read as 9. An unsigned value beyond
  // std::int64_t reads as a negative one and is refused below.
  const std::int64_t wide = value->get<std::int64_t>();
  if (wide > std::numeric_limits<int>::max())
    fail(where + "." + key, "must be at most " + std::to_string(std::numeric_limits<int>::max()));
  if (wide < minimum) fail(where + "." + key, "must be at least " + std::to_string(minimum));
  return static_cast<int>(wide);
}

bool read_bool(const json& object, const std::string& key, const std::string& where, bool fallback) {
  const json* value = find(object, key);
  if (!value) return fallback;
  if (!value->is_boolean()) fail(where + "." + key, "must be true or false");
  return value->get<bool>();
}

std::vector<std::string> read_strings(const json& object, const std::string& key, const std::string& where,
                                      bool required) {
  const json* value = find(object, key);
  if (!value) {
    if (required) fail(where + "." + key, "missing (a list of strings is required)");
    return {};
  }
  if (!value->is_array()) fail(where + "." + key, "must be a list of strings");
  std::vector<std::string> strings;
  for (std::size_t i = 0; i < value->size(); ++i) {
    if (!(*value)[i].is_string()) fail(where + "." + key + "[" + std::to_string(i) + "]", "must be a string");
    strings.push_back((*value)[i].get<std::string>());
  }
  return strings;
}

const json& read_object(const json& object, const std::string& key, const std::string& where) {
  const json* value = find(object, key);
  if (!value) fail(where + "." + key, "missing (an object is required)");
  if (!value->is_object()) fail(where + "." + key, "must be an object");
  return *value;
}

void reject_unknown_keys(const json& object, const std::string& where, const std::set<std::string>& known) {
  for (const auto& [key, value] : object.items()) {
    if (!known.count(key)) {
      std::string list;
      for (const auto& name : known) list += (list.empty() ? "" : ", ") + name;
      fail(where + "." + key, "unknown field (known: " + list + ")");
    }
  }
}

// Repository-relative paths: no absolute paths, no "..", forward slashes.
std::string checked_repository_path(const std::string& path, const std::string& where) {
  if (path.empty()) fail(where, "empty path");
  if (path.front() == '/') fail(where, "'" + path + "' must be relative to the repository root");
  std::stringstream parts(path);
  for (std::string part; std::getline(parts, part, '/');) {
    if (part == "..") fail(where, "'" + path + "' must not leave the repository");
  }
  if (path.find('\\') != std::string::npos) fail(where, "'" + path + "' must use '/' separators");
  return path;
}

Direction parse_direction(const std::string& text, const std::string& where) {
  if (text == "lower") return Direction::lower;
  if (text == "higher") return Direction::higher;
  fail(where, "'" + text + "' is not a direction (lower or higher)");
}

Objective parse_objective(const json& object, const std::string& where) {
  reject_unknown_keys(object, where,
                      {"benchmark", "arguments", "name", "metric", "unit", "direction", "output_tolerance",
                       "exact_output_tolerance", "max_untimed_growth_seconds"});
  Objective objective;
  objective.benchmark = checked_repository_path(read_string(object, "benchmark", where), where + ".benchmark");
  objective.arguments = read_strings(object, "arguments", where, false);
  objective.name = read_string(object, "name", where);
  objective.metric = read_string(object, "metric", where, objective.metric);
  objective.unit = read_string(object, "unit", where, objective.unit);
  static const std::set<std::string> units{"ns", "us", "ms", "s"};
  if (!units.count(objective.unit)) fail(where + ".unit", "'" + objective.unit + "' is not one of ns, us, ms, s");
  objective.direction = parse_direction(read_string(object, "direction", where, "lower"), where + ".direction");
  objective.output_tolerance = read_number(object, "output_tolerance", where, objective.output_tolerance, 0.0);
  objective.exact_output_tolerance =
      read_number(object, "exact_output_tolerance", where, objective.exact_output_tolerance, 0.0);
  objective.max_untimed_growth_seconds =
      read_number(object, "max_untimed_growth_seconds", where, objective.max_untimed_growth_seconds, 0.0);
  return objective;
}

Guardrails parse_guardrails(const json& object, const std::string& where) {
  reject_unknown_keys(object, where,
                      {"p95_step_percent", "p95_total_percent", "peak_memory_step_percent", "peak_memory_total_percent",
                       "p95_counter", "peak_memory_counter"});
  Guardrails guardrails;
  guardrails.p95_step_percent = read_number(object, "p95_step_percent", where, guardrails.p95_step_percent, 0);
  guardrails.p95_total_percent = read_number(object, "p95_total_percent", where, guardrails.p95_total_percent, 0);
  guardrails.peak_memory_step_percent =
      read_number(object, "peak_memory_step_percent", where, guardrails.peak_memory_step_percent, 0);
  guardrails.peak_memory_total_percent =
      read_number(object, "peak_memory_total_percent", where, guardrails.peak_memory_total_percent, 0);
  guardrails.p95_counter = read_string(object, "p95_counter", where, "");
  guardrails.peak_memory_counter = read_string(object, "peak_memory_counter", where, "");
  return guardrails;
}

// A list of commands, each a non-empty list of strings.
std::vector<std::vector<std::string>> parse_commands(const json& commands, const std::string& at) {
  if (!commands.is_array()) fail(at, "must be a list of commands (each a list of strings)");
  std::vector<std::vector<std::string>> parsed;
  for (std::size_t i = 0; i < commands.size(); ++i) {
    const json& command = commands[i];
    const std::string item = at + "[" + std::to_string(i) + "]";
    if (!command.is_array() || command.empty()) fail(item, "must be a non-empty list of strings");
    std::vector<std::string> argv;
    for (const auto& argument : command) {
      if (!argument.is_string()) fail(item, "must be a list of strings");
      argv.push_back(argument.get<std::string>());
    }
    parsed.push_back(std::move(argv));
  }
  return parsed;
}

}  // namespace

Lane lane_from_json(const json& object, const std::string& where) {
  if (!object.is_object()) fail(where, "must be an object");
  reject_unknown_keys(
      object, where,
      {"name", "description", "configure_preset", "build_preset", "test_presets", "build_dir", "gpu", "objective",
       "min_improvement_percent", "max_min_improvement_percent", "repetitions", "max_rounds", "guardrails", "mode",
       "record_baseline_commands", "refused_classifications", "gate_input_targets"});
  Lane lane;
  lane.name = read_string(object, "name", where, "");
  lane.description = read_string(object, "description", where, "");
  lane.configure_preset = read_string(object, "configure_preset", where);
  lane.build_preset = read_string(object, "build_preset", where, lane.configure_preset);
  lane.test_presets = read_strings(object, "test_presets", where, true);
  if (lane.test_presets.empty()) fail(where + ".test_presets", "must name at least one test preset");
  lane.build_dir = checked_repository_path(read_string(object, "build_dir", where, "build/" + lane.configure_preset),
                                           where + ".build_dir");
  lane.gate_input_targets = read_strings(object, "gate_input_targets", where, false);
  for (const auto& target : lane.gate_input_targets)
    if (target.empty() || target.front() == '-')
      fail(where + ".gate_input_targets", "'" + target + "' is not a build target name");
  lane.gpu = read_bool(object, "gpu", where, true);
  lane.objective = parse_objective(read_object(object, "objective", where), where + ".objective");
  lane.min_improvement_percent = read_number(object, "min_improvement_percent", where, 1.0, 0.0);
  lane.max_min_improvement_percent =
      read_number(object, "max_min_improvement_percent", where, std::max(10.0, lane.min_improvement_percent), 0.0);
  if (lane.max_min_improvement_percent < lane.min_improvement_percent)
    fail(where + ".max_min_improvement_percent", "must be at least min_improvement_percent");
  lane.repetitions = read_int(object, "repetitions", where, kMinimumRepetitions, kMinimumRepetitions);
  lane.max_rounds = read_int(object, "max_rounds", where, lane.max_rounds, kMinimumMaxRounds);
  if (lane.max_rounds > kMaximumMaxRounds)
    fail(where + ".max_rounds", "must be at most " + std::to_string(kMaximumMaxRounds));
  if (const json* guardrails = find(object, "guardrails")) {
    if (!guardrails->is_object()) fail(where + ".guardrails", "must be an object");
    lane.guardrails = parse_guardrails(*guardrails, where + ".guardrails");
  }
  if (const json* commands = find(object, "record_baseline_commands"))
    lane.record_baseline_commands = parse_commands(*commands, where + ".record_baseline_commands");
  if (const json* refused = find(object, "refused_classifications")) {
    const std::string at = where + ".refused_classifications";
    if (!refused->is_object()) fail(at, "must map classifications to the reason each is refused");
    static const std::set<std::string> known{"exact", "numerical", "approximate", "quantization"};
    for (const auto& [name, reason] : refused->items()) {
      if (!known.count(name)) fail(at + "." + name, "is not exact, numerical, approximate or quantization");
      if (!reason.is_string() || reason.get<std::string>().empty()) fail(at + "." + name, "must be a non-empty reason");
      lane.refused_classifications[name] = reason.get<std::string>();
    }
  }
  return lane;
}

Config parse_config(const json& document, const std::filesystem::path& path, const std::filesystem::path& source_dir) {
  const std::string where = path.string();
  if (!document.is_object()) fail(where, "the top level must be a JSON object");
  reject_unknown_keys(
      document, where,
      {"$comment", "project", "state_dir", "branch_prefix", "default_lane", "mutable_paths", "fixed_paths", "contract",
       "knowledge_dir", "timeouts_seconds", "quantization", "judge", "record_baseline_commands", "lanes"});
  Config config;
  config.path = path;
  config.source_dir = source_dir;
  config.project = read_string(document, "project", where);
  config.state_dir = source_dir / checked_repository_path(read_string(document, "state_dir", where, ".autoresearch"),
                                                          where + ".state_dir");
  config.branch_prefix = read_string(document, "branch_prefix", where, config.branch_prefix);
  if (config.branch_prefix.empty()) fail(where + ".branch_prefix", "must not be empty");

  for (const auto& entry : read_strings(document, "mutable_paths", where, true)) {
    config.mutable_paths.push_back(checked_repository_path(entry, where + ".mutable_paths"));
  }
  if (config.mutable_paths.empty()) fail(where + ".mutable_paths", "must name at least one path");
  for (const auto& entry : read_strings(document, "fixed_paths", where, true)) {
    config.fixed_paths.push_back(checked_repository_path(entry, where + ".fixed_paths"));
  }
  for (const auto& mutable_path : config.mutable_paths) {
    for (const auto& fixed_path : config.fixed_paths) {
      if (path_within(mutable_path, fixed_path) || path_within(fixed_path, mutable_path)) {
        fail(where, "mutable path '" + mutable_path + "' overlaps fixed path '" + fixed_path + "'");
      }
    }
  }
  config.contract = checked_repository_path(read_string(document, "contract", where), where + ".contract");
  config.knowledge_dir = read_string(document, "knowledge_dir", where, "knowledge/");

  if (const json* timeouts = find(document, "timeouts_seconds")) {
    const std::string at = where + ".timeouts_seconds";
    if (!timeouts->is_object()) fail(at, "must be an object");
    reject_unknown_keys(*timeouts, at, {"configure", "build", "test", "record_baseline"});
    config.timeouts.configure = read_int(*timeouts, "configure", at, config.timeouts.configure, 1);
    config.timeouts.build = read_int(*timeouts, "build", at, config.timeouts.build, 1);
    config.timeouts.test = read_int(*timeouts, "test", at, config.timeouts.test, 1);
    config.timeouts.record_baseline = read_int(*timeouts, "record_baseline", at, config.timeouts.record_baseline, 1);
  }
  if (const json* quantization = find(document, "quantization")) {
    const std::string at = where + ".quantization";
    if (!quantization->is_object()) fail(at, "must be an object");
    reject_unknown_keys(*quantization, at, {"allowed"});
    config.quantization.allowed = read_bool(*quantization, "allowed", at, true);
  }
  if (const json* judge = find(document, "judge")) {
    const std::string at = where + ".judge";
    if (!judge->is_object()) fail(at, "must be an object");
    reject_unknown_keys(*judge, at, {"targets", "files"});
    config.judge.targets = read_strings(*judge, "targets", at, true);
    if (config.judge.targets.empty()) fail(at + ".targets", "must name at least one target");
    for (const auto& file : read_strings(*judge, "files", at, true))
      config.judge.files.push_back(checked_repository_path(file, at + ".files"));
    if (config.judge.files.empty()) fail(at + ".files", "must name at least one file");
  } else {
    fail(
        where,
        "needs `judge` ({\"targets\": [...], \"files\": [...]}): what the driver builds from the locked tree to judge");
  }
  if (const json* commands = find(document, "record_baseline_commands"))
    config.record_baseline_commands = parse_commands(*commands, where + ".record_baseline_commands");

  const json& lanes = read_object(document, "lanes", where);
  if (lanes.empty()) fail(where + ".lanes", "must define at least one lane");
  for (const auto& [name, lane_json] : lanes.items()) {
    Lane lane = lane_from_json(lane_json, where + ".lanes." + name);
    lane.name = name;
    config.lanes.emplace(name, std::move(lane));
  }
  config.default_lane = read_string(document, "default_lane", where);
  if (!config.lanes.count(config.default_lane)) {
    fail(where + ".default_lane", "'" + config.default_lane + "' is not one of the lanes");
  }
  return config;
}

Config load_config(const std::filesystem::path& path, const std::filesystem::path& source_dir) {
  json document;
  try {
    document = read_json_file(path);
  } catch (const json::exception& error) {
    // read_json_file names syntax errors; the JSON parser also throws out_of_range for a number
    // beyond a double's range (1e999).
    fail(path.string(), std::string("not valid JSON (") + error.what() + ")");
  }
  return parse_config(document, path, source_dir);
}

const Lane& Config::lane(const std::string& name) const {
  auto it = lanes.find(name);
  if (it == lanes.end()) {
    std::string known;
    for (const auto& [lane_name, lane] : lanes) known += (known.empty() ? "" : ", ") + lane_name;
    throw Error(ErrorKind::invalid_argument, "no lane '" + name + "' in " + path.string() + " (lanes: " + known + ")");
  }
  return it->second;
}

long experiment_limit_seconds(const Config& config, const Lane& lane) {
  const Timeouts& limits = config.timeouts;
  const long presets = static_cast<long>(lane.test_presets.size());
  return 3L * limits.configure + 4L * limits.build + 2L * presets * limits.configure + limits.test;
}

nlohmann::json lane_to_json(const Lane& lane, double effective_min_improvement_percent) {
  return {
      {"name", lane.name},
      {"description", lane.description},
      {"configure_preset", lane.configure_preset},
      {"build_preset", lane.build_preset},
      {"test_presets", lane.test_presets},
      {"build_dir", lane.build_dir},
      {"gpu", lane.gpu},
      {"objective",
       {{"benchmark", lane.objective.benchmark},
        {"arguments", lane.objective.arguments},
        {"name", lane.objective.name},
        {"metric", lane.objective.metric},
        {"unit", lane.objective.unit},
        {"direction", to_string(lane.objective.direction)},
        {"output_tolerance", lane.objective.output_tolerance},
        {"exact_output_tolerance", lane.objective.exact_output_tolerance},
        {"max_untimed_growth_seconds", lane.objective.max_untimed_growth_seconds}}},
      {"min_improvement_percent", effective_min_improvement_percent},
      {"max_min_improvement_percent", lane.max_min_improvement_percent},
      {"repetitions", lane.repetitions},
      {"max_rounds", lane.max_rounds},
      {"guardrails",
       {{"p95_step_percent", lane.guardrails.p95_step_percent},
        {"p95_total_percent", lane.guardrails.p95_total_percent},
        {"peak_memory_step_percent", lane.guardrails.peak_memory_step_percent},
        {"peak_memory_total_percent", lane.guardrails.peak_memory_total_percent},
        {"p95_counter", lane.guardrails.p95_counter},
        {"peak_memory_counter", lane.guardrails.peak_memory_counter}}},
      {"record_baseline_commands", lane.record_baseline_commands},
      {"refused_classifications", lane.refused_classifications},
      {"gate_input_targets", lane.gate_input_targets},
  };
}

bool path_within(const std::string& path, const std::string& prefix) {
  std::string folder = prefix;
  while (!folder.empty() && folder.back() == '/') folder.pop_back();
  if (folder.empty()) return true;
  if (path == folder) return true;
  return path.size() > folder.size() && path.compare(0, folder.size(), folder) == 0 && path[folder.size()] == '/';
}

std::string to_string(Direction direction) { return direction == Direction::lower ? "lower" : "higher"; }

}  // namespace dit::ar
