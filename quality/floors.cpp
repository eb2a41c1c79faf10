// Fixed during a session (quality/ is the evaluator; see quality/README.md).
#include "quality/floors.h"

#include <cmath>
#include <set>

#include "core/error.h"

namespace dit::quality {

namespace {

using nlohmann::json;

const std::set<std::string> kSetFields = {"calibration", "margin", "exact", "numerical", "fp32_bound"};

[[noreturn]] void floors_malformed(const std::string& label, const std::string& problem) {
  throw Error(ErrorKind::invalid_file, label + ": " + problem);
}

std::map<std::string, double> metric_values(const json& object, const std::string& label, const std::string& where) {
  if (!object.is_object() || object.empty())
    floors_malformed(label, where + " must be a non-empty object of metric: number");
  std::map<std::string, double> values;
  for (const auto& [metric, value] : object.items()) {
    if (metric.empty()) floors_malformed(label, where + " has an empty metric name");
    if (!value.is_number() || !std::isfinite(value.get<double>()))
      floors_malformed(label, where + "." + metric + " must be a finite number");
    values[metric] = value.get<double>();
  }
  return values;
}

std::string text_field(const json& object, const char* key, const std::string& label, const std::string& where) {
  if (!object.contains(key)) floors_malformed(label, where + ": missing field \"" + key + "\"");
  const json& value = object.at(key);
  if (!value.is_string() || value.get<std::string>().empty())
    floors_malformed(label, where + "." + key + " must be a non-empty string");
  return value.get<std::string>();
}

SetFloors parse_set(const json& object, const std::string& label, const std::string& where) {
  if (!object.is_object()) floors_malformed(label, where + " must be an object");
  for (const auto& [key, value] : object.items()) {
    if (!kSetFields.count(key)) floors_malformed(label, where + ": unknown field \"" + key + "\"");
  }
  SetFloors floors;
  floors.calibration = text_field(object, "calibration", label, where);
  floors.margin = text_field(object, "margin", label, where);
  if (!object.contains("exact")) floors_malformed(label, where + ": missing field \"exact\"");
  floors.exact = metric_values(object.at("exact"), label, where + ".exact");
  if (object.contains("numerical"))
    floors.numerical = metric_values(object.at("numerical"), label, where + ".numerical");
  if (object.contains("fp32_bound"))
    floors.fp32_bound = metric_values(object.at("fp32_bound"), label, where + ".fp32_bound");
  return floors;
}

}  // namespace

json SetFloors::to_json() const {
  json out = {{"calibration", calibration}, {"margin", margin}, {"exact", exact}};
  if (numerical) out["numerical"] = *numerical;
  if (fp32_bound) out["fp32_bound"] = *fp32_bound;
  return out;
}

FloorTable parse_floors(const json& floors, const std::string& label) {
  if (!floors.is_object()) floors_malformed(label, "floors must map device names to gate sets");
  FloorTable table;
  for (const auto& [device, sets] : floors.items()) {
    const std::string where = "floors." + device;
    if (device.empty()) floors_malformed(label, "floors has an empty device name");
    if (!sets.is_object()) floors_malformed(label, where + " must map gate set names to floors");
    for (const auto& [set, object] : sets.items()) {
      if (set.empty()) floors_malformed(label, where + " has an empty gate set name");
      table[device][set] = parse_set(object, label, where + "." + set);
    }
  }
  return table;
}

std::string contract_with_floors(std::string_view contract_text, const std::string& device, const std::string& set,
                                 const SetFloors& floors) {
  json root;
  try {
    root = json::parse(contract_text);
  } catch (const json::exception& error) {
    throw Error(ErrorKind::invalid_file, std::string("the contract is not valid JSON (") + error.what() + ")");
  }
  if (!root.is_object()) throw Error(ErrorKind::invalid_file, "the contract must be a JSON object");
  if (device.empty() || set.empty()) throw Error(ErrorKind::invalid_argument, "floors need a device and a set name");
  if (!root.contains("floors") || !root["floors"].is_object()) root["floors"] = json::object();
  root["floors"][device][set] = floors.to_json();
  return root.dump(2) + "\n";
}

}  // namespace dit::quality
