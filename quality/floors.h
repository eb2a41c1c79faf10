// Fixed during a session (quality/ is the evaluator; see quality/README.md).
// The floors of the quality contract, per device and gate set: what a calibration on that device
// measured, widened by the margins it states. A gate on a device the contract has no floors for
// refuses, naming the command that calibrates it.
//
// In contract.json (version 2):
//   "floors": {
//     "<device>": {            // "cpu" for the CPU backend, else the GPU's name ("NVIDIA H200")
//       "<set>": {
//         "calibration": "quality/calibration/<file>.json",  // the committed data they come from
//         "margin": "...",                                    // how the data became floors (text)
//         "exact": {"<metric>": floor, ...},                  // every required metric
//         "numerical": {"<metric>": floor, ...},              // optional: absent, numerical is refused
//         "fp32_bound": {"<metric>": bound, ...}              // 16-bit sets: against the fp32 golden
//       }}}
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace dit::quality {

struct SetFloors {
  std::string calibration;  // the calibration file, relative to the source tree
  std::string margin;       // how its spreads became these floors
  std::map<std::string, double> exact;
  std::optional<std::map<std::string, double>> numerical;
  std::optional<std::map<std::string, double>> fp32_bound;
  nlohmann::json to_json() const;
};

// device -> set -> floors
using FloorTable = std::map<std::string, std::map<std::string, SetFloors>>;

// Throws dit::Error (invalid_file) "<label>: floors.<device>.<set>...: <problem>".
FloorTable parse_floors(const nlohmann::json& floors, const std::string& label);

// The contract text with floors.<device>.<set> replaced by `floors` (everything else as it was);
// throws dit::Error (invalid_file) when `contract_text` is not a contract object.
std::string contract_with_floors(std::string_view contract_text, const std::string& device, const std::string& set,
                                 const SetFloors& floors);

}  // namespace dit::quality
