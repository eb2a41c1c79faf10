// The stages of a run as child processes; a stage that fails or times out ends the run.
#include "driver/pipeline.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>
#include <tuple>

#include "core/error.h"
#include "core/files.h"
#include "core/sha256.h"
#include "driver/ctest_results.h"
#include "driver/process.h"
#include "driver/sandbox.h"

namespace dit::ar {

namespace fs = std::filesystem;

namespace {

// out_of_space_evidence: a log that reports ENOSPC counts below the larger of this and 1% of the
// file system; below kFullBytes the file system counts as full without one.
constexpr unsigned long long kShortOfSpaceBytes = 64ull << 20;
constexpr unsigned long long kFullBytes = 4ull << 20;

// The request's reporter; a request without one reports nothing.
ProgressReporter& progress(const RunRequest& request) {
  static std::ostringstream discarded;
  static ProgressReporter none(ProgressFormat::none, discarded, discarded, discarded);
  return request.progress ? *request.progress : none;
}

void report_stage(const RunRequest& request, const std::string& stage, const std::string& preset,
                  const ProcessResult& result) {
  progress(request).stage_finished(stage, preset, result);
}

// While a stage runs, every request.heartbeat_seconds a heartbeat saying how long it has run
// and what its logs show (read_heartbeat_detail: the last line of the most recently written of
// them, ninja's "[123/309] Building ...", ctest's "12/40 Test #5: ...", the performance gate's
// rounds), so no long stage is silent. The stage's own result follows when it ends, as before.
// Constructing it reports the stage's start.
class Heartbeat {
 public:
  Heartbeat(const RunRequest& request, std::string stage, std::string preset, std::vector<fs::path> logs) {
    progress(request).stage_started(stage, preset);
    if (!request.progress || request.heartbeat_seconds <= 0) return;
    thread_ =
        std::thread([this, &request, stage = std::move(stage), preset = std::move(preset), logs = std::move(logs)] {
          const auto started = std::chrono::steady_clock::now();
          std::unique_lock lock(mutex_);
          while (!cv_.wait_for(lock, std::chrono::seconds(request.heartbeat_seconds), [this] { return stop_; })) {
            const auto seconds =
                std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started).count();
            request.progress->stage_heartbeat(stage, preset, static_cast<long>(seconds), read_heartbeat_detail(logs));
          }
        });
  }
  ~Heartbeat() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// Which view a stage runs in.
enum class View {
  build,       // the candidate's configure and build: its build folder writable, nothing DIT_*
  tests,       // the candidate's tests: its build and output folders writable, DIT_OUTPUT_DIR only
  judge,       // the judge's tests, from the judge's build: the judge's variables, no sandbox
  judge_build  // configuring and building the judge from the locked tree
};

fs::path build_folder(const RunRequest& request) { return request.source_dir / request.lane->build_dir; }
fs::path outputs_folder(const RunRequest& request) { return request.run_dir / "outputs"; }
fs::path candidate_folder(const RunRequest& request) { return request.run_dir / "candidate"; }
fs::path judge_folder(const RunRequest& request) { return request.run_dir / "judge"; }

std::vector<fs::path> hidden_from_candidates(const RunRequest& request) {
  std::vector<fs::path> hidden = request.hidden;
  hidden.push_back(judge_folder(request));
  return hidden;
}

ProcessResult run_stage(const RunRequest& request, View view, std::vector<std::string> argv, const fs::path& log,
                        int timeout_seconds, std::optional<fs::path> stdout_path = std::nullopt) {
  ProcessOptions options;
  options.working_dir = request.source_dir;
  options.drop_inherited_prefixes = {"DIT_"};
  options.log_path = log;
  options.stdout_path = std::move(stdout_path);
  options.timeout = std::chrono::seconds(timeout_seconds);
  options.on_start = request.on_child;
  SandboxView sandbox;
  switch (view) {
    case View::build:
      options.environment = {{"CCACHE_READONLY", "1"}, {"CUDA_CACHE_PATH", request.cache_dir.string()}};
      if (!request.compiler_cache) options.environment["CCACHE_DISABLE"] = "1";
      sandbox.writable = {build_folder(request), request.cache_dir};
      sandbox.hidden = hidden_from_candidates(request);
      sandbox.temp_dir = request.run_dir / "tmp" / "build";
      break;
    case View::tests:
      options.environment = {{"DIT_OUTPUT_DIR", outputs_folder(request).string()},
                             {"CCACHE_READONLY", "1"},
                             {"CUDA_CACHE_PATH", request.cache_dir.string()}};
      sandbox.writable = {build_folder(request), outputs_folder(request), candidate_folder(request), request.cache_dir};
      sandbox.hidden = hidden_from_candidates(request);
      sandbox.temp_dir = request.run_dir / "tmp" / "tests";
      break;
    case View::judge:
      options.working_dir = request.judge_source_dir;
      options.environment = {{"DIT_OUTPUT_DIR", outputs_folder(request).string()},
                             {"DIT_JUDGE_DIR", judge_folder(request).string()},
                             {"DIT_BASELINE_DIR", request.baseline_dir.string()},
                             {"DIT_CLASSIFICATION", request.classification},
                             {"DIT_LANE", request.lane->name}};
      break;
    case View::judge_build:
      // The judge compiles every object itself: the shared compiler cache is writable by anything
      // that ran unsandboxed, a candidate included.
      options.working_dir = request.judge_source_dir;
      options.environment = {{"CCACHE_DISABLE", "1"}};
      break;
  }
  if (view == View::build || view == View::tests) {
    std::vector<std::string> prefix = sandbox_prefix(sandbox);
    argv.insert(argv.begin(), prefix.begin(), prefix.end());
  }
  options.argv = std::move(argv);
  return run_process(options);
}

// The lines of a sandboxed stage's log where the sandbox refused a write (at most `limit`).
std::vector<std::string> sandbox_refusals(const fs::path& log, std::size_t limit = 3) {
  std::vector<std::string> refusals;
  if (!sandbox_status().available || !fs::exists(log)) return refusals;
  std::istringstream lines(read_text_file(log));
  for (std::string line; std::getline(lines, line) && refusals.size() < limit;) {
    if (line.find("Read-only file system") != std::string::npos) refusals.push_back(line.substr(0, 300));
  }
  return refusals;
}

std::optional<std::string> stage_failure(const std::string& stage, const ProcessResult& result, const fs::path& log) {
  if (result.succeeded()) return std::nullopt;
  std::string failure =
      stage + " " + (result.timed_out ? "timed out" : "failed") + ": " + result.describe() + "; see " + log.string();
  auto refusals = sandbox_refusals(log, 1);
  if (!refusals.empty()) failure += "; the sandbox refused a write outside the stage's own folders: " + refusals[0];
  return failure;
}

std::string regex_escaped(const std::string& text) {
  std::string escaped;
  for (char c : text) {
    if (std::string("\\^$.|?*+()[]{}").find(c) != std::string::npos) escaped += '\\';
    escaped += c;
  }
  return escaped;
}

std::string names_regex(const std::vector<SelectedTest>& tests) {
  std::string alternatives;
  for (const auto& test : tests) {
    if (!alternatives.empty()) alternatives += '|';
    alternatives += regex_escaped(test.name);
  }
  return "^(" + alternatives + ")$";
}

// A side of the performance gate: its build, its output folder and the sandbox it runs in.
nlohmann::json perf_side(const RunRequest& request, const fs::path& build_dir, const fs::path& cache_dir,
                         const std::string& name) {
  const fs::path outputs = judge_folder(request) / "perf" / name;
  fs::create_directories(outputs);
  SandboxView view;
  view.writable = {outputs, cache_dir};
  view.hidden = hidden_from_candidates(request);
  view.temp_dir = judge_folder(request) / "perf" / (name + "-tmp");
  return {{"build_dir", build_dir.string()},
          {"outputs_dir", outputs.string()},
          {"command_prefix", sandbox_prefix(view)},
          {"environment", {{"CUDA_CACHE_PATH", cache_dir.string()}}}};
}

void write_judge_instructions(const RunRequest& request) {
  const Lane& lane = *request.lane;
  nlohmann::json lane_document = lane_to_json(lane, request.min_improvement_percent);
  lane_document["mode"] = request.noise_measurement ? "noise" : "compare";
  write_json_atomic(judge_folder(request) / "lane.json", lane_document);
  nlohmann::json perf{{"lane", lane_document},
                      {"mode", lane_document["mode"]},
                      {"min_improvement_percent", request.min_improvement_percent},
                      {"classification", request.classification},
                      {"report", (judge_folder(request) / "gates" / "performance.json").string()},
                      {"candidate", perf_side(request, build_folder(request), request.cache_dir, "candidate")},
                      {"best", perf_side(request, request.best_build_dir, request.best_cache_dir, "best")}};
  const fs::path baseline_performance = request.baseline_dir / "performance.json";
  if (fs::exists(baseline_performance)) perf["baseline_performance"] = baseline_performance.string();
  write_json_atomic(judge_folder(request) / "perf-request.json", perf);
}

// The judge tests' reports, each from the one path the driver named for it.
std::vector<nlohmann::json> read_reports(const RunRequest& request, const std::vector<SelectedTest>& tests) {
  std::vector<nlohmann::json> reports;
  for (const auto& test : tests) {
    const fs::path path = judge_folder(request) / judge_report_path(test);
    if (!fs::exists(path)) continue;
    nlohmann::json document;
    try {
      document = read_json_file(path);
    } catch (const Error&) {
      continue;
    }
    if (document.is_object() && document.contains("gate") && document["gate"].is_string() &&
        document.contains("passed") && document["passed"].is_boolean()) {
      document["file"] = "judge/" + judge_report_path(test);
      document["test"] = test.name;
      reports.push_back(std::move(document));
    }
  }
  return reports;
}

// Runs one CTest invocation and merges its results for `selected`. Returns a stage failure.
std::optional<std::string> run_ctest(const RunRequest& request, View view, std::vector<std::string> argv,
                                     const std::string& stage, const fs::path& junit, const fs::path& console,
                                     const std::vector<SelectedTest>& selected, const std::string& preset,
                                     std::chrono::steady_clock::time_point deadline, std::vector<TestResult>& into) {
  auto left = std::chrono::duration_cast<std::chrono::seconds>(deadline - std::chrono::steady_clock::now());
  argv.insert(argv.end(), {"--output-junit", junit.string()});
  std::vector<fs::path> logs{console};
  if (view == View::judge) logs.push_back(judge_folder(request) / "gates" / "perf-gate.log");
  ProcessResult tested = [&] {
    Heartbeat heartbeat(request, stage, preset, logs);
    return run_stage(request, view, argv, console, static_cast<int>(std::max<long>(1, left.count())));
  }();
  report_stage(request, stage, preset, tested);
  if (tested.timed_out || tested.signal != 0 || !tested.started) return stage_failure(stage, tested, console);
  // A non-zero exit only means some test failed; the JUnit file says which.
  if (!fs::exists(junit)) return "ctest wrote no JUnit file (" + tested.describe() + "); see " + console.string();
  auto results = merge_results(selected, parse_junit(junit), parse_console_failures(read_text_file(console)), preset);
  into.insert(into.end(), results.begin(), results.end());
  return std::nullopt;
}

bool quality_failed(const RunFacts& facts) {
  return std::any_of(facts.tests.begin(), facts.tests.end(), [](const TestResult& result) {
    return result.outcome == TestOutcome::failed &&
           (result.test.has_label("quality") || result.test.has_label("critical"));
  });
}

// Why the rest of the lane's tests would not change the decision: a quality gate failed
// (DISCARD-QUALITY), or a test that ran did not pass (CRASH, whatever the performance gate says).
std::optional<std::string> already_decided(const RunFacts& facts) {
  if (quality_failed(facts)) return "a quality gate failed";
  if (std::any_of(facts.tests.begin(), facts.tests.end(),
                  [](const TestResult& result) { return result.outcome != TestOutcome::passed; }))
    return "a test did not pass";
  return std::nullopt;
}

// Whether a performance gate ran and discarded the candidate: its test failed with a report
// that says it did not pass.
bool performance_discarded(const RunFacts& facts) {
  const bool failed = std::any_of(facts.tests.begin(), facts.tests.end(), [](const TestResult& result) {
    return result.outcome == TestOutcome::failed && result.test.has_label("perf");
  });
  return failed && std::any_of(facts.gate_reports.begin(), facts.gate_reports.end(), [](const nlohmann::json& report) {
           return report.value("gate", "") == "performance" && !report.value("passed", true);
         });
}

// The candidate's tests that set up a fixture one of `quality_judges` requires (the renders whose
// outputs the gates judge), and the others, each in the listing's order.
std::pair<std::vector<SelectedTest>, std::vector<SelectedTest>> split_gate_inputs(
    const std::vector<SelectedTest>& candidate_tests, const std::vector<SelectedTest>& quality_judges) {
  std::set<std::string> required;
  for (const auto& judge : quality_judges)
    for (const auto& fixture : judge.property_strings("FIXTURES_REQUIRED")) required.insert(fixture);
  std::pair<std::vector<SelectedTest>, std::vector<SelectedTest>> parts;
  for (const auto& test : candidate_tests) {
    const std::vector<std::string> sets_up = test.property_strings("FIXTURES_SETUP");
    const bool input = std::any_of(sets_up.begin(), sets_up.end(),
                                   [&](const std::string& fixture) { return required.count(fixture) > 0; });
    (input ? parts.first : parts.second).push_back(test);
  }
  return parts;
}

std::string test_names(const std::vector<SelectedTest>& tests) {
  std::string names;
  for (const auto& test : tests) names += (names.empty() ? "" : ", ") + test.name;
  return names;
}

std::optional<std::vector<SelectedTest>> list_tests(const RunRequest& request, const std::string& preset,
                                                    RunFacts& facts) {
  const fs::path listing = request.run_dir / ("tests-" + preset + ".json");
  const fs::path listing_log = request.run_dir / ("tests-" + preset + ".log");
  ProcessResult listed = run_stage(request, View::tests, {"ctest", "--preset", preset, "--show-only=json-v1"},
                                   listing_log, request.config->timeouts.configure, listing);
  if (auto failure = stage_failure("listing the tests of preset " + preset, listed, listing_log)) {
    facts.stage_failure = failure;
    return std::nullopt;
  }
  return parse_test_listing(read_json_file(listing), listing.string());
}

// Compares the listing of `preset` with the baseline's signature; a difference is a rejection.
// With `built`, a test outside it whose command the listing lacks (its executable not built yet)
// is compared without it: its command is checked at the next listing.
bool check_signature(const RunRequest& request, const std::string& preset, const std::vector<SelectedTest>& tests,
                     const std::set<std::string>* built, RunFacts& facts) {
  if (!request.test_signature) return true;
  const nlohmann::json expected =
      request.test_signature->contains(preset) ? request.test_signature->at(preset) : nlohmann::json::array();
  nlohmann::json found = test_signature(tests, build_folder(request).string(), request.source_dir.string());
  if (built && expected.is_array()) {
    std::map<std::string, const nlohmann::json*> expected_by_name;
    for (const auto& entry : expected)
      if (entry.is_object() && entry.contains("name") && entry["name"].is_string())
        expected_by_name[entry["name"].get<std::string>()] = &entry;
    for (auto& entry : found) {
      const std::string name = entry.value("name", "");
      const nlohmann::json command = entry.value("command", nlohmann::json());
      const bool unbuilt = command.is_null() || (command.is_array() && command.empty());
      auto match = expected_by_name.find(name);
      if (unbuilt && !built->count(name) && match != expected_by_name.end() && match->second->contains("command"))
        entry["command"] = match->second->at("command");
    }
  }
  for (const auto& difference : signature_differences(expected, found))
    facts.rejections.push_back("test set differs from the baseline's (preset " + preset + "): " + difference);
  return facts.rejections.empty();
}

}  // namespace

std::optional<std::string> out_of_space_evidence(const fs::path& run_dir, const fs::path& state_root) {
  struct statvfs space {};
  if (::statvfs(state_root.c_str(), &space) != 0) return std::nullopt;
  const unsigned long long available = static_cast<unsigned long long>(space.f_bavail) * space.f_frsize;
  const unsigned long long size = static_cast<unsigned long long>(space.f_blocks) * space.f_frsize;
  if (available >= std::max<unsigned long long>(kShortOfSpaceBytes, size / 100)) return std::nullopt;
  std::string evidence =
      "No space left on device: " + std::to_string(available >> 10) + " KiB available on " + state_root.string();
  // Below kFullBytes the file system is full whatever the logs say (a tool that failed to
  // write may not have said why, or its log may not have been written).
  std::error_code error;
  std::vector<fs::path> logs;
  for (auto entry = fs::recursive_directory_iterator(run_dir, error);
       !error && entry != fs::recursive_directory_iterator(); entry.increment(error)) {
    std::error_code ignored;
    if (entry->path().extension() == ".log" && entry->is_regular_file(ignored)) logs.push_back(entry->path());
  }
  std::sort(logs.begin(), logs.end());
  for (const auto& log : logs) {
    std::ifstream stream(log);
    for (std::string line; std::getline(stream, line);) {
      if (line.find("No space left on device") == std::string::npos &&
          line.find("Disk quota exceeded") == std::string::npos)
        continue;
      return evidence + " (" + log.string() + ": " + line.substr(0, 300) + ")";
    }
  }
  if (available < kFullBytes) return evidence;
  return std::nullopt;
}

std::string judge_report_path(const SelectedTest& test) {
  return test.has_label("perf") ? "gates/performance.json" : "quality/gates/" + test.name + ".json";
}

// A build folder whose last configure did not finish (a full disk, a kill, a timeout) can hold a
// half-written CMakeCache.txt or CMakeFiles/<version>/*.cmake that every later configure trips
// over (on a full disk: "CMake can not determine linker language", a CRASH of every later
// commit). A configure that succeeds leaves a stamp beside the folder (outside it, where the
// candidate's build cannot write); one that starts removes it first; a folder with a cache and no
// stamp is emptied before it is configured again.
fs::path configured_stamp(const fs::path& folder) {
  return folder.parent_path() / (folder.filename().string() + ".dit-ar-configured");
}

void prepare_build_folder(const fs::path& folder) {
  const fs::path stamp = configured_stamp(folder);
  if (fs::exists(folder / "CMakeCache.txt") && !fs::exists(stamp)) fs::remove_all(folder);
  fs::remove(stamp);
  fs::create_directories(folder);
}

// Best effort: without the stamp the next run only configures from an empty folder. The stamp
// holds what the configure started from (configure_inputs) and the cache it left.
void mark_configured(const fs::path& folder, const std::string& inputs = "") {
  nlohmann::json stamp{{"inputs", inputs}};
  std::error_code error;
  if (!inputs.empty() && fs::is_regular_file(folder / "CMakeCache.txt", error))
    stamp["cache"] = sha256_file((folder / "CMakeCache.txt").string());
  std::ofstream(configured_stamp(folder)) << stamp.dump() << "\n";
}

void forget_configured(const fs::path& folder) {
  std::error_code ignored;
  fs::remove(configured_stamp(folder), ignored);
}

bool is_cmake_input(const fs::path& file) {
  const std::string name = file.filename().string();
  return name == "CMakeLists.txt" || name == "CMakePresets.json" || name == "CMakeUserPresets.json" ||
         file.extension() == ".cmake";
}

std::string configure_inputs(const fs::path& source_dir, const std::string& preset) {
  Sha256 hash;
  // Each field as its tag, its value and a NUL after each: no two sets of fields read alike.
  const auto field = [&hash](std::string_view tag, std::string_view value) {
    hash.update(tag);
    hash.update(std::string_view("\0", 1));
    hash.update(value);
    hash.update(std::string_view("\0", 1));
  };
  field("preset", preset);
  // The environment the configure inherits (the driver's, constant within one run of it).
  std::vector<std::string> variables;
  for (char** entry = environ; entry && *entry; ++entry) variables.emplace_back(*entry);
  std::sort(variables.begin(), variables.end());
  for (const auto& variable : variables) field("env", variable);
  // The GPUs a configure lists for CTest (cmake/DitGpuResources.cmake).
  std::vector<std::string> nodes;
  std::error_code error;
  for (auto entry = fs::directory_iterator("/dev", error); !error && entry != fs::directory_iterator();
       entry.increment(error)) {
    const std::string name = entry->path().filename().string();
    if (name.rfind("nvidia", 0) == 0) nodes.push_back(name);
  }
  std::sort(nodes.begin(), nodes.end());
  for (const auto& node : nodes) field("device", node);
  // Every CMake file of the tree by content, build folders and dot-folders left out.
  std::vector<std::pair<std::string, fs::path>> files;
  auto walk = fs::recursive_directory_iterator(source_dir, error);
  for (; !error && walk != fs::recursive_directory_iterator(); walk.increment(error)) {
    const fs::path& path = walk->path();
    std::error_code ignored;
    if (walk->is_directory(ignored) && !walk->is_symlink(ignored)) {
      if (path.filename().string().front() == '.' || fs::exists(path / "CMakeCache.txt", ignored))
        walk.disable_recursion_pending();
      continue;
    }
    if (is_cmake_input(path)) files.emplace_back(fs::relative(path, source_dir).generic_string(), path);
  }
  if (error) return "";  // unreadable: configure
  std::sort(files.begin(), files.end());
  for (const auto& [name, path] : files) {
    field("file", name);
    field("sha256", sha256_file(path.string()));
  }
  return hash.hex_digest();
}

// Why the folder's last configure still stands, or nothing when it must run again: it finished
// (its stamp), from the same inputs, and its cache is byte for byte what it left (a build that
// re-ran CMake, or anything else that touched the cache, changes it). A configure from the same
// preset, tree, environment and cache writes the same build files, and `cmake --build` re-runs
// CMake itself for any CMake input changed since.
std::optional<std::string> configure_still_current(const fs::path& folder, const std::string& inputs) {
  if (inputs.empty()) return std::nullopt;
  std::error_code error;
  const fs::path stamp_path = configured_stamp(folder);
  const fs::path cache = folder / "CMakeCache.txt";
  if (!fs::is_regular_file(stamp_path, error) || !fs::is_regular_file(cache, error)) return std::nullopt;
  try {
    const nlohmann::json stamp = nlohmann::json::parse(read_text_file(stamp_path));
    if (!stamp.is_object() || stamp.value("inputs", "") != inputs) return std::nullopt;
    if (stamp.value("cache", "") != sha256_file(cache.string())) return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return "the CMake files, preset, environment and cache are those of the folder's last configure";
}

std::optional<std::string> configure_only(const RunRequest& request, const std::string& log_prefix) {
  const Config& config = *request.config;
  const Lane& lane = *request.lane;
  const fs::path folder = build_folder(request);
  const std::string inputs = configure_inputs(request.source_dir, lane.configure_preset);
  fs::create_directories(request.cache_dir);
  if (auto current = configure_still_current(folder, inputs)) {
    progress(request).stage_skipped(log_prefix + "configure", lane.configure_preset, *current);
    return std::nullopt;
  }
  prepare_build_folder(folder);
  fs::path configure_log = request.run_dir / (log_prefix + "configure.log");
  progress(request).stage_started(log_prefix + "configure", lane.configure_preset);
  ProcessResult configure = run_stage(request, View::build, {"cmake", "--preset", lane.configure_preset}, configure_log,
                                      config.timeouts.configure);
  report_stage(request, log_prefix + "configure", lane.configure_preset, configure);
  if (auto failure = stage_failure(log_prefix + "configure", configure, configure_log)) return failure;
  mark_configured(folder, inputs);
  return std::nullopt;
}

// The lane's build preset, or only `targets` of it (stage "<prefix>build (gate inputs)").
std::optional<std::string> build_only(const RunRequest& request, const std::string& log_prefix,
                                      const std::vector<std::string>& targets = {}) {
  const Lane& lane = *request.lane;
  const std::string stage = log_prefix + (targets.empty() ? "build" : "build (gate inputs)");
  const fs::path build_log = request.run_dir / (log_prefix + (targets.empty() ? "build.log" : "build-gate-inputs.log"));
  std::vector<std::string> argv{"cmake", "--build", "--preset", lane.build_preset};
  if (!targets.empty()) {
    argv.push_back("--target");
    argv.insert(argv.end(), targets.begin(), targets.end());
  }
  ProcessResult build = [&] {
    Heartbeat heartbeat(request, stage, lane.build_preset, {build_log});
    return run_stage(request, View::build, argv, build_log, request.config->timeouts.build);
  }();
  report_stage(request, stage, lane.build_preset, build);
  return stage_failure(stage, build, build_log);
}

std::optional<std::string> configure_and_build(const RunRequest& request, const std::string& log_prefix) {
  if (auto failure = configure_only(request, log_prefix)) return failure;
  return build_only(request, log_prefix);
}

std::optional<std::string> configure_and_build_judge(const RunRequest& request) {
  const Config& config = *request.config;
  const Lane& lane = *request.lane;
  const fs::path judge_build = request.judge_source_dir / lane.build_dir;
  prepare_build_folder(judge_build);
  fs::path configure_log = request.run_dir / "judge-configure.log";
  progress(request).stage_started("judge configure", lane.configure_preset);
  ProcessResult configure = run_stage(request, View::judge_build, {"cmake", "--preset", lane.configure_preset},
                                      configure_log, config.timeouts.configure);
  report_stage(request, "judge configure", lane.configure_preset, configure);
  if (auto failure = stage_failure("judge configure", configure, configure_log)) return failure;
  mark_configured(judge_build);
  std::vector<std::string> build{"cmake", "--build", judge_build.string(), "--target"};
  build.insert(build.end(), config.judge.targets.begin(), config.judge.targets.end());
  fs::path build_log = request.run_dir / "judge-build.log";
  ProcessResult built = [&] {
    Heartbeat heartbeat(request, "judge build", "", {build_log});
    return run_stage(request, View::judge_build, build, build_log, config.timeouts.build);
  }();
  report_stage(request, "judge build", "", built);
  return stage_failure("judge build", built, build_log);
}

std::optional<std::string> list_test_signatures(const RunRequest& request, nlohmann::json& signatures) {
  signatures = nlohmann::json::object();
  for (const auto& preset : request.lane->test_presets) {
    RunFacts facts;
    auto tests = list_tests(request, preset, facts);
    if (!tests) return facts.stage_failure;
    signatures[preset] = test_signature(*tests, build_folder(request).string(), request.source_dir.string());
  }
  return std::nullopt;
}

RunFacts run_commit(const RunRequest& request) {
  const Config& config = *request.config;
  const Lane& lane = *request.lane;
  RunFacts facts;
  facts.source_dir = request.source_dir.string();
  facts.build_dir = build_folder(request).string();
  fs::create_directories(outputs_folder(request));
  fs::create_directories(candidate_folder(request));

  // With gate input targets, only those are built before the quality gates; the rest of the
  // build preset once they held (build_rest), before anything else of the candidate's runs.
  bool rest_to_build = false;
  if (!request.already_built) {
    rest_to_build = !lane.gate_input_targets.empty();
    std::optional<std::string> failure = configure_only(request, "");
    if (!failure) failure = build_only(request, "", lane.gate_input_targets);
    if (failure) {
      facts.stage_failure = failure;
      return facts;
    }
  }
  // The tests' time (timeouts.test) is theirs alone: the rest of the build, which may run between
  // two groups of tests, has its own limit and moves the deadline on by what it took.
  auto test_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(config.timeouts.test);

  // Each preset's tests, listed before any runs (a test set that differs from the baseline's is
  // rejected before anything of the candidate's is started), split into the candidate's gate
  // inputs (the renders the quality gates judge), its other tests, and the judge's quality and
  // performance gates.
  struct PresetPlan {
    std::string preset;
    std::vector<SelectedTest> gate_inputs, other_tests, quality_judges, performance_judges;
  };
  std::vector<PresetPlan> plans;
  std::set<std::string> performance_fixtures;  // what the performance gates need set up first
  for (const auto& preset : lane.test_presets) {
    auto selected = list_tests(request, preset, facts);
    if (!selected) return facts;
    progress(request).phase("tests listed (" + preset + ")");
    PresetPlan plan{preset, {}, {}, {}, {}};
    std::vector<SelectedTest> candidate_tests;
    for (const auto& test : *selected) {
      if (!is_judge_test(test))
        candidate_tests.push_back(test);
      else
        (test.has_label("perf") ? plan.performance_judges : plan.quality_judges).push_back(test);
    }
    for (const auto& judge : plan.performance_judges)
      for (const auto& fixture : judge.property_strings("FIXTURES_REQUIRED")) performance_fixtures.insert(fixture);
    // Without quality gates in the preset, every candidate test runs at once, as one part.
    std::tie(plan.gate_inputs, plan.other_tests) = split_gate_inputs(candidate_tests, plan.quality_judges);
    if (plan.quality_judges.empty()) {
      plan.other_tests.insert(plan.other_tests.begin(), plan.gate_inputs.begin(), plan.gate_inputs.end());
      plan.gate_inputs.clear();
    }
    // Before the rest of the build, CTest lists no command for a test whose executable is not
    // built yet: the others' commands are checked now, those once the rest is built.
    std::set<std::string> built;
    for (const auto& test : plan.gate_inputs) built.insert(test.name);
    if (!check_signature(request, preset, *selected, rest_to_build ? &built : nullptr, facts)) return facts;
    plans.push_back(std::move(plan));
  }
  // The rest of the build preset, then every preset's listing again, checked whole.
  const auto build_rest = [&]() {
    if (!rest_to_build) return true;
    rest_to_build = false;
    const auto started = std::chrono::steady_clock::now();
    if (auto failure = build_only(request, "")) {
      facts.stage_failure = failure;
      return false;
    }
    for (const auto& plan : plans) {
      auto selected = list_tests(request, plan.preset, facts);
      if (!selected || !check_signature(request, plan.preset, *selected, nullptr, facts)) return false;
    }
    progress(request).phase("tests listed again after the build");
    test_deadline += std::chrono::steady_clock::now() - started;
    return true;
  };

  const auto run_candidate = [&](const std::string& preset, const std::vector<SelectedTest>& group,
                                 const std::string& part) {
    if (group.empty()) return true;
    // The part's tests by name (-E of every other test of the preset would let a test the
    // listing missed run unjudged); the judge's tests never run in the candidate's view.
    std::vector<std::string> argv{"ctest", "--preset", preset, "-R", names_regex(group), "-FA", ".*"};
    std::string suffix = part.empty() ? "" : "-" + part;
    std::replace(suffix.begin(), suffix.end(), ' ', '-');
    const fs::path console = request.run_dir / ("ctest-" + preset + suffix + ".log");
    auto failure = run_ctest(request, View::tests, argv, "tests (" + preset + (part.empty() ? "" : ", " + part) + ")",
                             candidate_folder(request) / ("junit-" + preset + suffix + ".xml"), console, group, preset,
                             test_deadline, facts.tests);
    for (auto& refusal : sandbox_refusals(console)) facts.sandbox_refusals.push_back(std::move(refusal));
    if (failure) facts.stage_failure = failure;
    return !failure;
  };
  // The judge's turn: its build and the goldens must be as recorded, its folder the driver's,
  // its instructions the driver's own (written again before each group of judges, since the
  // candidate's tests ran in between).
  const auto judge_unchanged = [&]() {
    const fs::path judge_build = request.judge_source_dir / lane.build_dir;
    for (const auto& change :
         describe_changes(request.judge_files, hash_folder(judge_build, build_bookkeeping()), "judge build: "))
      facts.rejections.push_back("the judge changed during the run: " + change);
    for (const auto& change : describe_changes(request.goldens, hash_folder(request.baseline_dir), "goldens: "))
      facts.rejections.push_back("the goldens changed during the run: " + change);
    progress(request).phase("judge verified");
    return facts.rejections.empty();
  };
  const auto run_judges = [&](const PresetPlan& plan, const std::vector<SelectedTest>& group, const std::string& kind) {
    if (group.empty()) return true;
    if (!judge_unchanged()) return false;
    fs::create_directories(judge_folder(request));
    std::error_code ignored;
    for (const auto& test : group) fs::remove(judge_folder(request) / judge_report_path(test), ignored);
    write_judge_instructions(request);
    const bool split = !plan.quality_judges.empty() && !plan.performance_judges.empty();
    const std::string suffix = split && kind == "performance" ? "-performance" : "";
    const std::string stage = "judge (" + plan.preset + (split ? ", " + kind : "") + ")";
    std::vector<std::string> argv{"ctest", "--preset", plan.preset, "-R", names_regex(group), "-FA", ".*"};
    if (auto failure = run_ctest(request, View::judge, argv, stage,
                                 judge_folder(request) / ("junit-" + plan.preset + suffix + ".xml"),
                                 judge_folder(request) / ("ctest-" + plan.preset + suffix + ".log"), group, plan.preset,
                                 test_deadline, facts.tests)) {
      facts.stage_failure = failure;
      return false;
    }
    auto reports = read_reports(request, group);
    facts.gate_reports.insert(facts.gate_reports.end(), reports.begin(), reports.end());
    return true;
  };
  const auto sets_up_any = [](const std::vector<SelectedTest>& tests, const std::set<std::string>& fixtures) {
    return std::any_of(tests.begin(), tests.end(), [&](const SelectedTest& test) {
      const auto sets_up = test.property_strings("FIXTURES_SETUP");
      return std::any_of(sets_up.begin(), sets_up.end(), [&](const auto& fixture) { return fixtures.count(fixture); });
    });
  };

  // The order that decides soonest: the candidate's tests whose outputs the quality gates judge
  // (the renders), the quality gates, then, if they held, the performance gate, and last the
  // candidate's other tests (the kernel tests, seconds to a minute on a GPU), which a quality or
  // a performance discard does not need. Other tests that set up a fixture a performance gate
  // requires, and those of presets without quality gates, run in their preset's turn.
  struct Deferred {
    const PresetPlan* plan;
    std::string part;
  };
  std::vector<Deferred> deferred;
  for (const PresetPlan& plan : plans) {
    // A failed quality gate or test already decides: the later presets (the performance gate's
    // interleaved runs, minutes on a GPU) would not change it.
    if (const auto decided = already_decided(facts)) {
      facts.skipped_presets.push_back(plan.preset);
      progress(request).stage_skipped("tests (" + plan.preset + ")", plan.preset, *decided);
      continue;
    }
    // Without gate inputs, the preset's tests need the whole build.
    if (plan.gate_inputs.empty() && !build_rest()) return facts;
    if (!run_candidate(plan.preset, plan.gate_inputs, plan.other_tests.empty() ? "" : "gate inputs")) return facts;
    if (!run_judges(plan, plan.quality_judges, "quality")) return facts;
    if (quality_failed(facts)) {
      // Decided: DISCARD-QUALITY. The other tests and the performance gate would not change it.
      if (!plan.other_tests.empty()) {
        facts.skipped_presets.push_back(plan.preset + " (its other tests: " + test_names(plan.other_tests) + ")");
        progress(request).stage_skipped("tests (" + plan.preset + ")", plan.preset, "a quality gate failed");
      }
      if (!plan.performance_judges.empty()) facts.skipped_presets.push_back(plan.preset + " (its performance gate)");
      continue;
    }
    if (!build_rest()) return facts;
    const std::string part = plan.gate_inputs.empty() ? "" : "other";
    if (!plan.quality_judges.empty() && !sets_up_any(plan.other_tests, performance_fixtures)) {
      deferred.push_back({&plan, part});
    } else {
      if (!run_candidate(plan.preset, plan.other_tests, part)) return facts;
    }
    if (const auto decided = already_decided(facts); decided && !plan.performance_judges.empty()) {
      facts.skipped_presets.push_back(plan.preset + " (its performance gate)");
      progress(request).stage_skipped("judge (" + plan.preset + ", performance)", plan.preset, *decided);
      continue;
    }
    if (!run_judges(plan, plan.performance_judges, "performance")) return facts;
  }
  for (const Deferred& item : deferred) {
    const PresetPlan& plan = *item.plan;
    if (plan.other_tests.empty()) continue;
    std::optional<std::string> decided;
    if (performance_discarded(facts))
      decided = "the performance gate discarded the candidate";
    else
      decided = already_decided(facts);
    if (decided) {
      facts.skipped_presets.push_back(plan.preset + " (its other tests: " + test_names(plan.other_tests) + ")");
      progress(request).stage_skipped("tests (" + plan.preset + ", " + item.part + ")", plan.preset, *decided);
      continue;
    }
    if (!run_candidate(plan.preset, plan.other_tests, item.part)) return facts;
  }
  return facts;
}

std::string expand_placeholders(const std::string& text, const std::map<std::string, std::string>& values) {
  std::string result;
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] == '{') {
      std::size_t close = text.find('}', i);
      if (close != std::string::npos) {
        auto found = values.find(text.substr(i + 1, close - i - 1));
        if (found != values.end()) {
          result += found->second;
          i = close + 1;
          continue;
        }
      }
    }
    result += text[i++];
  }
  return result;
}

}  // namespace dit::ar
