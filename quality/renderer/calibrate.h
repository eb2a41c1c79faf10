// Fixed during a session (quality/ is the evaluator; see quality/README.md).
// Calibration: renders the corpus as restatements of the reference render that keep its
// arithmetic mode (kind "exact": a fresh engine instance, the case inside a larger batch at its
// front and at its back; on the CPU one thread instead of several; on the GPU other GEMM
// algorithms, tiles and split-K (gemm-plan-off, gemm-candidate-1/2), the other attention kernels,
// eager launches instead of CUDA Graphs, the VAE's bias outside cuDNN's fused call), on the CPU a
// rounding variant standing in for another GEMM algorithm (kind "rounding": every DiT weight one
// float32 ulp away), and scores each against the reference. It also measures the lane's numerical
// yardstick: for a set below fp32 (fp16, bf16, tf32) the reference against an fp32 render of the
// same corpus (its precision error), for an fp32 GPU set the TF32 variant (kind "numerical"). The
// rules at the top of calibrate.cpp turn these into the floors a contract holds per device and set
// (quality/floors.h): exact, numerical and fp32_bound.
#pragma once

#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "quality/corpus.h"
#include "quality/floors.h"
#include "quality/renderer/render.h"
#include "quality/scores.h"

namespace dit::quality {

inline constexpr const char* kCalibrationFormat = "dit-quality-calibration/2";

using MetricValues = std::map<std::string, double>;  // metric -> value

struct Restatement {
  std::string name;
  std::string kind;  // "exact" or "rounding" (both set the exact floors), "numerical" (the fp32 GPU yardstick)
  std::string description;
  ScoreSet scores;  // against the reference render
};

// The floors a calibration proposes for one device and gate set, and the rules that made them.
struct ProposedFloors {
  MetricValues exact;
  std::optional<MetricValues> numerical;   // absent where there is no yardstick (the CPU)
  std::optional<MetricValues> fp32_bound;  // sets below fp32 only
  std::string margin;                      // the rules, in words
};

struct Calibration {
  std::string device, set, backend, precision, corpus_name, corpus_sha256;
  std::vector<Restatement> restatements;
  MetricValues worst_spread;                    // worst over the exact and rounding restatements
  std::optional<MetricValues> precision_error;  // below fp32: the reference against the fp32 render
  std::optional<ScoreSet> precision_scores;     // ... per case
  ProposedFloors proposed;
  nlohmann::json to_json() const;
  // The proposed floors as the contract holds them; `calibration_file` the committed path of
  // to_json()'s file.
  SetFloors set_floors(const std::string& calibration_file) const;
};

// The distance metrics (latent L2, PSNR, SSIM, max pixel error) and the pass/fail ones
// (all_finite, determinism): the worst score of each over the cases of `scores`.
MetricValues worst_scores(const ScoreSet& scores, bool with_pass_fail_metrics);

// The exact floor of `metric` when exact restatements score `worst`.
double proposed_floor(const std::string& metric, double worst);
// The rules of each class (calibrate.cpp's constants). `yardstick`: the worst score of the lane's
// numerical reference (the precision error, or TF32's spread); `precision_error`: the reference
// against fp32. Numerical and fp32_bound floors are never stricter than the exact ones.
MetricValues exact_floors(const MetricValues& worst_spread);
MetricValues numerical_floors(const MetricValues& yardstick, const MetricValues& exact);
MetricValues fp32_bounds(const MetricValues& precision_error, const MetricValues& exact);
// All three, with the margin text; `yardstick_name` says what the yardstick was ("the fp16
// precision error against fp32", "the tf32 spread").
ProposedFloors propose_floors(const MetricValues& worst_spread, const std::optional<MetricValues>& yardstick,
                              const std::string& yardstick_name, const std::optional<MetricValues>& precision_error);

// The restatements `calibrate` renders for `settings` (name, kind, description), in order.
std::vector<Restatement> planned_restatements(const Corpus& corpus, const RenderSettings& settings);

// `device`: the floors' device key (gpu_probe.h device_key).
Calibration calibrate(const Corpus& corpus, const std::string& set, const std::string& device,
                      const RenderSettings& settings, std::ostream* log);

}  // namespace dit::quality
