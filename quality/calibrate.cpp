// Fixed during a session (quality/ is the evaluator; see quality/README.md).
#include "quality/calibrate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <ostream>

#include <omp.h>

#include "quality/metrics.h"
#include "quality/scoring.h"

namespace dit::quality {

// How measured spreads become floors. Where exact restatements are bit-identical (spread 0),
// the resolution minimums decide: about what one fp32 reordering (a different GEMM algorithm
// or split) does to a sampling run, and a one-level rounding flip of a few pixels.
constexpr double kSafetyFactor = 10.0;              // floors sit this far beyond the worst spread
constexpr double kLatentResolution = 1e-5;          // smallest latent_relative_l2 floor
constexpr double kPixelLevelsResolution = 2.0;      // smallest max_abs_pixel_error floor (levels)
constexpr double kPsnrResolutionDb = 60.0;          // highest image_psnr floor (dB)
constexpr double kPsnrSafetyDb = 10.0;              // dB below the worst measured PSNR
constexpr double kSsimResolutionDeficit = 1e-3;     // smallest 1 - image_ssim floor
constexpr int kBatchCompanions = 2;                 // other images in the batch restatements

double proposed_floor(const std::string& metric, double worst) {
  if (metric == kLatentRelativeL2) return std::max(kLatentResolution, kSafetyFactor * worst);
  if (metric == kMaxAbsPixelError) return std::max(kPixelLevelsResolution, 2 * worst);
  if (metric == kImagePsnr) return std::min(kPsnrResolutionDb, worst - kPsnrSafetyDb);
  if (metric == kImageSsim) return 1.0 - std::max(kSsimResolutionDeficit, kSafetyFactor * (1.0 - worst));
  return 1.0;  // all_finite, determinism: no tolerance
}

nlohmann::json Calibration::to_json(const Contract& contract) const {
  nlohmann::json out = {{"restatements", nlohmann::json::array()},
                        {"worst_exact_spread", worst_exact_spread},
                        {"proposed_floor", proposed_floor},
                        {"contract_floor", nlohmann::json::object()}};
  for (const Restatement& r : restatements) {
    nlohmann::json worst = nlohmann::json::object();
    for (const auto& [metric, rule] : contract.metrics) {
      const Aggregate a = r.scores.aggregate(metric, rule.direction);
      if (a.cases > 0) worst[metric] = std::isfinite(a.worst) ? nlohmann::json(a.worst) : nlohmann::json(nullptr);
    }
    out["restatements"].push_back({{"name", r.name}, {"kind", r.kind}, {"description", r.description},
                                   {"worst", worst}, {"scores", r.scores.to_json()}});
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
      *log << plan.name << " (" << plan.kind << "): "
           << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s\n";
    calibration.restatements.push_back(std::move(restatement));
  }
  for (const std::string& metric : {std::string(kLatentRelativeL2), std::string(kImagePsnr), std::string(kImageSsim),
                                    std::string(kMaxAbsPixelError)}) {
    const Direction direction = (metric == kImagePsnr || metric == kImageSsim) ? Direction::higher_is_better
                                                                                 : Direction::lower_is_better;
    double worst = direction == Direction::higher_is_better ? kPsnrOfIdenticalImages : 0.0;
    if (metric == kImageSsim) worst = 1.0;
    for (const Restatement& r : calibration.restatements) {
      if (r.kind != "exact") continue;
      const double w = r.scores.aggregate(metric, direction).worst;
      if (!std::isfinite(w)) {
        worst = w;
        break;
      }
      worst = direction == Direction::higher_is_better ? std::min(worst, w) : std::max(worst, w);
    }
    calibration.worst_exact_spread[metric] = worst;
    calibration.proposed_floor[metric] = proposed_floor(metric, worst);
  }
  calibration.proposed_floor[kAllFinite] = proposed_floor(kAllFinite, 1.0);
  calibration.proposed_floor[kDeterminism] = proposed_floor(kDeterminism, 1.0);
  return calibration;
}

}  // namespace dit::quality
