// libFuzzer target for the gate-sets reader (quality/gate_sets.cpp, parse_gate_sets: the
// gate-sets.json that cmake/DitGates.cmake writes into a build): any byte string either parses
// into one GateSet per entry of "sets", or is refused with dit::Error(invalid_file). An accepted
// list written back in DitGates.cmake's format reads back equal. Anything else (a crash,
// undefined behaviour, another exception) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "fuzz/fuzz_support.h"
#include "quality/gate_sets.h"

namespace {

using dit::fuzz::check;
using dit::quality::GateSet;

// What DitGates.cmake writes: {"sets": [{"name", "corpus", "contract", "backend", "precision", "data_dir"}]}.
std::string write_gate_sets(const std::vector<GateSet>& sets) {
  nlohmann::json document{{"sets", nlohmann::json::array()}};
  for (const GateSet& set : sets) {
    document["sets"].push_back({{"name", set.name},
                                {"corpus", set.corpus},
                                {"contract", set.contract},
                                {"backend", set.backend},
                                {"precision", set.precision},
                                {"data_dir", set.data_dir}});
  }
  return document.dump(2);
}

bool same(const GateSet& a, const GateSet& b) {
  return a.name == b.name && a.corpus == b.corpus && a.contract == b.contract && a.backend == b.backend &&
         a.precision == b.precision && a.data_dir == b.data_dir;
}

void exercise(const std::vector<GateSet>& sets, std::string_view text) {
  const nlohmann::json document = nlohmann::json::parse(text);  // it parsed once already
  check(document.at("sets").size() == sets.size(), "one gate set per entry");
  for (const GateSet& set : sets) check(set.needs_gpu() == (set.backend == "cuda"), "cuda sets need a GPU");
  const std::vector<GateSet> again = dit::quality::parse_gate_sets(write_gate_sets(sets), "written.json");
  check(again.size() == sets.size(), "the written list has as many sets");
  for (size_t i = 0; i < sets.size(); ++i) check(same(again[i], sets[i]), "a written set reads back equal");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = dit::fuzz::as_text(data, size);
  std::vector<GateSet> parsed;
  try {
    parsed = dit::quality::parse_gate_sets(text, "gate-sets.json");
  } catch (const dit::Error& error) {
    check(error.kind() == dit::ErrorKind::invalid_file, "a refused gate-sets file is an invalid_file error");
    return 0;
  }
  exercise(parsed, text);  // past the parse, any exception is a finding
  return 0;
}
