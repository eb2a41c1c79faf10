// Fixed during a session (quality/ is the evaluator; see quality/README.md).
#include "quality/contract.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/files.h"
#include "core/sha256.h"

namespace dit::quality {

namespace {

using nlohmann::json;

const std::set<std::string> kTopLevelFields = {"about",
                                               "version",
                                               "strict_zero_regression",
                                               "strict_classifications",
                                               "required_metrics",
                                               "metrics",
                                               "critical_cases",
                                               "calibration",
                                               "floors"};
const std::set<std::string> kRuleFields = {"direction", "allowed_regression", "about"};

[[noreturn]] void malformed(const std::string& label, const std::string& problem) {
  throw Error(ErrorKind::invalid_file, label + ": " + problem);
}

double non_negative_number(const json& value, const std::string& label, const std::string& where) {
  if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0)
    malformed(label, where + " must be a finite number >= 0");
  return value.get<double>();
}

std::vector<std::string> string_list(const json& value, const std::string& label, const std::string& where) {
  if (!value.is_array()) malformed(label, where + " must be an array of strings");
  std::vector<std::string> out;
  for (const json& item : value) {
    if (!item.is_string() || item.get<std::string>().empty())
      malformed(label, where + " must be an array of non-empty strings");
    if (std::find(out.begin(), out.end(), item.get<std::string>()) != out.end())
      malformed(label, where + " lists \"" + item.get<std::string>() + "\" twice");
    out.push_back(item.get<std::string>());
  }
  return out;
}

MetricRule parse_rule(const std::string& name, const json& object, const std::string& label) {
  const std::string where = "metrics." + name;
  if (!object.is_object()) malformed(label, where + " must be an object");
  for (const auto& [key, value] : object.items()) {
    if (key == "floor")
      malformed(label, where + ".floor: floors are per device and gate set since version 2 (floors.<device>.<set>)");
    if (!kRuleFields.count(key)) malformed(label, where + ": unknown field \"" + key + "\"");
  }
  MetricRule rule;
  rule.name = name;
  if (!object.contains("direction")) malformed(label, where + ": missing field \"direction\"");
  const json& direction = object.at("direction");
  if (direction == "higher") {
    rule.direction = Direction::higher_is_better;
  } else if (direction == "lower") {
    rule.direction = Direction::lower_is_better;
  } else {
    malformed(label, where + ".direction must be \"higher\" or \"lower\"");
  }
  if (!object.contains("allowed_regression")) malformed(label, where + ": missing field \"allowed_regression\"");
  const json& allowed = object.at("allowed_regression");
  if (!allowed.is_object() || !allowed.contains("absolute") || !allowed.contains("relative") || allowed.size() != 2)
    malformed(label, where + ".allowed_regression must be {\"absolute\": x, \"relative\": y}");
  rule.allowed_absolute = non_negative_number(allowed.at("absolute"), label, where + ".allowed_regression.absolute");
  rule.allowed_relative = non_negative_number(allowed.at("relative"), label, where + ".allowed_regression.relative");
  return rule;
}

}  // namespace

const char* classification_name(Classification classification) {
  switch (classification) {
    case Classification::exact: return "exact";
    case Classification::numerical: return "numerical";
    case Classification::approximate: return "approximate";
    case Classification::quantization: return "quantization";
  }
  return "?";
}

Classification parse_classification(std::string_view name) {
  for (Classification c :
       {Classification::exact, Classification::numerical, Classification::approximate, Classification::quantization}) {
    if (name == classification_name(c)) return c;
  }
  throw Error(ErrorKind::invalid_argument, "unknown classification \"" + std::string(name) +
                                               "\" (expected exact, numerical, approximate or quantization)");
}

double MetricRule::threshold(double baseline) const {
  const double allowed = std::max(allowed_absolute, allowed_relative * std::abs(baseline));
  if (direction == Direction::higher_is_better) {
    const double limit = baseline - allowed;
    return floor ? std::min(limit, *floor) : limit;
  }
  const double limit = baseline + allowed;
  return floor ? std::max(limit, *floor) : limit;
}

bool MetricRule::within_threshold(double score, double baseline) const {
  if (!std::isfinite(score)) return false;
  return no_worse(score, threshold(baseline));
}

bool MetricRule::no_worse(double a, double b) const {
  if (!std::isfinite(a)) return false;
  return direction == Direction::higher_is_better ? a >= b : a <= b;
}

bool Contract::strict_for(Classification classification) const {
  if (strict_zero_regression || classification == Classification::quantization) return true;
  return std::find(strict_classifications.begin(), strict_classifications.end(), classification_name(classification)) !=
         strict_classifications.end();
}

bool Contract::requires_metric(std::string_view metric) const {
  return std::find(required_metrics.begin(), required_metrics.end(), metric) != required_metrics.end();
}

const MetricRule& Contract::rule(const std::string& metric) const {
  auto found = metrics.find(metric);
  if (found == metrics.end()) throw Error(ErrorKind::invalid_file, path + ": no rule for metric \"" + metric + "\"");
  return found->second;
}

const SetFloors* Contract::floors_for(const std::string& device, const std::string& set) const {
  auto on_device = floors.find(device);
  if (on_device == floors.end()) return nullptr;
  auto found = on_device->second.find(set);
  return found == on_device->second.end() ? nullptr : &found->second;
}

Contract Contract::with_floors(const std::map<std::string, double>& values) const {
  Contract out = *this;
  for (auto& [name, rule] : out.metrics) {
    auto found = values.find(name);
    rule.floor = found == values.end() ? std::nullopt : std::optional<double>(found->second);
  }
  return out;
}

const std::vector<std::string>& Contract::critical_cases_of(const std::string& corpus_name) const {
  auto found = critical_cases.find(corpus_name);
  if (found == critical_cases.end())
    throw Error(ErrorKind::invalid_file, path + ": critical_cases has no entry for the corpus \"" + corpus_name + "\"");
  return found->second;
}

Contract parse_contract(std::string_view text, const std::string& label) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& error) {  // a syntax error, or out_of_range for 1e999
    malformed(label, std::string("not valid JSON (") + error.what() + ")");
  }
  if (!root.is_object()) malformed(label, "the contract must be a JSON object");
  for (const auto& [key, value] : root.items()) {
    if (!kTopLevelFields.count(key)) malformed(label, "unknown field \"" + key + "\"");
  }
  for (const char* key : {"version", "strict_zero_regression", "strict_classifications", "required_metrics", "metrics",
                          "critical_cases", "floors"}) {
    if (!root.contains(key)) malformed(label, std::string("missing field \"") + key + "\"");
  }
  Contract contract;
  contract.path = label;
  contract.sha256 = sha256_hex(text);
  if (root.at("version") != 2)
    malformed(label,
              "version must be 2 (version 1 held one floor per metric; version 2 holds them per device and set)");
  contract.version = 2;
  if (!root.at("strict_zero_regression").is_boolean()) malformed(label, "strict_zero_regression must be true or false");
  contract.strict_zero_regression = root.at("strict_zero_regression").get<bool>();

  contract.strict_classifications = string_list(root.at("strict_classifications"), label, "strict_classifications");
  for (const std::string& name : contract.strict_classifications) {
    try {
      parse_classification(name);
    } catch (const Error& error) {
      malformed(label, std::string("strict_classifications: ") + error.what());
    }
  }
  if (std::find(contract.strict_classifications.begin(), contract.strict_classifications.end(), "quantization") ==
      contract.strict_classifications.end())
    malformed(label, "strict_classifications must include \"quantization\" (quantization is always strict)");

  contract.required_metrics = string_list(root.at("required_metrics"), label, "required_metrics");
  if (contract.required_metrics.empty()) malformed(label, "required_metrics is empty");
  const json& metrics = root.at("metrics");
  if (!metrics.is_object()) malformed(label, "metrics must be an object of metric rules");
  for (const auto& [name, object] : metrics.items()) contract.metrics[name] = parse_rule(name, object, label);
  for (const std::string& name : contract.required_metrics) {
    if (!contract.metrics.count(name)) malformed(label, "required metric \"" + name + "\" has no rule in metrics");
  }

  const json& critical = root.at("critical_cases");
  if (!critical.is_object()) malformed(label, "critical_cases must map corpus file names to arrays of case ids");
  for (const auto& [corpus_name, ids] : critical.items()) {
    contract.critical_cases[corpus_name] = string_list(ids, label, "critical_cases." + corpus_name);
  }
  contract.floors = parse_floors(root.at("floors"), label);
  for (const auto& [device, sets] : contract.floors) {
    for (const auto& [set, floors] : sets) {
      const std::string where = "floors." + device + "." + set;
      for (const std::string& name : contract.required_metrics) {
        if (!floors.exact.count(name))
          malformed(label, where + ".exact has no floor for required metric \"" + name + "\"");
        if (floors.numerical && !floors.numerical->count(name))
          malformed(label, where + ".numerical has no floor for required metric \"" + name + "\"");
      }
      for (const auto* table : {&floors.exact, floors.numerical ? &*floors.numerical : nullptr,
                                floors.fp32_bound ? &*floors.fp32_bound : nullptr}) {
        if (!table) continue;
        for (const auto& [name, value] : *table) {
          if (!contract.metrics.count(name))
            malformed(label, where + ": \"" + name + "\" is not a metric of the contract");
        }
      }
    }
  }
  return contract;
}

Contract load_contract(const std::string& path) { return parse_contract(read_text_file(path), path); }

}  // namespace dit::quality
