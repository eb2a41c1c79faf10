// Reads Google Benchmark's JSON output (1.7 and 1.8): per entry its timings, iterations,
// counters and label, the samples of one objective converted to a chosen unit, and what one
// benchmark process timed of it (the performance gate's timed-outputs protocol).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dit::ar {

struct BenchmarkEntry {
  std::string name;      // e.g. "BM_E2E/256/manual_time"
  std::string run_name;  // without aggregate suffixes (1.7+); equals name when absent
  std::string run_type;  // "iteration" or "aggregate"
  std::int64_t iterations = 0;
  double real_time = 0.0;
  double cpu_time = 0.0;
  std::string time_unit = "ns";
  std::string label;
  std::string error_message;  // set when the benchmark called SkipWithError
  std::map<std::string, double> counters;
};

// Throws dit::Error(invalid_file) naming `where` and the entry when the document has no
// "benchmarks" list, an entry is not an object, or a known field has the wrong type (an
// iteration count that is not a whole number from 0 to the largest std::int64_t included).
std::vector<BenchmarkEntry> parse_benchmark_json(const nlohmann::json& document, const std::string& where);

// True when the entry is one run of the objective `name` (compared with run_name, and with
// name less a trailing "/manual_time", "/real_time" or "/process_time").
bool entry_matches(const BenchmarkEntry& entry, const std::string& name);

// The value of `metric` (real_time, cpu_time, or a counter) in `unit` (times only; counters
// are returned as they are). Throws dit::Error naming what is missing.
double entry_value(const BenchmarkEntry& entry, const std::string& metric, const std::string& unit);

// The counters the benchmark harness (bench/support) publishes on an entry of a benchmark that
// writes timed outputs: the process's timed images so far and their timed seconds, Google
// Benchmark's calibration runs (never reported as entries) included.
inline constexpr const char* kTimedImagesCounter = "timed_images";
inline constexpr const char* kTimedSecondsCounter = "timed_seconds";

// What one benchmark process timed of the objective `name`: its timed iterations and their total
// timed seconds. From the harness's counters when every entry of the objective carries both (the
// largest of each: they count over the whole process), else the sum of `iterations` and of
// real_time x iterations over the objective's entries. `entries` is how many entries matched.
// Throws dit::Error(invalid_file) on an unknown time unit or when the iterations overflow.
struct TimedTotals {
  std::int64_t iterations = 0;
  double seconds = 0.0;
  std::size_t entries = 0;
  bool from_counters = false;
};
TimedTotals timed_totals(const std::vector<BenchmarkEntry>& entries, const std::string& name);

double time_unit_factor(const std::string& from, const std::string& to);  // multiply by it

}  // namespace dit::ar
