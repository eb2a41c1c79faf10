// Fixed during a session (quality/ is the evaluator; see quality/README.md).
#include "quality/renderer/calibrate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <ostream>
#include <sstream>

#include <omp.h>

#include "quality/metrics.h"
#include "quality/scoring.h"

namespace dit::quality {

// How measured spreads become floors. Exact: the worst score over the exact and rounding
// restatements, widened by these factors; the minimums only apply when that spread is zero.
constexpr double kSafetyFactor = 10.0;        // latent and SSIM floors sit 10x beyond the spread
constexpr double kLatentMinimum = 1e-6;       // latent_relative_l2 floor for a zero spread
constexpr double kPixelFactor = 2.0;          // max_abs_pixel_error floor: 2x the spread ...
constexpr double kPixelLevelsMinimum = 2.0;   // ... and at least a 1-level flip, doubled
constexpr double kPsnrCeilingDb = 80.0;       // image_psnr floor never above this
constexpr double kPsnrSafetyDb = 10.0;        // dB below the worst measured PSNR
constexpr double kSsimMinimumDeficit = 1e-5;  // 1 - image_ssim floor never below this
// Numerical: a numerical change may move the outputs as far from the golden as the lane's own
// yardstick (the precision error against fp32; on an fp32 GPU set, TF32's spread) lies.
constexpr double kNumericalFactor = 1.0;  // latent, SSIM deficit and max pixel error: 1x the yardstick
constexpr double kNumericalPsnrDb = 0.0;  // dB below the yardstick's PSNR
// fp32_bound: how far from the fp32 golden a candidate of a set below fp32 may be: twice as far
// as the baseline's own precision error, so a numerical change cannot drift twice over.
constexpr double kFp32BoundFactor = 2.0;       // latent, SSIM deficit and max pixel error: 2x
constexpr double kFp32BoundPixelLevels = 1.0;  // ... plus one level for the pixel error
constexpr double kFp32BoundPsnrDb = 3.0;       // dB below the precision error's PSNR
constexpr int kBatchCompanions = 2;            // images the batch restatements add to a case's request

namespace {

const std::vector<std::string> kDistanceMetrics = {kLatentRelativeL2, kImagePsnr, kImageSsim, kMaxAbsPixelError};

Direction direction_of(const std::string& metric) {
  return metric == kLatentRelativeL2 || metric == kMaxAbsPixelError ? Direction::lower_is_better
                                                                    : Direction::higher_is_better;
}

// The more lenient of two floors of `metric`.
double lenient(const std::string& metric, double a, double b) {
  if (!std::isfinite(a) || !std::isfinite(b)) return std::isfinite(a) ? b : a;  // a NaN stays visible
  return direction_of(metric) == Direction::lower_is_better ? std::max(a, b) : std::min(a, b);
}

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

// Two significant digits, rounded towards the lenient side so the floor stays beyond the spread.
double round_outward(double value, bool up) {
  if (value == 0 || !std::isfinite(value)) return value;
  const double scale = std::pow(10.0, std::floor(std::log10(std::abs(value))) - 1);
  const double digits = value / scale;
  // The tolerance keeps 1e-5 / 1e-6 = 10.000000000000002 from rounding up to 11.
  return (up ? std::ceil(digits - 1e-9) : std::floor(digits + 1e-9)) * scale;
}

// One widening rule per metric: latent and SSIM deficit `factor`x, pixels `factor`x + `levels`,
// PSNR `db` below; every result never stricter than `exact`.
MetricValues widened(const MetricValues& measured, const MetricValues& exact, double factor, double levels, double db) {
  MetricValues out;
  for (const std::string& metric : kDistanceMetrics) {
    const auto found = measured.find(metric);
    if (found == measured.end()) continue;
    const double m = found->second;
    double floor = m;
    if (metric == kLatentRelativeL2) floor = round_outward(factor * m, true);
    if (metric == kMaxAbsPixelError) floor = std::ceil(factor * m + levels);
    if (metric == kImagePsnr) floor = std::floor(std::min(m, kPsnrOfIdenticalImages) - db);
    if (metric == kImageSsim) floor = 1.0 - round_outward(factor * (1.0 - m), true);
    const auto exact_floor = exact.find(metric);
    out[metric] = exact_floor == exact.end() ? floor : lenient(metric, floor, exact_floor->second);
  }
  return out;
}

std::string number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// A restatement to render: its engine settings and how it renders a case.
struct Plan {
  std::string name, kind, description;
  std::function<RenderedCase(Renderer&, const Case&)> render;
  RenderSettings settings;
  int threads = 0;  // 0: the OpenMP default
};

RenderedCase render_alone(Renderer& renderer, const Case& c) { return renderer.render(c); }

// The companions of the batch restatements: those of the case's own request, and two more.
int restated_companions(const Case& c) { return c.batch - 1 + kBatchCompanions; }

// The attention forms every case of the corpus runs at `precision`, except those that are every
// case's default already (they would restate nothing).
std::vector<std::string> other_attention_forms(const Corpus& corpus, const RenderSettings& settings) {
  std::vector<std::string> common = {"flash", "tiled", "naive"};
  std::vector<std::string> defaults;
  for (const Case& c : corpus.cases) {
    const std::vector<std::string> forms =
        cuda_attention_forms(settings.precision, case_model_config(c, settings.data_dir).head_dim());
    std::erase_if(common,
                  [&](const std::string& form) { return std::find(forms.begin(), forms.end(), form) == forms.end(); });
    if (std::find(defaults.begin(), defaults.end(), forms.front()) == defaults.end()) defaults.push_back(forms.front());
  }
  if (defaults.size() == 1) std::erase(common, defaults.front());
  return common;
}

std::vector<Plan> plans_for(const Corpus& corpus, const RenderSettings& settings) {
  const bool cuda = settings.backend == Backend::cuda;
  const bool sixteen_bit = settings.precision == Precision::fp16 || settings.precision == Precision::bf16;
  const auto with = [&](const std::function<void(RenderSettings&)>& edit) {
    RenderSettings restated = settings;
    edit(restated);
    return restated;
  };
  std::vector<Plan> plans = {
      {"fresh-instance", "exact", "the same case from a newly constructed model and decoder", render_alone, settings},
      {"batch-front", "exact", "the case first in a batch of 2 more images than its request's",
       [](Renderer& r, const Case& c) { return r.render_in_batch(c, restated_companions(c), 0); }, settings},
      {"batch-back", "exact", "the case last in a batch of 2 more images than its request's",
       [](Renderer& r, const Case& c) { return r.render_in_batch(c, restated_companions(c), restated_companions(c)); },
       settings},
  };
  if (!cuda) {
    const int default_threads = omp_get_max_threads();
    if (default_threads > 1)
      plans.push_back({"one-thread", "exact", "one OpenMP thread instead of " + std::to_string(default_threads),
                       render_alone, settings, 1});
    // The CPU reference has no other GEMM algorithm to select: what float32 rounding differences
    // alone do to a sampling run stands in for one.
    plans.push_back({"weights-one-ulp", "rounding", "every DiT weight moved by one float32 ulp, up or down",
                     render_alone,
                     with([](RenderSettings& s) { s.edit_weights = [](DitWeights& w) { nudge_by_one_ulp(w); }; })});
    return plans;
  }
  plans.push_back({"gemm-plan-off", "exact",
                   "cuBLASLt's first heuristic candidate for every GEMM instead of the GEMM plan file for this GPU",
                   render_alone, with([](RenderSettings& s) { s.engine.gemm_plan = "off"; })});
  for (int candidate : {1, 2})
    plans.push_back({"gemm-candidate-" + std::to_string(candidate), "exact",
                     "cuBLASLt's heuristic candidate " + std::to_string(candidate) +
                         " (another algorithm, tile or split-K; the last one offered where fewer) for every DiT GEMM",
                     render_alone,
                     with([&](RenderSettings& s) { s.engine.gemm_plan = "candidate:" + std::to_string(candidate); })});
  for (const std::string& form : other_attention_forms(corpus, settings))
    plans.push_back({"attention-" + form, "exact", "the " + form + " attention kernel instead of the engine's choice",
                     render_alone, with([&](RenderSettings& s) { s.engine.attention = form; })});
  plans.push_back({"graphs-off", "exact", "every sampling step and decode launched eagerly instead of as a CUDA Graph",
                   render_alone, with([](RenderSettings& s) { s.engine.cuda_graphs = false; })});
  if (sixteen_bit)
    plans.push_back({"vae-bias-unfused", "exact",
                     "the VAE's convolution bias as a separate kernel, not inside cuDNN's call", render_alone,
                     with([](RenderSettings& s) { s.engine.vae_fused_bias = false; })});
  if (settings.precision == Precision::fp32)
    plans.push_back({"tf32", "numerical", "TF32 tensor-core GEMMs instead of the fp32 path", render_alone,
                     with([](RenderSettings& s) { s.precision = Precision::tf32; })});
  return plans;
}

std::map<std::string, RenderedCase> render_all(const Corpus& corpus, const RenderSettings& settings) {
  std::map<std::string, RenderedCase> out;
  Renderer renderer(settings);
  for (const Case& c : corpus.cases) out.emplace(c.id, renderer.render(c));
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

MetricValues worst_scores(const ScoreSet& scores, bool with_pass_fail_metrics) {
  std::vector<std::string> metrics = kDistanceMetrics;
  if (with_pass_fail_metrics) metrics.insert(metrics.end(), {kAllFinite, kDeterminism});
  MetricValues out;
  for (const std::string& metric : metrics) {
    const Aggregate a = scores.aggregate(metric, direction_of(metric));
    if (a.cases > 0) out[metric] = a.worst;
  }
  return out;
}

double proposed_floor(const std::string& metric, double worst) {
  if (metric == kLatentRelativeL2) return worst > 0 ? round_outward(kSafetyFactor * worst, true) : kLatentMinimum;
  if (metric == kMaxAbsPixelError) return std::max(kPixelLevelsMinimum, kPixelFactor * worst);
  if (metric == kImagePsnr) return std::min(kPsnrCeilingDb, std::floor(worst - kPsnrSafetyDb));
  if (metric == kImageSsim)
    return 1.0 - round_outward(std::max(kSsimMinimumDeficit, kSafetyFactor * (1.0 - worst)), true);
  return 1.0;  // all_finite, determinism: no tolerance
}

MetricValues exact_floors(const MetricValues& worst_spread) {
  MetricValues out;
  for (const auto& [metric, worst] : worst_spread) out[metric] = proposed_floor(metric, worst);
  out[kAllFinite] = proposed_floor(kAllFinite, 1.0);
  out[kDeterminism] = proposed_floor(kDeterminism, 1.0);
  return out;
}

MetricValues numerical_floors(const MetricValues& yardstick, const MetricValues& exact) {
  MetricValues out = widened(yardstick, exact, kNumericalFactor, 0.0, kNumericalPsnrDb);
  for (const std::string& metric : {std::string(kAllFinite), std::string(kDeterminism)}) out[metric] = 1.0;
  return out;
}

MetricValues fp32_bounds(const MetricValues& precision_error, const MetricValues& exact) {
  return widened(precision_error, exact, kFp32BoundFactor, kFp32BoundPixelLevels, kFp32BoundPsnrDb);
}

ProposedFloors propose_floors(const MetricValues& worst_spread, const std::optional<MetricValues>& yardstick,
                              const std::string& yardstick_name, const std::optional<MetricValues>& precision_error) {
  ProposedFloors proposed;
  proposed.exact = exact_floors(worst_spread);
  std::string margin = "exact: the worst spread of the exact and rounding restatements; latent " +
                       number(kSafetyFactor) + "x (2 significant digits, rounded up; " + number(kLatentMinimum) +
                       " if zero), max pixel " + number(kPixelFactor) + "x (at least " + number(kPixelLevelsMinimum) +
                       "), PSNR " + number(kPsnrSafetyDb) + " dB below (at most " + number(kPsnrCeilingDb) +
                       "), SSIM deficit " + number(kSafetyFactor) + "x (at least " + number(kSsimMinimumDeficit) +
                       "); all_finite and determinism 1.";
  if (yardstick) {
    proposed.numerical = numerical_floors(*yardstick, proposed.exact);
    margin += " numerical: " + yardstick_name + "; latent, SSIM deficit and max pixel " + number(kNumericalFactor) +
              "x, PSNR " + number(kNumericalPsnrDb) + " dB below; never stricter than exact.";
  } else {
    margin += " numerical: none (no numerical yardstick on this backend).";
  }
  if (precision_error) {
    proposed.fp32_bound = fp32_bounds(*precision_error, proposed.exact);
    margin += " fp32_bound: the precision error against the fp32 render; latent and SSIM deficit " +
              number(kFp32BoundFactor) + "x, max pixel " + number(kFp32BoundFactor) + "x + " +
              number(kFp32BoundPixelLevels) + ", PSNR " + number(kFp32BoundPsnrDb) +
              " dB below; never stricter than exact.";
  }
  proposed.margin = margin;
  return proposed;
}

std::vector<Restatement> planned_restatements(const Corpus& corpus, const RenderSettings& settings) {
  std::vector<Restatement> out;
  for (const Plan& plan : plans_for(corpus, settings)) out.push_back({plan.name, plan.kind, plan.description, {}});
  return out;
}

nlohmann::json Calibration::to_json() const {
  nlohmann::json out = {{"format", kCalibrationFormat},
                        {"device", device},
                        {"set", set},
                        {"backend", backend},
                        {"precision", precision},
                        {"corpus", corpus_name},
                        {"corpus_sha256", corpus_sha256},
                        {"restatements", nlohmann::json::array()},
                        {"worst_spread", worst_spread}};
  const auto values = [](const MetricValues& values) {
    nlohmann::json object = nlohmann::json::object();
    for (const auto& [metric, value] : values)
      object[metric] = std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
    return object;
  };
  out["worst_spread"] = values(worst_spread);
  for (const Restatement& r : restatements) {
    out["restatements"].push_back({{"name", r.name},
                                   {"kind", r.kind},
                                   {"description", r.description},
                                   {"worst", values(worst_scores(r.scores, true))},
                                   {"scores", r.scores.to_json()}});
  }
  if (precision_error) out["precision_error"] = values(*precision_error);
  if (precision_scores) out["precision_error_scores"] = precision_scores->to_json();
  nlohmann::json proposed_json = {{"exact", values(proposed.exact)}, {"margin", proposed.margin}};
  if (proposed.numerical) proposed_json["numerical"] = values(*proposed.numerical);
  if (proposed.fp32_bound) proposed_json["fp32_bound"] = values(*proposed.fp32_bound);
  out["proposed"] = proposed_json;
  return out;
}

SetFloors Calibration::set_floors(const std::string& calibration_file) const {
  SetFloors floors;
  floors.calibration = calibration_file;
  floors.margin = proposed.margin;
  floors.exact = proposed.exact;
  floors.numerical = proposed.numerical;
  floors.fp32_bound = proposed.fp32_bound;
  return floors;
}

Calibration calibrate(const Corpus& corpus, const std::string& set, const std::string& device,
                      const RenderSettings& settings, std::ostream* log) {
  const std::vector<Plan> plans = plans_for(corpus, settings);
  Calibration calibration;
  calibration.device = device;
  calibration.set = set;
  calibration.backend = backend_name(settings.backend);
  calibration.precision = precision_name(settings.precision);
  calibration.corpus_name = corpus.name;
  calibration.corpus_sha256 = corpus.sha256;

  auto start = std::chrono::steady_clock::now();
  const std::map<std::string, RenderedCase> reference = render_all(corpus, settings);
  if (log) *log << "reference (" << calibration.precision << "): " << seconds_since(start) << " s\n";
  const int default_threads = omp_get_max_threads();
  for (const Plan& plan : plans) {
    start = std::chrono::steady_clock::now();
    if (plan.threads > 0) omp_set_num_threads(plan.threads);
    Restatement restatement{plan.name, plan.kind, plan.description, {}};
    {
      Renderer renderer(plan.settings);
      for (const Case& c : corpus.cases) {
        const RenderedCase out = plan.render(renderer, c);
        const RenderedCase& ref = reference.at(c.id);
        score_outputs(c.id, out.latent, out.image, ref.latent, ref.image, true, restatement.scores);
      }
    }
    omp_set_num_threads(default_threads);
    if (log) *log << plan.name << " (" << plan.kind << "): " << seconds_since(start) << " s\n";
    calibration.restatements.push_back(std::move(restatement));
  }

  // Below fp32, the reference render is scored as a candidate against an fp32 render: the
  // precision error an fp32 golden sees in the set's own golden.
  if (settings.precision != Precision::fp32) {
    start = std::chrono::steady_clock::now();
    RenderSettings fp32 = settings;
    fp32.precision = Precision::fp32;
    const std::map<std::string, RenderedCase> golden = render_all(corpus, fp32);
    ScoreSet scores;
    for (const Case& c : corpus.cases) {
      const RenderedCase& out = reference.at(c.id);
      const RenderedCase& ref = golden.at(c.id);
      score_outputs(c.id, out.latent, out.image, ref.latent, ref.image, true, scores);
    }
    calibration.precision_error = worst_scores(scores, false);
    calibration.precision_scores = std::move(scores);
    if (log) *log << "fp32 render (precision error): " << seconds_since(start) << " s\n";
  }

  for (const std::string& metric : kDistanceMetrics) {
    const bool higher = direction_of(metric) == Direction::higher_is_better;
    double worst = metric == kImagePsnr ? kPsnrOfIdenticalImages : metric == kImageSsim ? 1.0 : 0.0;
    for (const Restatement& r : calibration.restatements) {
      if (r.kind == "numerical") continue;
      const double w = r.scores.aggregate(metric, direction_of(metric)).worst;
      if (!std::isfinite(w)) {
        worst = w;
        break;
      }
      worst = higher ? std::min(worst, w) : std::max(worst, w);
    }
    calibration.worst_spread[metric] = worst;
  }

  std::optional<MetricValues> yardstick;
  std::string yardstick_name;
  if (calibration.precision_error) {
    yardstick = calibration.precision_error;
    yardstick_name = "the " + calibration.precision + " precision error against the fp32 render";
  } else {
    for (const Restatement& r : calibration.restatements) {
      if (r.kind != "numerical") continue;
      yardstick = worst_scores(r.scores, false);
      yardstick_name = "the " + r.name + " spread";
    }
  }
  calibration.proposed =
      propose_floors(calibration.worst_spread, yardstick, yardstick_name, calibration.precision_error);
  return calibration;
}

}  // namespace dit::quality
