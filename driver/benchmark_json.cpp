// Google Benchmark JSON: every key of an entry that is not a known field is a user counter.
#include "driver/benchmark_json.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
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

// An iteration count: a whole number from 0 to the largest std::int64_t (Google Benchmark writes
// an integer; an integral float is read too). Anything else has no meaning as a count.
std::optional<std::int64_t> iteration_count(const nlohmann::json& value) {
  if (value.is_number_unsigned()) {
    const std::uint64_t count = value.get<std::uint64_t>();
    if (count > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
    return static_cast<std::int64_t>(count);
  }
  if (value.is_number_integer()) {
    const std::int64_t count = value.get<std::int64_t>();
    return count >= 0 ? std::optional(count) : std::nullopt;
  }
  const double count = value.get<double>();
  if (!std::isfinite(count) || count < 0 || count >= 9.2e18 || count != std::floor(count)) return std::nullopt;
  return static_cast<std::int64_t>(count);
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
  const nlohmann::json& benchmarks = document["benchmarks"];
  for (std::size_t index = 0; index < benchmarks.size(); ++index) {
    const nlohmann::json& item = benchmarks[index];
    const std::string at = where + ": benchmarks[" + std::to_string(index) + "]";
    if (!item.is_object()) throw Error(ErrorKind::invalid_file, at + " is not an object");
    // A known field of the wrong type is refused, never read as something else.
    auto text = [&](const char* key, const std::string& fallback) {
      auto found = item.find(key);
      if (found == item.end()) return fallback;
      if (!found->is_string()) throw Error(ErrorKind::invalid_file, at + "." + key + " is not a string");
      return found->get<std::string>();
    };
    auto number = [&](const char* key) {
      auto found = item.find(key);
      if (found == item.end()) return 0.0;
      if (!found->is_number()) throw Error(ErrorKind::invalid_file, at + "." + key + " is not a number");
      return found->get<double>();
    };
    BenchmarkEntry entry;
    entry.name = text("name", "");
    entry.run_name = text("run_name", entry.name);
    entry.run_type = text("run_type", "iteration");
    if (auto found = item.find("iterations"); found != item.end() && found->is_number()) {
      const std::optional<std::int64_t> count = iteration_count(*found);
      if (!count) throw Error(ErrorKind::invalid_file, at + ".iterations is not a count: " + found->dump());
      entry.iterations = *count;
    }
    entry.real_time = number("real_time");
    entry.cpu_time = number("cpu_time");
    entry.time_unit = text("time_unit", "ns");
    entry.label = text("label", "");
    if (auto found = item.find("error_occurred"); found != item.end()) {
      if (!found->is_boolean()) throw Error(ErrorKind::invalid_file, at + ".error_occurred is not true or false");
      if (found->get<bool>()) entry.error_message = text("error_message", "error");
    }
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
    if (__builtin_add_overflow(totals.iterations, entry.iterations, &totals.iterations))
      throw Error(ErrorKind::invalid_file, "benchmark " + name + ": the iteration counts of its entries overflow");
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
