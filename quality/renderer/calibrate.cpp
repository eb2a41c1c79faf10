// Fixed during a session (quality/ is the evaluator; see quality/README.md).
#include "quality/renderer/calibrate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <ostream>

#include <omp.h>

#include "quality/metrics.h"
#include "quality/scoring.h"

namespace dit::quality {

// How measured spreads become floors: the worst score over the exact and rounding
// restatements, widened by these factors. The minimums only apply when that spread is zero.
constexpr double kSafetyFactor = 10.0;        // latent and SSIM floors sit 10x beyond the spread
constexpr double kLatentMinimum = 1e-6;       // latent_relative_l2 floor for a zero spread
constexpr double kPixelLevelsMinimum = 2.0;   // max_abs_pixel_error floor: a 1-level flip, doubled
constexpr double kPsnrCeilingDb = 80.0;       // image_psnr floor never above this
constexpr double kPsnrSafetyDb = 10.0;        // dB below the worst measured PSNR
constexpr double kSsimMinimumDeficit = 1e-5;  // 1 - image_ssim floor never below this
constexpr int kBatchCompanions = 2;           // other images in the batch restatements

namespace {

// Moves every weight one ulp, the direction from a fixed hash of its position.
void nudge_by_one_ulp(DitWeights& weights) {
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (auto& [name, tensor] : weights.tensors) {
    for (float& w : tensor.data) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      w = std::nextafter(w, (state >> 63) ? INFINITY : -INFINITY);
    }
  }
}

}  // namespace

// Two significant digits, rounded towards the lenient side so the floor stays beyond the spread.
static double round_outward(double value, bool up) {
  if (value == 0 || !std::isfinite(value)) return value;
  const double scale = std::pow(10.0, std::floor(std::log10(std::abs(value))) - 1);
  const double digits = value / scale;
  // The tolerance keeps 1e-5 / 1e-6 = 10.000000000000002 from rounding up to 11.
  return (up ? std::ceil(digits - 1e-9) : std::floor(digits + 1e-9)) * scale;
}

double proposed_floor(const std::string& metric, double worst) {
  if (metric == kLatentRelativeL2) return worst > 0 ? round_outward(kSafetyFactor * worst, true) : kLatentMinimum;
  if (metric == kMaxAbsPixelError) return std::max(kPixelLevelsMinimum, 2 * worst);
  if (metric == kImagePsnr) return std::min(kPsnrCeilingDb, std::floor(worst - kPsnrSafetyDb));
  if (metric == kImageSsim)
    return 1.0 - round_outward(std::max(kSsimMinimumDeficit, kSafetyFactor * (1.0 - worst)), true);
  return 1.0;  // all_finite, determinism: no tolerance
}

nlohmann::json Calibration::to_json(const Contract& contract) const {
  nlohmann::json out = {{"restatements", nlohmann::json::array()},
                        {"worst_spread", worst_spread},
                        {"proposed_floor", proposed_floor},
                        {"contract_floor", nlohmann::json::object()}};
  for (const Restatement& r : restatements) {
    nlohmann::json worst = nlohmann::json::object();
    for (const auto& [metric, rule] : contract.metrics) {
      const Aggregate a = r.scores.aggregate(metric, rule.direction);
      if (a.cases > 0) worst[metric] = std::isfinite(a.worst) ? nlohmann::json(a.worst) : nlohmann::json(nullptr);
    }
    out["restatements"].push_back({{"name", r.name},
                                   {"kind", r.kind},
                                   {"description", r.description},
                                   {"worst", worst},
                                   {"scores", r.scores.to_json()}});
  }
  for (const auto& [metric, rule] : contract.metrics) {
    out["contract_floor"][metric] = rule.floor ? nlohmann::json(*rule.floor) : nlohmann::json(nullptr);
  }
  return out;
}

Calibration calibrate(const Corpus& corpus, const RenderSettings& settings, std::ostream* log) {
  struct Plan {
    std::string name, kind, description;
    std::function<RenderedCase(Renderer&, const Case&)> render;
    Precision precision;
    int threads;  // 0: the OpenMP default
    std::function<void(DitWeights&)> edit_weights = {};
  };
  const int default_threads = omp_get_max_threads();
  std::vector<Plan> plans = {
      {"fresh-instance", "exact", "the same case from a newly constructed model and decoder",
       [](Renderer& r, const Case& c) { return r.render(c); }, settings.precision, 0},
      {"batch-front", "exact", "the case first in a batch with 2 other images",
       [](Renderer& r, const Case& c) { return r.render_in_batch(c, kBatchCompanions, 0); }, settings.precision, 0},
      {"batch-back", "exact", "the case last in a batch with 2 other images",
       [](Renderer& r, const Case& c) { return r.render_in_batch(c, kBatchCompanions, kBatchCompanions); },
       settings.precision, 0},
  };
  // Stands in for "another valid GEMM algorithm", which the public API cannot select: what
  // float32 rounding differences alone do to a sampling run.
  plans.push_back({"weights-one-ulp", "rounding", "every DiT weight moved by one float32 ulp, up or down",
                   [](Renderer& r, const Case& c) { return r.render(c); }, settings.precision, 0,
                   [](DitWeights& weights) { nudge_by_one_ulp(weights); }});
  if (settings.backend == Backend::cpu && default_threads > 1)
    plans.push_back({"one-thread", "exact", "one OpenMP thread instead of " + std::to_string(default_threads),
                     [](Renderer& r, const Case& c) { return r.render(c); }, settings.precision, 1});
  if (settings.backend == Backend::cuda && settings.precision == Precision::fp32)
    plans.push_back({"tf32", "numerical", "TF32 tensor-core GEMMs instead of the fp32 path",
                     [](Renderer& r, const Case& c) { return r.render(c); }, Precision::tf32, 0});

  std::map<std::string, RenderedCase> reference;
  {
    Renderer renderer(settings);
    for (const Case& c : corpus.cases) reference.emplace(c.id, renderer.render(c));
  }
  Calibration calibration;
  for (const Plan& plan : plans) {
    const auto start = std::chrono::steady_clock::now();
    RenderSettings restated = settings;
    restated.precision = plan.precision;
    restated.edit_weights = plan.edit_weights;
    if (plan.threads > 0) omp_set_num_threads(plan.threads);
    Restatement restatement{plan.name, plan.kind, plan.description, {}};
    {
      Renderer renderer(restated);
      for (const Case& c : corpus.cases) {
        const RenderedCase out = plan.render(renderer, c);
        const RenderedCase& ref = reference.at(c.id);
        score_outputs(c.id, out.latent, out.image, ref.latent, ref.image, true, restatement.scores);
      }
    }
    omp_set_num_threads(default_threads);
    if (log)
      *log << plan.name << " (" << plan.kind
           << "): " << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s\n";
    calibration.restatements.push_back(std::move(restatement));
  }
  for (const std::string& metric : {std::string(kLatentRelativeL2), std::string(kImagePsnr), std::string(kImageSsim),
                                    std::string(kMaxAbsPixelError)}) {
    const Direction direction =
        (metric == kImagePsnr || metric == kImageSsim) ? Direction::higher_is_better : Direction::lower_is_better;
    double worst = direction == Direction::higher_is_better ? kPsnrOfIdenticalImages : 0.0;
    if (metric == kImageSsim) worst = 1.0;
    for (const Restatement& r : calibration.restatements) {
      if (r.kind == "numerical") continue;
      const double w = r.scores.aggregate(metric, direction).worst;
      if (!std::isfinite(w)) {
        worst = w;
        break;
      }
      worst = direction == Direction::higher_is_better ? std::min(worst, w) : std::max(worst, w);
    }
    calibration.worst_spread[metric] = worst;
    calibration.proposed_floor[metric] = proposed_floor(metric, worst);
  }
  calibration.proposed_floor[kAllFinite] = proposed_floor(kAllFinite, 1.0);
  calibration.proposed_floor[kDeterminism] = proposed_floor(kDeterminism, 1.0);
  return calibration;
}

}  // namespace dit::quality
