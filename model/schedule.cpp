// The respaced diffusion schedule (model/schedule.h), mirroring upstream DiT's
// gaussian_diffusion.py and respace.py operation by operation, so that the float64 values agree
// with numpy's to the last few ulps.
#include "model/schedule.h"

#include <cmath>
#include <set>
#include <string>

#include "core/error.h"

namespace dit {
namespace {

constexpr double kBetaStart = 0.0001;  // get_named_beta_schedule("linear"), scale 1000 / 1000
constexpr double kBetaEnd = 0.02;

// np.linspace(start, stop, n): i * step + start, the last element exactly `stop`.
std::vector<double> linspace(double start, double stop, int n) {
  std::vector<double> values(n);
  const double step = (stop - start) / (n - 1);
  for (int i = 0; i < n; ++i) values[i] = i * step + start;
  values[n - 1] = stop;
  return values;
}

// space_timesteps(base, [count]): a fractional stride accumulated by repeated addition, rounded
// half to even as Python's round() does (nearbyint in the default rounding mode).
std::set<int64_t> spaced_timesteps(int base_steps, int count) {
  const double stride = count <= 1 ? 1.0 : static_cast<double>(base_steps - 1) / (count - 1);
  std::set<int64_t> taken;
  double index = 0.0;
  for (int i = 0; i < count; ++i) {
    taken.insert(static_cast<int64_t>(std::nearbyint(index)));
    index += stride;
  }
  return taken;
}

}  // namespace

DiffusionSchedule make_schedule(int num_steps, int base_steps) {
  if (base_steps < 2)
    throw Error(ErrorKind::invalid_argument,
                "the base schedule needs at least 2 steps, got " + std::to_string(base_steps));
  if (num_steps < 1 || num_steps > base_steps)
    throw Error(ErrorKind::invalid_argument,
                "sampling steps must be in 1.." + std::to_string(base_steps) + ", got " + std::to_string(num_steps));
  const std::vector<double> base_betas = linspace(kBetaStart, kBetaEnd, base_steps);
  std::vector<double> base_alphas_cumprod(base_steps);
  double product = 1.0;
  for (int i = 0; i < base_steps; ++i) base_alphas_cumprod[i] = product *= 1.0 - base_betas[i];

  // SpacedDiffusion: new betas from the kept cumulative products.
  const std::set<int64_t> kept = spaced_timesteps(base_steps, num_steps);
  DiffusionSchedule s;
  double last_alpha_cumprod = 1.0;
  for (int i = 0; i < base_steps; ++i)
    if (kept.count(i)) {
      s.betas.push_back(1.0 - base_alphas_cumprod[i] / last_alpha_cumprod);
      last_alpha_cumprod = base_alphas_cumprod[i];
      s.timestep_map.push_back(i);
    }
  const int n = static_cast<int>(s.betas.size());
  s.num_steps = n;

  // GaussianDiffusion.__init__ on the respaced betas.
  s.alphas_cumprod.resize(n);
  s.alphas_cumprod_prev.resize(n);
  product = 1.0;
  for (int i = 0; i < n; ++i) {
    s.alphas_cumprod_prev[i] = product;
    s.alphas_cumprod[i] = product *= 1.0 - s.betas[i];
  }
  s.posterior_variance.resize(n);
  s.posterior_mean_coef1.resize(n);
  s.posterior_mean_coef2.resize(n);
  s.sqrt_recip_alphas_cumprod.resize(n);
  s.sqrt_recipm1_alphas_cumprod.resize(n);
  s.log_betas.resize(n);
  for (int i = 0; i < n; ++i) {
    const double beta = s.betas[i], ac = s.alphas_cumprod[i], ac_prev = s.alphas_cumprod_prev[i];
    s.posterior_variance[i] = beta * (1.0 - ac_prev) / (1.0 - ac);
    s.posterior_mean_coef1[i] = beta * std::sqrt(ac_prev) / (1.0 - ac);
    s.posterior_mean_coef2[i] = (1.0 - ac_prev) * std::sqrt(1.0 - beta) / (1.0 - ac);
    s.sqrt_recip_alphas_cumprod[i] = std::sqrt(1.0 / ac);
    s.sqrt_recipm1_alphas_cumprod[i] = std::sqrt(1.0 / ac - 1.0);
    s.log_betas[i] = std::log(beta);
  }
  // The posterior variance is 0 at t = 0, so upstream's clipped log repeats the t = 1 value.
  // With a single step upstream has no value at all; that step adds no noise, so log(beta) stands in.
  s.posterior_log_variance_clipped.resize(n);
  for (int i = 0; i < n; ++i)
    s.posterior_log_variance_clipped[i] = n > 1 ? std::log(s.posterior_variance[i == 0 ? 1 : i]) : s.log_betas[0];
  return s;
}

}  // namespace dit
