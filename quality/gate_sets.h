// Fixed during a session (quality/ is the evaluator; see quality/README.md).
// A gate set: one corpus rendered on one backend and judged under one contract. CMake's
// dit_add_gate() writes every set of a build into <build>/quality/gate-sets.json, which
// `dit-quality --gate-sets` reads, so the CTest gates and `dit-quality baseline` agree.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quality/corpus.h"

namespace dit::quality {

struct GateSet {
  std::string name;      // "cpu", "gpu": names tests (quality.<name>.<metric>) and baseline folders
  std::string corpus;    // path of the .jsonl corpus
  std::string contract;  // path of contract.json
  std::string backend = "cpu";
  std::string precision = "fp32";
  std::string data_dir;  // tests/data
  // The DiT checkpoint of every case that names none of its own (dit_add_gate's WEIGHTS and
  // WEIGHTS_SHA256); nullopt: those cases render the embedded default (Case::weights_seed).
  std::optional<WeightsReference> weights;
  bool needs_gpu() const { return backend == "cuda"; }
};

// Throws dit::Error (invalid_file) "<label>: <problem>" naming the entry. A set's "weights"
// ({"path", "sha256"}, as in a corpus) with a relative path is taken from the folder of `label`.
std::vector<GateSet> parse_gate_sets(std::string_view text, const std::string& label);
// Throws dit::Error (io / invalid_file) naming the file and the entry.
std::vector<GateSet> load_gate_sets(const std::string& path);

// The checkpoint case `c` of `set` renders from: its own, else the set's; nullopt: the embedded
// default (seeded random weights): what the renderer renders it from (case_weights), for the
// benchmarks that time the case.
inline const std::optional<WeightsReference>& case_checkpoint(const Case& c, const GateSet& set) {
  return c.weights ? c.weights : set.weights;
}

}  // namespace dit::quality
