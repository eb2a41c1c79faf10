// What the report shows, gathered from the state directory (layout: driver/state_directory.h)
// and the quality renders (quality/store.h): golden images in baseline/quality/<set>/golden/,
// each run's renders in runs/<id>/quality/<set>/render/, benchmark JSON in runs/<id>/bench/.
#include <algorithm>
#include <cmath>
#include <map>
#include <regex>

#include "driver/benchmark_json.h"
#include "core/files.h"
#include "driver/report.h"
#include "driver/state_directory.h"
#include "core/error.h"

namespace dit::ar {

namespace fs = std::filesystem;

namespace {

// The performance gate's own raw runs (bench/candidate-<n>.json, bench/best-<n>.json) measure
// only the objective; the per-benchmark tables come from the bench binaries' files.
const std::regex kPerformanceGateRun{R"((candidate|best)-[0-9]+\.json)"};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  std::size_t middle = values.size() / 2;
  return values.size() % 2 ? values[middle] : (values[middle - 1] + values[middle]) / 2.0;
}

struct BenchmarkTime {
  double value = 0;
  std::string unit;
  std::string error;
};

// Per benchmark (its run name): the median real time of its iteration entries, or, when the
// file holds aggregates only, its median (else mean) aggregate.
std::map<std::string, BenchmarkTime> benchmark_times(const fs::path& file) {
  std::vector<BenchmarkEntry> entries = parse_benchmark_json(read_json_file(file), file.string());
  std::map<std::string, std::vector<const BenchmarkEntry*>> iterations;
  std::map<std::string, const BenchmarkEntry*> aggregates;
  std::vector<std::string> order;
  for (const auto& entry : entries) {
    const std::string& name = entry.run_name.empty() ? entry.name : entry.run_name;
    if (!iterations.count(name) && !aggregates.count(name)) order.push_back(name);
    if (entry.run_type == "aggregate") {
      bool is_median = entry.name == name + "_median";
      if (is_median || (entry.name == name + "_mean" && !aggregates.count(name))) aggregates[name] = &entry;
    } else {
      iterations[name].push_back(&entry);
    }
  }
  std::map<std::string, BenchmarkTime> times;
  for (const auto& name : order) {
    BenchmarkTime time;
    if (iterations.count(name)) {
      std::vector<double> values;
      const auto& runs = iterations[name];
      time.unit = runs.front()->time_unit;
      for (const auto* run : runs) {
        if (!run->error_message.empty()) time.error = run->error_message;
        values.push_back(run->real_time * time_unit_factor(run->time_unit, time.unit));
      }
      time.value = median(values);
    } else if (aggregates.count(name)) {
      time.unit = aggregates[name]->time_unit;
      time.value = aggregates[name]->real_time;
      time.error = aggregates[name]->error_message;
    } else {
      continue;
    }
    times[name] = time;
  }
  return times;
}

std::vector<std::string> benchmark_order(const fs::path& file) {
  std::vector<std::string> order;
  for (const auto& entry : parse_benchmark_json(read_json_file(file), file.string())) {
    const std::string& name = entry.run_name.empty() ? entry.name : entry.run_name;
    if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
  }
  return order;
}

BenchmarkFile compare_benchmark_file(const fs::path& baseline_file, const fs::path& best_file) {
  BenchmarkFile result;
  result.file_name = baseline_file.filename().string();
  auto baseline = benchmark_times(baseline_file);
  auto best = benchmark_times(best_file);
  std::vector<std::string> names = benchmark_order(baseline_file);
  for (const auto& name : benchmark_order(best_file)) {
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  for (const auto& name : names) {
    BenchmarkDelta delta;
    delta.name = name;
    const bool on_baseline = baseline.count(name) != 0;
    const bool on_best = best.count(name) != 0;
    if (!on_baseline && !on_best) continue;
    delta.unit = on_baseline ? baseline[name].unit : best[name].unit;
    if (on_baseline) delta.baseline_time = baseline[name].value;
    if (on_best) delta.best_time = best[name].value * time_unit_factor(best[name].unit, delta.unit);
    delta.error = on_baseline && !baseline[name].error.empty() ? "baseline: " + baseline[name].error
                  : on_best && !best[name].error.empty()       ? "best: " + best[name].error
                                                               : "";
    result.deltas.push_back(delta);
  }
  return result;
}

// Benchmark files of the baseline's run that the best's run has too; bench_kernels first.
void load_benchmarks(ReportInput& input) {
  if (input.baseline_run_dir.empty() || input.best_run_dir.empty()) return;
  fs::path baseline_bench = input.state_dir / input.baseline_run_dir / "bench";
  fs::path best_bench = input.state_dir / input.best_run_dir / "bench";
  if (!fs::is_directory(baseline_bench)) return;
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(baseline_bench)) {
    std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || entry.path().extension() != ".json" || std::regex_match(name, kPerformanceGateRun))
      continue;
    if (fs::exists(best_bench / name)) files.push_back(name);
  }
  std::sort(files.begin(), files.end(), [](const std::string& left, const std::string& right) {
    bool left_kernels = left == "bench_kernels.json";
    bool right_kernels = right == "bench_kernels.json";
    return left_kernels != right_kernels ? left_kernels : left < right;
  });
  for (const auto& name : files) {
    try {
      input.benchmarks.push_back(compare_benchmark_file(baseline_bench / name, best_bench / name));
    } catch (const Error& error) {
      input.notes.push_back(std::string("benchmark file skipped: ") + error.what());
    }
  }
}

// Every case with a golden image (or, without a recorded golden, a baseline render).
void load_gallery(ReportInput& input) {
  fs::path baseline_quality = input.state_dir / "baseline" / "quality";
  fs::path baseline_run_quality =
      input.baseline_run_dir.empty() ? fs::path() : input.state_dir / input.baseline_run_dir / "quality";
  fs::path best_quality = input.best_run_dir.empty() ? fs::path() : input.state_dir / input.best_run_dir / "quality";
  std::vector<std::string> sets;
  for (const auto& root : {baseline_quality, baseline_run_quality}) {
    if (root.empty() || !fs::is_directory(root)) continue;
    for (const auto& entry : fs::directory_iterator(root)) {
      std::string set = entry.path().filename().string();
      if (entry.is_directory() && set != "gates" && std::find(sets.begin(), sets.end(), set) == sets.end())
        sets.push_back(set);
    }
  }
  std::sort(sets.begin(), sets.end());
  for (const auto& set : sets) {
    fs::path golden = baseline_quality / set / "golden";
    fs::path baseline_render = baseline_run_quality.empty() ? fs::path() : baseline_run_quality / set / "render";
    fs::path source = fs::is_directory(golden) ? golden : baseline_render;
    if (source.empty() || !fs::is_directory(source)) continue;
    std::vector<std::string> ids;
    for (const auto& entry : fs::directory_iterator(source)) {
      if (entry.is_regular_file() && entry.path().extension() == ".png") ids.push_back(entry.path().stem().string());
    }
    std::sort(ids.begin(), ids.end());
    for (const auto& id : ids) {
      GalleryCase gallery_case;
      gallery_case.set = set;
      gallery_case.case_id = id;
      gallery_case.baseline_image = source / (id + ".png");
      fs::path best = best_quality.empty() ? fs::path() : best_quality / set / "render" / (id + ".png");
      if (!best.empty() && fs::exists(best)) gallery_case.best_image = best;
      input.gallery.push_back(gallery_case);
    }
  }
}

std::optional<nlohmann::json> optional_json(const fs::path& path) {
  if (!fs::exists(path)) return std::nullopt;
  return read_json_file(path);
}

}  // namespace

ReportInput load_report_input(const Config& config) {
  ReportInput input;
  StateDirectory state(config.state_dir);
  input.project = config.project;
  input.state_dir = config.state_dir;
  input.generated_at = utc_timestamp();
  input.results = read_results_table(state.results_file());
  if (state.has_session()) {  // checked as every command reads it: a damaged file is exit 2
    input.has_session = true;
    input.session = state.load_session();
  } else {
    input.session = nlohmann::json::object();
  }
  input.best = optional_json(state.best_file());
  input.lane = input.session.value("lane", config.default_lane);

  auto lane = config.lanes.find(input.lane);
  if (lane != config.lanes.end()) {
    const Objective& objective = lane->second.objective;
    input.unit = objective.unit;
    input.lower_is_better = objective.direction == Direction::lower;
    input.objective_label = objective.name + " " + objective.metric + " (" + objective.unit + ", " +
                            (input.lower_is_better ? "lower" : "higher") + " is better)";
  } else {
    input.notes.push_back("lane '" + input.lane + "' is not in the config; the chart assumes lower is better");
  }

  for (const auto& row : input.results.rows) {
    if (row.is_baseline() && row.status == "KEEP") input.baseline_run_dir = row.run_dir;
  }
  if (input.session.contains("baseline") && input.session["baseline"].is_object()) {
    const nlohmann::json& baseline = input.session["baseline"];
    input.baseline_run_dir = baseline.value("run_dir", input.baseline_run_dir);
    if (baseline.contains("noise_percent") && baseline["noise_percent"].is_number())
      input.noise_percent = baseline["noise_percent"].get<double>();
  }
  if (input.best && input.best->is_object()) {
    input.best_run_dir = input.best->value("run_dir", "");
    if (input.unit.empty()) input.unit = input.best->value("unit", "");
  }
  input.best_is_baseline = !input.best_run_dir.empty() && input.best_run_dir == input.baseline_run_dir;
  load_benchmarks(input);
  load_gallery(input);
  return input;
}

}  // namespace dit::ar
