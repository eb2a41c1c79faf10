// libFuzzer target for the quality contract reader (quality/contract.cpp, parse_contract): any
// byte string either parses into a contract that keeps the rules the gates rely on, or is
// refused with dit::Error(invalid_file). Anything else (a crash, undefined behaviour, another
// exception such as nlohmann::json's) is a finding.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "core/error.h"
#include "core/sha256.h"
#include "fuzz/fuzz_support.h"
#include "quality/contract.h"

namespace {

using dit::fuzz::check;
using namespace dit::quality;

void exercise(const Contract& contract, std::string_view text) {
  check(contract.path == "contract.json", "the contract is named by its label");
  check(contract.sha256 == dit::sha256_hex(text), "the contract's sha256 is that of its bytes");
  check(contract.version == 2, "only version 2 is accepted");
  // Quantization is always judged strictly; the listed classifications are all known names.
  check(contract.strict_for(Classification::quantization), "quantization is strict");
  for (const std::string& name : contract.strict_classifications) {
    check(contract.strict_for(parse_classification(name)), "a listed classification is strict");
  }
  check(!contract.required_metrics.empty(), "some metric is required");
  for (const std::string& metric : contract.required_metrics) {
    check(contract.requires_metric(metric), "a listed metric is required");
    check(contract.rule(metric).name == metric, "a required metric has its rule");
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double infinity = std::numeric_limits<double>::infinity();
  for (const auto& [name, rule] : contract.metrics) {
    check(rule.name == name, "a rule is keyed by its metric");
    check(std::isfinite(rule.allowed_absolute) && rule.allowed_absolute >= 0, "allowed_absolute is finite, >= 0");
    check(std::isfinite(rule.allowed_relative) && rule.allowed_relative >= 0, "allowed_relative is finite, >= 0");
    check(!rule.floor || std::isfinite(*rule.floor), "a floor is finite");
    for (double baseline : {0.0, 1.0, -1.0, 0.5, 150.0, 1e300, -1e300, rule.floor.value_or(2.0)}) {
      // A score equal to the baseline's never fails a non-strict gate; a non-finite one always does.
      check(rule.within_threshold(baseline, baseline), "the baseline's own score passes");
      check(rule.no_worse(baseline, baseline), "a score is no worse than itself");
      check(!rule.within_threshold(nan, baseline), "NaN never passes");
      check(!rule.within_threshold(infinity, baseline) && !rule.within_threshold(-infinity, baseline),
            "an infinite score never passes");
      if (rule.floor) check(rule.within_threshold(*rule.floor, baseline), "a score at the floor passes");
    }
  }
  // Every calibrated set has a floor for every required metric, each finite, in each class; the
  // contract with a class's floors keeps the rules above with the floor set.
  for (const auto& [device, sets] : contract.floors) {
    for (const auto& [set, floors] : sets) {
      check(contract.floors_for(device, set) == &floors, "floors are found by device and set");
      for (const auto* table : {&floors.exact, floors.numerical ? &*floors.numerical : nullptr,
                                floors.fp32_bound ? &*floors.fp32_bound : nullptr}) {
        if (!table) continue;
        for (const auto& [metric, value] : *table) {
          check(std::isfinite(value), "a floor is finite");
          check(contract.metrics.count(metric) == 1, "a floor names a metric of the contract");
        }
      }
      for (const std::string& metric : contract.required_metrics) {
        check(floors.exact.count(metric) == 1, "every required metric has an exact floor");
        const Contract judged = contract.with_floors(floors.exact);
        const MetricRule& rule = judged.rule(metric);
        check(rule.floor && *rule.floor == floors.exact.at(metric), "with_floors sets the class's floor");
        check(rule.within_threshold(*rule.floor, 0.0) && rule.within_threshold(*rule.floor, 150.0),
              "a score at the floor passes");
      }
    }
  }
  check(contract.floors_for(std::string("\0none", 5), "cpu") == nullptr, "an unlisted device has no floors");
  for (const auto& [corpus, ids] : contract.critical_cases) {
    check(&contract.critical_cases_of(corpus) == &ids, "critical cases are found by corpus name");
  }
  try {
    contract.critical_cases_of(std::string("\0unlisted", 9));
    check(false, "an unlisted corpus has no critical cases");
  } catch (const dit::Error& error) {
    check(error.kind() == dit::ErrorKind::invalid_file, "an unlisted corpus is an invalid_file error");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = dit::fuzz::as_text(data, size);
  Contract parsed;
  try {
    parsed = parse_contract(text, "contract.json");
  } catch (const dit::Error& error) {
    check(error.kind() == dit::ErrorKind::invalid_file, "a refused contract is an invalid_file error");
    return 0;
  }
  exercise(parsed, text);  // past the parse, any exception is a finding
  return 0;
}
