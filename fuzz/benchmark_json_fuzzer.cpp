// libFuzzer target for the Google Benchmark JSON reader (driver/benchmark_json.cpp): any JSON
// document either parses into one entry per element of "benchmarks", whose fields are what the
// file says, or is refused with dit::Error(invalid_file); what the performance gate then asks of
// the entries (entry_matches, entry_value, timed_totals) answers or throws dit::Error too.
// Anything else (a crash, undefined behaviour such as a float-to-integer overflow or a signed
// overflow, another exception) is a finding. Bytes that are not JSON at all are the JSON
// reader's business (read_json_file) and are skipped.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "driver/benchmark_json.h"
#include "fuzz/fuzz_support.h"

namespace {

using dit::fuzz::check;
using namespace dit::ar;

// Calls `ask`; a dit::Error is an accepted answer, of kind invalid_file.
template <typename Ask>
void answers(Ask ask) {
  try {
    ask();
  } catch (const dit::Error& error) {
    check(error.kind() == dit::ErrorKind::invalid_file, "a refused question is an invalid_file error");
  }
}

void exercise(const std::vector<BenchmarkEntry>& entries, const nlohmann::json& document) {
  const nlohmann::json& items = document.at("benchmarks");
  check(entries.size() == items.size(), "one entry per benchmark");
  for (size_t i = 0; i < entries.size(); ++i) {
    const BenchmarkEntry& entry = entries[i];
    const nlohmann::json& item = items[i];
    check(entry.name == item.value("name", ""), "the name is the file's");
    check(entry.run_name == item.value("run_name", entry.name), "run_name defaults to the name");
    check(entry.iterations >= 0, "iterations are a count");
    if (item.contains("iterations") && item["iterations"].is_number())
      check(static_cast<double>(entry.iterations) == item["iterations"].get<double>(), "iterations are the file's");
    for (const auto& [counter, value] : entry.counters) {
      check(item.at(counter).get<double>() == value, "a counter is the file's");
      check(entry_value(entry, counter, "ms") == value, "a counter is returned as it is");
    }
    check(entry_matches(entry, entry.name) == (entry.run_type == "iteration"), "an iteration matches its name");
    for (const char* unit : {"ns", "us", "ms", "s"}) {
      answers([&] { (void)entry_value(entry, "real_time", unit); });
      answers([&] { (void)entry_value(entry, "cpu_time", unit); });
    }
    answers([&] {
      entry_value(entry, "name", "ms");  // a known field is never a counter
      check(false, "a missing counter is refused");
    });
    answers([&] {
      const TimedTotals totals = timed_totals(entries, entry.name);
      check(totals.iterations >= 0, "timed iterations are a count");
      check(totals.entries <= entries.size(), "no more matches than entries");
    });
  }
  answers([&] { (void)timed_totals(entries, ""); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json document = nlohmann::json::parse(dit::fuzz::as_text(data, size), nullptr, false);
  if (document.is_discarded()) return 0;
  std::vector<BenchmarkEntry> entries;
  try {
    entries = parse_benchmark_json(document, "bench.json");
  } catch (const dit::Error& error) {
    check(error.kind() == dit::ErrorKind::invalid_file, "refused benchmark JSON is an invalid_file error");
    return 0;
  }
  exercise(entries, document);  // past the parse, any exception is a finding
  return 0;
}
