// The stages of a run as child processes; a stage that fails or times out ends the run.
#include "driver/pipeline.h"

#include <algorithm>
#include <chrono>
#include <iomanip>

#include "driver/ctest_results.h"
#include "core/files.h"
#include "driver/process.h"
#include "core/error.h"

namespace dit::ar {

namespace fs = std::filesystem;

namespace {

std::ostream& progress(const RunRequest& request) {
  static std::ostream null_stream(nullptr);
  return request.progress ? *request.progress : null_stream;
}

// A stage's name padded into the progress lines' first column, with at least two spaces after it
// (tools/gpu-host/research-session.sh reads the lines back).
std::string stage_column(const std::string& stage) {
  constexpr size_t kWidth = 28;
  return "  " + stage + std::string(stage.size() + 2 > kWidth ? 2 : kWidth - stage.size(), ' ');
}

void report_stage(const RunRequest& request, const std::string& stage, const ProcessResult& result) {
  progress(request) << stage_column(stage) << (result.succeeded() ? "ok    " : "FAILED ") << std::fixed
                    << std::setprecision(1) << result.seconds << " s"
                    << (result.succeeded() ? "" : "  (" + result.describe() + ")") << "\n"
                    << std::flush;
}

ProcessResult run_stage(const RunRequest& request, std::vector<std::string> argv, const fs::path& log,
                        int timeout_seconds, std::optional<fs::path> stdout_path = std::nullopt) {
  ProcessOptions options;
  options.argv = std::move(argv);
  options.working_dir = request.source_dir;
  options.environment = test_environment(request);
  options.log_path = log;
  options.stdout_path = std::move(stdout_path);
  options.timeout = std::chrono::seconds(timeout_seconds);
  options.on_start = request.on_child;
  return run_process(options);
}

std::optional<std::string> stage_failure(const std::string& stage, const ProcessResult& result, const fs::path& log) {
  if (result.succeeded()) return std::nullopt;
  return stage + " " + (result.timed_out ? "timed out" : "failed") + ": " + result.describe() + "; see " + log.string();
}

}  // namespace

std::map<std::string, std::string> test_environment(const RunRequest& request) {
  return {{"DIT_RUN_DIR", request.run_dir.string()},
          {"DIT_BASELINE_DIR", request.baseline_dir.string()},
          {"DIT_BEST_BUILD_DIR", request.best_build_dir.string()},
          {"DIT_CLASSIFICATION", request.classification},
          {"DIT_LANE", request.lane->name}};
}

std::optional<std::string> configure_and_build(const RunRequest& request, const std::string& log_prefix) {
  const Config& config = *request.config;
  const Lane& lane = *request.lane;
  fs::path configure_log = request.run_dir / (log_prefix + "configure.log");
  ProcessResult configure =
      run_stage(request, {"cmake", "--preset", lane.configure_preset}, configure_log, config.timeouts.configure);
  report_stage(request, log_prefix + "configure", configure);
  if (auto failure = stage_failure(log_prefix + "configure", configure, configure_log)) return failure;
  fs::path build_log = request.run_dir / (log_prefix + "build.log");
  ProcessResult build =
      run_stage(request, {"cmake", "--build", "--preset", lane.build_preset}, build_log, config.timeouts.build);
  report_stage(request, log_prefix + "build", build);
  return stage_failure(log_prefix + "build", build, build_log);
}

RunFacts run_commit(const RunRequest& request) {
  const Config& config = *request.config;
  const Lane& lane = *request.lane;
  RunFacts facts;
  facts.source_dir = request.source_dir.string();
  facts.build_dir = (request.source_dir / lane.build_dir).string();
  nlohmann::json lane_document = lane_to_json(lane, request.min_improvement_percent);
  lane_document["mode"] = request.noise_measurement ? "noise" : "compare";
  write_json_atomic(request.run_dir / "lane.json", lane_document);

  if (!request.already_built) {
    if (auto failure = configure_and_build(request, "")) {
      facts.stage_failure = failure;
      return facts;
    }
  }
  auto test_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(config.timeouts.test);
  auto quality_failed = [&] {
    return std::any_of(facts.tests.begin(), facts.tests.end(), [](const TestResult& result) {
      return result.outcome == TestOutcome::failed &&
             (result.test.has_label("quality") || result.test.has_label("critical"));
    });
  };
  for (const auto& preset : lane.test_presets) {
    // A failed quality gate already decides DISCARD-QUALITY: the later presets (the performance
    // gate's interleaved runs, minutes on a GPU) would not change it.
    if (quality_failed()) {
      facts.skipped_presets.push_back(preset);
      progress(request) << stage_column("tests (" + preset + ")") << "skipped (a quality gate failed)\n" << std::flush;
      continue;
    }
    fs::path listing = request.run_dir / ("tests-" + preset + ".json");
    fs::path listing_log = request.run_dir / ("tests-" + preset + ".log");
    ProcessResult listed = run_stage(request, {"ctest", "--preset", preset, "--show-only=json-v1"}, listing_log,
                                     config.timeouts.configure, listing);
    if (auto failure = stage_failure("listing the tests of preset " + preset, listed, listing_log)) {
      facts.stage_failure = failure;
      return facts;
    }
    std::vector<SelectedTest> selected = parse_test_listing(read_json_file(listing), listing.string());

    auto left = std::chrono::duration_cast<std::chrono::seconds>(test_deadline - std::chrono::steady_clock::now());
    fs::path junit = request.run_dir / ("junit-" + preset + ".xml");
    fs::path console = request.run_dir / ("ctest-" + preset + ".log");
    ProcessResult tested = run_stage(request, {"ctest", "--preset", preset, "--output-junit", junit.string()}, console,
                                     static_cast<int>(std::max<long>(1, left.count())));
    report_stage(request, "tests (" + preset + ")", tested);
    if (tested.timed_out || tested.signal != 0 || !tested.started) {
      facts.stage_failure = stage_failure("tests (" + preset + ")", tested, console);
      return facts;
    }
    // A non-zero exit only means some test failed; the JUnit file says which.
    if (!fs::exists(junit)) {
      facts.stage_failure = "ctest wrote no JUnit file (" + tested.describe() + "); see " + console.string();
      return facts;
    }
    auto results = merge_results(selected, parse_junit(junit), parse_console_failures(read_text_file(console)), preset);
    facts.tests.insert(facts.tests.end(), results.begin(), results.end());
  }
  facts.gate_reports = collect_gate_reports(request.run_dir);
  return facts;
}

std::vector<nlohmann::json> collect_gate_reports(const fs::path& run_dir) {
  std::vector<nlohmann::json> reports;
  if (!fs::exists(run_dir)) return reports;
  for (const auto& entry : fs::recursive_directory_iterator(run_dir)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".json") continue;
    if (entry.path().parent_path().filename() == "bench") continue;  // raw benchmark output
    nlohmann::json document;
    try {
      document = read_json_file(entry.path());
    } catch (const Error&) {
      continue;
    }
    if (document.is_object() && document.contains("gate") && document["gate"].is_string() &&
        document.contains("passed") && document["passed"].is_boolean()) {
      document["file"] = fs::relative(entry.path(), run_dir).string();
      reports.push_back(std::move(document));
    }
  }
  std::sort(reports.begin(), reports.end(),
            [](const auto& a, const auto& b) { return a.value("file", "") < b.value("file", ""); });
  return reports;
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
