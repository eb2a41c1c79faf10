// Fixed during a session (quality/ is the evaluator; see quality/README.md).
// Calibration: renders exact restatements of the baseline (a fresh engine instance, the case
// inside a larger batch at its front and at its back, one CPU thread instead of several) and
// a rounding variant (every DiT weight moved by one float32 ulp, standing in for another valid
// GEMM algorithm, which the public API cannot select), and scores each against a reference
// render. The worst spread of every metric over those, widened by the rules at the top of
// calibrate.cpp, gives the contract's floors. Numerical variants (TF32 on the GPU) are
// measured and reported, never used for margins.
#pragma once

#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "quality/contract.h"
#include "quality/corpus.h"
#include "quality/renderer/render.h"
#include "quality/scores.h"

namespace dit::quality {

struct Restatement {
  std::string name;
  std::string kind;  // "exact" or "rounding" (both set the margins), "numerical" (reported only)
  std::string description;
  ScoreSet scores;  // against the reference render
};

struct Calibration {
  std::vector<Restatement> restatements;
  std::map<std::string, double> worst_spread;    // metric -> worst over exact and rounding ones
  std::map<std::string, double> proposed_floor;  // metric -> floor derived from that spread
  nlohmann::json to_json(const Contract& contract) const;
};

// The floor a contract should carry for `metric` when exact restatements score `worst`.
double proposed_floor(const std::string& metric, double worst);

Calibration calibrate(const Corpus& corpus, const RenderSettings& settings, std::ostream* log);

}  // namespace dit::quality
