// CUDA DDPM and DDIM updates (kernels/sampler_step.h). Every float32 operation is written with
// the round-to-nearest intrinsics (never contracted into FMA) and exp is float64 rounded once,
// as in the CPU reference, so the GPU sampling loop follows the host loop closely.
#include "kernels/sampler_step.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>

#include "kernels/cuda_check.h"

namespace dit::cuda {

// ---------------------------------------------------------------------------------------------
// Kernels

// x [N, C, HW]; model_out [N, 2C, HW] (epsilon, then v); noise [N, C, HW] (unused at the last step).
static __global__ void ddpm_step_kernel(float* __restrict__ x, const float* __restrict__ model_out,
                                        const float* __restrict__ noise, int C, int HW, size_t total,
                                        StepCoefficients k) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t n = i / (static_cast<size_t>(C) * HW);
    const size_t within = i - n * C * HW;  // c * HW + pixel
    const float xi = x[i];
    const float eps = model_out[n * 2 * C * HW + within];
    const float x0 = __fsub_rn(__fmul_rn(k.sqrt_recip_alphas_cumprod, xi),
                               __fmul_rn(k.sqrt_recipm1_alphas_cumprod, eps));
    const float mean = __fadd_rn(__fmul_rn(k.posterior_mean_coef1, x0), __fmul_rn(k.posterior_mean_coef2, xi));
    if (k.last_step) {
      x[i] = mean;
      continue;
    }
    const float v = model_out[n * 2 * C * HW + static_cast<size_t>(C) * HW + within];
    const float fraction = __fdiv_rn(__fadd_rn(v, 1.0f), 2.0f);
    const float log_variance = __fadd_rn(__fmul_rn(fraction, k.log_beta),
                                         __fmul_rn(__fsub_rn(1.0f, fraction), k.posterior_log_variance_clipped));
    const float std_dev = static_cast<float>(exp(0.5 * static_cast<double>(log_variance)));
    x[i] = __fadd_rn(mean, __fmul_rn(std_dev, noise[i]));
  }
}

static __global__ void ddim_step_kernel(float* __restrict__ x, const float* __restrict__ model_out,
                                        const float* __restrict__ noise, int C, int HW, size_t total,
                                        float sqrt_recip_ac, float sqrt_recipm1_ac, float sqrt_ac_prev,
                                        float eps_coefficient, float sigma, bool add_noise) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t n = i / (static_cast<size_t>(C) * HW);
    const size_t within = i - n * C * HW;
    const float xi = x[i];
    const float eps = model_out[n * 2 * C * HW + within];
    const float scaled_x = __fmul_rn(sqrt_recip_ac, xi);
    const float x0 = __fsub_rn(scaled_x, __fmul_rn(sqrt_recipm1_ac, eps));
    const float eps_x0 = __fdiv_rn(__fsub_rn(scaled_x, x0), sqrt_recipm1_ac);
    float next = __fadd_rn(__fmul_rn(x0, sqrt_ac_prev), __fmul_rn(eps_coefficient, eps_x0));
    if (add_noise) next = __fadd_rn(next, __fmul_rn(sigma, noise[i]));
    x[i] = next;
  }
}

// ---------------------------------------------------------------------------------------------
// Launchers

static unsigned step_blocks(size_t total, int threads) {
  return static_cast<unsigned>(std::min<size_t>((total + threads - 1) / threads, 65535));
}

static void launch_ddpm_step(float* x, const float* model_out, const float* noise, int N, int C, int HW,
                             const StepCoefficients& k, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const size_t total = static_cast<size_t>(N) * C * HW;
  ddpm_step_kernel<<<step_blocks(total, kThreads), kThreads, 0, stream>>>(x, model_out, noise, C, HW, total, k);
  DIT_LAUNCH_CHECK();
}

static void launch_ddim_step(float* x, const float* model_out, const float* noise, int N, int C, int HW,
                             const StepCoefficients& k, float eta, cudaStream_t stream) {
  constexpr int kThreads = 256;
  // The per-step scalars in float64, rounded once, exactly as the CPU reference derives them.
  const double ac = k.alpha_cumprod, ac_prev = k.alpha_cumprod_prev;
  const float sigma = static_cast<float>(eta * std::sqrt((1.0 - ac_prev) / (1.0 - ac)) * std::sqrt(1.0 - ac / ac_prev));
  const float sqrt_ac_prev = static_cast<float>(std::sqrt(ac_prev));
  const float eps_coefficient =
      static_cast<float>(std::sqrt(1.0 - ac_prev - static_cast<double>(sigma) * static_cast<double>(sigma)));
  const bool add_noise = !k.last_step && sigma != 0.0f;
  require(!add_noise || noise != nullptr, "dit::cuda::ddim_step", "eta > 0 needs noise");
  const size_t total = static_cast<size_t>(N) * C * HW;
  ddim_step_kernel<<<step_blocks(total, kThreads), kThreads, 0, stream>>>(
      x, model_out, noise, C, HW, total, k.sqrt_recip_alphas_cumprod, k.sqrt_recipm1_alphas_cumprod, sqrt_ac_prev,
      eps_coefficient, sigma, add_noise);
  DIT_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// Public entries

void ddpm_step(float* x, const float* model_out, const float* noise, int N, int C, int HW,
               const StepCoefficients& k, cudaStream_t stream) {
  const char* op = "dit::cuda::ddpm_step";
  require(N > 0 && C > 0 && HW > 0, op, "non-positive size");
  require_aligned(x, alignof(float), op, "x");
  require_aligned(model_out, alignof(float), op, "model_out");
  if (!k.last_step) require_aligned(noise, alignof(float), op, "noise");
  launch_ddpm_step(x, model_out, noise, N, C, HW, k, stream);
}

void ddim_step(float* x, const float* model_out, const float* noise, int N, int C, int HW,
               const StepCoefficients& k, float eta, cudaStream_t stream) {
  const char* op = "dit::cuda::ddim_step";
  require(N > 0 && C > 0 && HW > 0, op, "non-positive size");
  require(eta >= 0.0f, op, "eta must be non-negative");
  require_aligned(x, alignof(float), op, "x");
  require_aligned(model_out, alignof(float), op, "model_out");
  launch_ddim_step(x, model_out, noise, N, C, HW, k, eta, stream);
}

}  // namespace dit::cuda
