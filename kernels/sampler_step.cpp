// CPU reference of the DDPM and DDIM updates (kernels/sampler_step.h). Element arithmetic is
// float32, the coefficients are float32 (as upstream reads them), exp is float64 rounded once.
#include "kernels/sampler_step.h"

#include <cmath>
#include <cstdint>

namespace dit {

DdimScalars ddim_scalars(const StepCoefficients& k, float eta) {
  const double ac = k.alpha_cumprod, ac_prev = k.alpha_cumprod_prev;
  DdimScalars s;
  s.sigma = static_cast<float>(eta * std::sqrt((1.0 - ac_prev) / (1.0 - ac)) * std::sqrt(1.0 - ac / ac_prev));
  s.sqrt_ac_prev = static_cast<float>(std::sqrt(ac_prev));
  s.eps_coefficient =
      static_cast<float>(std::sqrt(1.0 - ac_prev - static_cast<double>(s.sigma) * static_cast<double>(s.sigma)));
  s.add_noise = !k.last_step && s.sigma != 0.0f;
  return s;
}

}  // namespace dit

namespace dit::cpu {

void ddpm_step(float* x, const float* model_out, const float* noise, int N, int C, int HW, const StepCoefficients& k) {
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c) {
      float* xr = x + (static_cast<int64_t>(n) * C + c) * HW;
      const float* eps = model_out + (static_cast<int64_t>(n) * 2 * C + c) * HW;
      const float* v = model_out + (static_cast<int64_t>(n) * 2 * C + C + c) * HW;
      const float* z = noise ? noise + (static_cast<int64_t>(n) * C + c) * HW : nullptr;
      for (int i = 0; i < HW; ++i) {
        const float x0 = k.sqrt_recip_alphas_cumprod * xr[i] - k.sqrt_recipm1_alphas_cumprod * eps[i];
        const float mean = k.posterior_mean_coef1 * x0 + k.posterior_mean_coef2 * xr[i];
        if (k.last_step) {
          xr[i] = mean;
          continue;
        }
        const float fraction = (v[i] + 1.0f) / 2.0f;  // v in [-1, 1] interpolates the log-variance
        const float log_variance = fraction * k.log_beta + (1.0f - fraction) * k.posterior_log_variance_clipped;
        const float std_dev = static_cast<float>(std::exp(0.5 * static_cast<double>(log_variance)));
        xr[i] = mean + std_dev * z[i];
      }
    }
}

void ddim_step(float* x, const float* model_out, const float* noise, int N, int C, int HW, const StepCoefficients& k,
               float eta) {
  const auto [sigma, sqrt_ac_prev, eps_coefficient, add_noise] = ddim_scalars(k, eta);
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c) {
      float* xr = x + (static_cast<int64_t>(n) * C + c) * HW;
      const float* eps = model_out + (static_cast<int64_t>(n) * 2 * C + c) * HW;
      const float* z = add_noise ? noise + (static_cast<int64_t>(n) * C + c) * HW : nullptr;
      for (int i = 0; i < HW; ++i) {
        const float x0 = k.sqrt_recip_alphas_cumprod * xr[i] - k.sqrt_recipm1_alphas_cumprod * eps[i];
        // upstream re-derives epsilon from x0 (the same value up to rounding)
        const float eps_x0 = (k.sqrt_recip_alphas_cumprod * xr[i] - x0) / k.sqrt_recipm1_alphas_cumprod;
        float next = x0 * sqrt_ac_prev + eps_coefficient * eps_x0;
        if (add_noise) next += sigma * z[i];
        xr[i] = next;
      }
    }
}

}  // namespace dit::cpu
