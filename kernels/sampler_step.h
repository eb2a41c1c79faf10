// One DDPM or DDIM update of upstream DiT (epsilon prediction, learned-range variance,
// clip_denoised = False). Coefficients are the schedule's float64 values rounded to float32
// (as upstream's _extract_into_tensor reads them); arithmetic in float32.
#pragma once

#include <cstdint>

namespace dit {

// The per-step coefficients, already rounded to float32.
struct StepCoefficients {
  float sqrt_recip_alphas_cumprod;
  float sqrt_recipm1_alphas_cumprod;
  float posterior_mean_coef1;
  float posterior_mean_coef2;
  float posterior_log_variance_clipped;  // learned-range min
  float log_beta;                        // learned-range max
  float alpha_cumprod;                   // DDIM
  float alpha_cumprod_prev;              // DDIM
  bool last_step;                        // t == 0: no noise is added
};

}  // namespace dit

namespace dit::cpu {

// x [N, C, HW] updated in place. model_out [N, 2C, HW]: channels [0, C) epsilon,
// [C, 2C) the variance value v. noise [N, C, HW].
//   x0 = sqrt_recip_ac * x - sqrt_recipm1_ac * eps
//   mean = coef1 * x0 + coef2 * x
//   log_var = f * log_beta + (1 - f) * post_log_var_clipped, f = (v + 1) / 2
//   x = mean + (last_step ? 0 : exp(0.5 * log_var) * noise)
void ddpm_step(float* x, const float* model_out, const float* noise, int N, int C, int HW,
               const StepCoefficients& k);

// DDIM: x0 as above, eps' = (sqrt_recip_ac * x - x0) / sqrt_recipm1_ac,
// sigma = eta * sqrt((1 - ac_prev) / (1 - ac)) * sqrt(1 - ac / ac_prev),
// x = x0 * sqrt(ac_prev) + sqrt(1 - ac_prev - sigma^2) * eps' + (last_step ? 0 : sigma * noise).
// noise may be nullptr when eta == 0.
void ddim_step(float* x, const float* model_out, const float* noise, int N, int C, int HW,
               const StepCoefficients& k, float eta);

}  // namespace dit::cpu

#if defined(DIT_WITH_CUDA)
#include "kernels/cuda_types.h"

namespace dit::cuda {

// As dit::cpu::ddpm_step / ddim_step on device float32 pointers.
void ddpm_step(float* x, const float* model_out, const float* noise, int N, int C, int HW,
               const StepCoefficients& k, cudaStream_t stream);
void ddim_step(float* x, const float* model_out, const float* noise, int N, int C, int HW,
               const StepCoefficients& k, float eta, cudaStream_t stream);

}  // namespace dit::cuda
#endif
