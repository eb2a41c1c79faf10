// Fixed during a session (quality/ is the evaluator; see quality/README.md).
// A gate set: one corpus rendered on one backend and judged under one contract. CMake's
// dit_add_gate() writes every set of a build into <build>/quality/gate-sets.json, which
// `dit-quality --gate-sets` reads, so the CTest gates and `dit-quality baseline` agree.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dit::quality {

struct GateSet {
  std::string name;      // "cpu", "gpu": names tests (quality.<name>.<metric>) and baseline folders
  std::string corpus;    // path of the .jsonl corpus
  std::string contract;  // path of contract.json
  std::string backend = "cpu";
  std::string precision = "fp32";
  std::string data_dir;  // tests/data
  bool needs_gpu() const { return backend == "cuda"; }
};

// Throws dit::Error (invalid_file) "<label>: <problem>" naming the entry.
std::vector<GateSet> parse_gate_sets(std::string_view text, const std::string& label);
// Throws dit::Error (io / invalid_file) naming the file and the entry.
std::vector<GateSet> load_gate_sets(const std::string& path);

}  // namespace dit::quality
