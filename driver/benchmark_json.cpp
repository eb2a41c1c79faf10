// Google Benchmark JSON: every key of an entry that is not a known field is a user counter.
#include "driver/benchmark_json.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.h"

namespace dit::ar {

namespace {

double seconds_per(const std::string& unit) {
  if (unit == "ns") return 1e-9;
  if (unit == "us") return 1e-6;
  if (unit == "ms") return 1e-3;
  if (unit == "s") return 1.0;
  throw Error(ErrorKind::invalid_file, "unknown time unit '" + unit + "'");
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

double time_unit_factor(const std::string& from, const std::string& to) { return seconds_per(from) / seconds_per(to); }

std::vector<BenchmarkEntry> parse_benchmark_json(const nlohmann::json& document, const std::string& where) {
  if (!document.is_object() || !document.contains("benchmarks") || !document["benchmarks"].is_array()) {
    throw Error(ErrorKind::invalid_file, where + ": not Google Benchmark JSON (no \"benchmarks\" list)");
  }
  static const std::set<std::string> known{"name",
                                           "family_index",
                                           "per_family_instance_index",
                                           "run_name",
                                           "run_type",
                                           "repetitions",
                                           "repetition_index",
                                           "threads",
                                           "iterations",
                                           "real_time",
                                           "cpu_time",
                                           "time_unit",
                                           "label",
                                           "error_occurred",
                                           "error_message",
                                           "aggregate_name",
                                           "aggregate_unit",
                                           "big_o",
                                           "rms",
                                           "complexity_n"};
  std::vector<BenchmarkEntry> entries;
  for (const auto& item : document["benchmarks"]) {
    BenchmarkEntry entry;
    entry.name = item.value("name", "");
    entry.run_name = item.value("run_name", entry.name);
    entry.run_type = item.value("run_type", "iteration");
    if (item.contains("iterations") && item["iterations"].is_number()) {
      entry.iterations = item["iterations"].get<std::int64_t>();
    }
    entry.real_time = item.value("real_time", 0.0);
    entry.cpu_time = item.value("cpu_time", 0.0);
    entry.time_unit = item.value("time_unit", "ns");
    entry.label = item.value("label", "");
    if (item.value("error_occurred", false)) entry.error_message = item.value("error_message", "error");
    for (const auto& [key, value] : item.items()) {
      if (!known.count(key) && value.is_number()) entry.counters[key] = value.get<double>();
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

bool entry_matches(const BenchmarkEntry& entry, const std::string& name) {
  if (entry.run_type != "iteration") return false;
  if (entry.run_name == name || entry.name == name) return true;
  for (const char* suffix : {"/manual_time", "/real_time", "/process_time"}) {
    if (ends_with(entry.name, suffix) && entry.name.substr(0, entry.name.size() - std::string(suffix).size()) == name) {
      return true;
    }
  }
  return false;
}

double entry_value(const BenchmarkEntry& entry, const std::string& metric, const std::string& unit) {
  if (metric == "real_time") return entry.real_time * time_unit_factor(entry.time_unit, unit);
  if (metric == "cpu_time") return entry.cpu_time * time_unit_factor(entry.time_unit, unit);
  auto found = entry.counters.find(metric);
  if (found == entry.counters.end()) {
    throw Error(ErrorKind::invalid_file, "benchmark " + entry.name + " has no counter '" + metric + "'");
  }
  return found->second;
}

TimedTotals timed_totals(const std::vector<BenchmarkEntry>& entries, const std::string& name) {
  TimedTotals totals;
  bool counted = true;
  double images = 0.0;
  double counted_seconds = 0.0;
  for (const auto& entry : entries) {
    if (!entry_matches(entry, name)) continue;
    ++totals.entries;
    totals.iterations += entry.iterations;
    totals.seconds += entry.real_time * time_unit_factor(entry.time_unit, "s") * static_cast<double>(entry.iterations);
    auto found_images = entry.counters.find(kTimedImagesCounter);
    auto found_seconds = entry.counters.find(kTimedSecondsCounter);
    if (found_images == entry.counters.end() || found_seconds == entry.counters.end()) {
      counted = false;
      continue;
    }
    images = std::max(images, found_images->second);
    counted_seconds = std::max(counted_seconds, found_seconds->second);
  }
  if (counted && totals.entries > 0) {
    totals.iterations = static_cast<std::int64_t>(std::llround(images));
    totals.seconds = counted_seconds;
    totals.from_counters = true;
  }
  return totals;
}

}  // namespace dit::ar
