// Reads Google Benchmark's JSON output (1.7 and 1.8): per entry its timings, counters and
// label, and the samples of one objective converted to a chosen unit.
#pragma once

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
  double real_time = 0.0;
  double cpu_time = 0.0;
  std::string time_unit = "ns";
  std::string label;
  std::string error_message;  // set when the benchmark called SkipWithError
  std::map<std::string, double> counters;
};

std::vector<BenchmarkEntry> parse_benchmark_json(const nlohmann::json& document, const std::string& where);

// True when the entry is one run of the objective `name` (compared with run_name, and with
// name less a trailing "/manual_time", "/real_time" or "/process_time").
bool entry_matches(const BenchmarkEntry& entry, const std::string& name);

// The value of `metric` (real_time, cpu_time, or a counter) in `unit` (times only; counters
// are returned as they are). Throws dit::Error naming what is missing.
double entry_value(const BenchmarkEntry& entry, const std::string& metric, const std::string& unit);

// The output hash a benchmark reports, from a "hash=<hex>" label token or a "hash" counter.
std::optional<std::string> entry_hash(const BenchmarkEntry& entry);
// The value of a "key=value" token of the label ("case=gpu-256-a"), if present.
std::optional<std::string> label_token(const BenchmarkEntry& entry, const std::string& key);

double time_unit_factor(const std::string& from, const std::string& to);  // multiply by it

}  // namespace dit::ar
