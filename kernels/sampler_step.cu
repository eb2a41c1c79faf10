// CUDA DDPM and DDIM updates (kernels/sampler_step.h). Every float32 operation is written with
// the round-to-nearest intrinsics (never contracted into FMA) and exp is float64 rounded once,
// as in the CPU reference, so the GPU sampling loop follows the host loop closely.
#include "kernels/sampler_step.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>

#include "kernels/cuda_check.h"
#include "kernels/guidance.h"
#include "kernels/noise.h"
#include "kernels/noise_math.h"

namespace dit::cuda {

// ---------------------------------------------------------------------------------------------
// Kernels

// The DDPM update of one element (v is read only when k.last_step is false).
__device__ __forceinline__ float ddpm_update(float xi, float eps, float v, float noise, const StepCoefficients& k) {
  const float x0 = __fsub_rn(__fmul_rn(k.sqrt_recip_alphas_cumprod, xi), __fmul_rn(k.sqrt_recipm1_alphas_cumprod, eps));
  const float mean = __fadd_rn(__fmul_rn(k.posterior_mean_coef1, x0), __fmul_rn(k.posterior_mean_coef2, xi));
  if (k.last_step) return mean;
  const float fraction = __fdiv_rn(__fadd_rn(v, 1.0f), 2.0f);
  const float log_variance = __fadd_rn(__fmul_rn(fraction, k.log_beta),
                                       __fmul_rn(__fsub_rn(1.0f, fraction), k.posterior_log_variance_clipped));
  const float std_dev = static_cast<float>(exp(0.5 * static_cast<double>(log_variance)));
  return __fadd_rn(mean, __fmul_rn(std_dev, noise));
}

// The DDIM update of one element (noise is read only when add_noise).
__device__ __forceinline__ float ddim_update(float xi, float eps, float noise, float sqrt_recip_ac,
                                             float sqrt_recipm1_ac, float sqrt_ac_prev, float eps_coefficient,
                                             float sigma, bool add_noise) {
  const float scaled_x = __fmul_rn(sqrt_recip_ac, xi);
  const float x0 = __fsub_rn(scaled_x, __fmul_rn(sqrt_recipm1_ac, eps));
  const float eps_x0 = __fdiv_rn(__fsub_rn(scaled_x, x0), sqrt_recipm1_ac);
  const float next = __fadd_rn(__fmul_rn(x0, sqrt_ac_prev), __fmul_rn(eps_coefficient, eps_x0));
  return add_noise ? __fadd_rn(next, __fmul_rn(sigma, noise)) : next;
}

// x [N, C, HW]; model_out [N, 2C, HW] (epsilon, then v); noise [N, C, HW] (unused at the last step).
static __global__ void ddpm_step_kernel(float* __restrict__ x, const float* __restrict__ model_out,
                                        const float* __restrict__ noise, int C, int HW, size_t total,
                                        StepCoefficients k) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t n = i / (static_cast<size_t>(C) * HW);
    const size_t within = i - n * C * HW;  // c * HW + pixel
    const float* out = model_out + n * 2 * C * HW;
    x[i] = k.last_step ? ddpm_update(x[i], out[within], 0.0f, 0.0f, k)
                       : ddpm_update(x[i], out[within], out[static_cast<size_t>(C) * HW + within], noise[i], k);
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
    x[i] = ddim_update(x[i], model_out[n * 2 * C * HW + within], add_noise ? noise[i] : 0.0f, sqrt_recip_ac,
                       sqrt_recipm1_ac, sqrt_ac_prev, eps_coefficient, sigma, add_noise);
  }
}

// One thread per Philox group of four consecutive latent elements of a conditional row (the
// noise kernel's layout), grid-strided; then the next step's modulations, grid-strided; the
// last block to finish advances the step.
static __global__ void __launch_bounds__(256) loop_step_kernel(LoopStepArgs a) {
  const int s = *static_cast<volatile int*>(a.step);  // written only by this kernel's last block
  const LoopStep step = a.steps[s];
  // 32-bit indices: the launcher checks that images * C * HW fits
  const int per_image = a.C * a.HW, groups = (per_image + 3) / 4;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t work = static_cast<int64_t>(groups) * a.images;
  for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < work; t += stride) {
    const int n = static_cast<int>(t) / groups, group = static_cast<int>(t) - n * groups;
    const float* cond = a.model_out + static_cast<size_t>(n) * 2 * per_image;
    const float* uncond = a.model_out + static_cast<size_t>(n + a.images) * 2 * per_image;
    // output channel `channel` of this image at `pixel`, after guidance
    const auto output = [&](int channel, int pixel) {
      int offset = channel * a.HW + pixel;
      if (a.patch > 0) {  // unpatchify's gather: token (row / p, col / p), then (row % p, col % p, channel)
        const int p = a.patch, row = pixel / a.width, col = pixel - row * a.width;
        const int token = (row / p) * (a.width / p) + col / p;
        offset = ((token * p + row % p) * p + col % p) * 2 * a.C + channel;
      }
      return a.guided && channel < a.guided_channels ? guided_value(cond[offset], uncond[offset], step.guidance_scale)
                                                     : cond[offset];
    };
    // Every load of the four elements before the first store: the stores to x_state and x_in
    // could alias the loads for the compiler, which would otherwise issue each element's loads
    // only after the previous element's stores.
    float x[4], eps[4], v[4];
#pragma unroll
    for (int lane = 0; lane < 4; ++lane) {
      const int e = 4 * group + lane;  // c * HW + pixel
      x[lane] = eps[lane] = v[lane] = 0.0f;
      if (e >= per_image) continue;
      const int c = e / a.HW, pixel = e - c * a.HW;
      x[lane] = a.x_state[static_cast<size_t>(n) * per_image + e];
      eps[lane] = output(c, pixel);
      if (!step.use_ddim && !step.k.last_step) v[lane] = output(a.C + c, pixel);
    }
    float z[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (step.add_noise) {
      const noise_math::Philox4 bits = noise_math::philox4x32_10(
          noise_math::noise_counter(static_cast<uint32_t>(group), step.noise_slot, 0, kNoiseDomainTag),
          static_cast<uint32_t>(a.seeds[n]), static_cast<uint32_t>(a.seeds[n] >> 32));
      noise_math::box_muller4(bits, z);
    }
#pragma unroll
    for (int lane = 0; lane < 4; ++lane) {
      const int e = 4 * group + lane;
      if (e >= per_image) break;
      const size_t i = static_cast<size_t>(n) * per_image + e;
      const float next = step.use_ddim ? ddim_update(x[lane], eps[lane], z[lane], step.k.sqrt_recip_alphas_cumprod,
                                                     step.k.sqrt_recipm1_alphas_cumprod, step.ddim.sqrt_ac_prev,
                                                     step.ddim.eps_coefficient, step.ddim.sigma, step.ddim.add_noise)
                                       : ddpm_update(x[lane], eps[lane], v[lane], z[lane], step.k);
      a.x_state[i] = next;
      a.x_in[i] = next;
      if (a.guided) a.x_in[static_cast<size_t>(n + a.images) * per_image + e] = next;
    }
  }
  if (step.next_modulation >= 0) {  // float4 when the launcher found everything 16-byte aligned
    const float* from = a.modulation_chunk + step.next_modulation;
    const bool vec4 = a.modulation_floats % 4 == 0 && step.next_modulation % 4 == 0;
    const int64_t first = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (vec4) {
      for (int64_t q = first; q < a.modulation_floats / 4; q += stride)
        reinterpret_cast<float4*>(a.modulation)[q] = reinterpret_cast<const float4*>(from)[q];
    } else {
      for (int64_t q = first; q < a.modulation_floats; q += stride) a.modulation[q] = from[q];
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();  // this block's reads of *step precede its count
    if (atomicAdd(a.blocks_done, 1u) == gridDim.x - 1) {
      *a.blocks_done = 0;
      *static_cast<volatile int*>(a.step) = s + 1;
    }
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
  const auto [sigma, sqrt_ac_prev, eps_coefficient, add_noise] = ddim_scalars(k, eta);  // as the CPU reference
  require(!add_noise || noise != nullptr, "dit::cuda::ddim_step", "eta > 0 needs noise");
  const size_t total = static_cast<size_t>(N) * C * HW;
  ddim_step_kernel<<<step_blocks(total, kThreads), kThreads, 0, stream>>>(
      x, model_out, noise, C, HW, total, k.sqrt_recip_alphas_cumprod, k.sqrt_recipm1_alphas_cumprod, sqrt_ac_prev,
      eps_coefficient, sigma, add_noise);
  DIT_LAUNCH_CHECK();
}

static void launch_loop_step(const LoopStepArgs& args, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const int64_t groups = (static_cast<int64_t>(args.C) * args.HW + 3) / 4 * args.images;
  const int64_t copies = args.modulation_floats / 4;  // the float4 copy's
  const int64_t blocks = std::clamp<int64_t>((std::max(groups, copies) + kThreads - 1) / kThreads, 1, 1024);
  loop_step_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(args);
  DIT_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// Public entries

void ddpm_step(float* x, const float* model_out, const float* noise, int N, int C, int HW, const StepCoefficients& k,
               cudaStream_t stream) {
  const char* op = "dit::cuda::ddpm_step";
  require(N > 0 && C > 0 && HW > 0, op, "non-positive size");
  require_aligned(x, alignof(float), op, "x");
  require_aligned(model_out, alignof(float), op, "model_out");
  if (!k.last_step) require_aligned(noise, alignof(float), op, "noise");
  launch_ddpm_step(x, model_out, noise, N, C, HW, k, stream);
}

void ddim_step(float* x, const float* model_out, const float* noise, int N, int C, int HW, const StepCoefficients& k,
               float eta, cudaStream_t stream) {
  const char* op = "dit::cuda::ddim_step";
  require(N > 0 && C > 0 && HW > 0, op, "non-positive size");
  require(eta >= 0.0f, op, "eta must be non-negative");
  require_aligned(x, alignof(float), op, "x");
  require_aligned(model_out, alignof(float), op, "model_out");
  launch_ddim_step(x, model_out, noise, N, C, HW, k, eta, stream);
}

void loop_step(const LoopStepArgs& args, cudaStream_t stream) {
  const char* op = "dit::cuda::loop_step";
  require(args.images > 0 && args.C > 0 && args.HW > 0, op, "non-positive size");
  require(2 * static_cast<int64_t>(args.images) * 2 * args.C * args.HW < (int64_t{1} << 31), op,
          "the model output has 2^31 floats or more");
  require(args.modulation_floats >= 0, op, "negative modulation size");
  require(!args.guided || (args.guided_channels > 0 && args.guided_channels <= 2 * args.C), op,
          "guided_channels not in [1, 2C]");
  require(args.steps && args.step && args.blocks_done && args.x_state && args.x_in && args.model_out && args.seeds, op,
          "a null pointer");
  require(args.modulation_floats == 0 || (args.modulation && args.modulation_chunk), op, "a null modulation pointer");
  require(args.patch >= 0, op, "negative patch size");
  require(args.patch == 0 || (args.width > 0 && args.width % args.patch == 0 &&
                              static_cast<int64_t>(args.width) * args.width == args.HW),
          op, "token layout needs HW = width^2 with width a multiple of the patch size");
  require_aligned(args.steps, alignof(LoopStep), op, "steps");
  require_aligned(args.x_state, alignof(float), op, "x_state");
  require_aligned(args.x_in, alignof(float), op, "x_in");
  require_aligned(args.model_out, alignof(float), op, "model_out");
  require_aligned(args.seeds, alignof(uint64_t), op, "seeds");
  // the copy's float4 form reads from modulation_chunk + a multiple of four floats
  require_aligned(args.modulation, 16, op, "modulation");
  require_aligned(args.modulation_chunk, 16, op, "modulation_chunk");
  launch_loop_step(args, stream);
}

}  // namespace dit::cuda
