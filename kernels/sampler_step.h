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

// DDIM's per-step scalars, derived from the coefficients and eta in float64 and rounded once
// (every backend's DDIM update takes them from here).
struct DdimScalars {
  float sigma;            // eta * sqrt((1 - ac_prev) / (1 - ac)) * sqrt(1 - ac / ac_prev)
  float sqrt_ac_prev;     // sqrt(ac_prev)
  float eps_coefficient;  // sqrt(1 - ac_prev - sigma^2)
  bool add_noise;         // !last_step && sigma != 0
};
DdimScalars ddim_scalars(const StepCoefficients& k, float eta);

}  // namespace dit

namespace dit::cpu {

// x [N, C, HW] updated in place. model_out [N, 2C, HW]: channels [0, C) epsilon,
// [C, 2C) the variance value v. noise [N, C, HW].
//   x0 = sqrt_recip_ac * x - sqrt_recipm1_ac * eps
//   mean = coef1 * x0 + coef2 * x
//   log_var = f * log_beta + (1 - f) * post_log_var_clipped, f = (v + 1) / 2
//   x = mean + (last_step ? 0 : exp(0.5 * log_var) * noise)
void ddpm_step(float* x, const float* model_out, const float* noise, int N, int C, int HW, const StepCoefficients& k);

// DDIM: x0 as above, eps' = (sqrt_recip_ac * x - x0) / sqrt_recipm1_ac,
// sigma = eta * sqrt((1 - ac_prev) / (1 - ac)) * sqrt(1 - ac / ac_prev),
// x = x0 * sqrt(ac_prev) + sqrt(1 - ac_prev - sigma^2) * eps' + (last_step ? 0 : sigma * noise).
// noise may be nullptr when eta == 0.
void ddim_step(float* x, const float* model_out, const float* noise, int N, int C, int HW, const StepCoefficients& k,
               float eta);

}  // namespace dit::cpu

#if defined(DIT_WITH_CUDA)
#include "kernels/cuda_types.h"

namespace dit::cuda {

// As dit::cpu::ddpm_step / ddim_step on device float32 pointers.
void ddpm_step(float* x, const float* model_out, const float* noise, int N, int C, int HW, const StepCoefficients& k,
               cudaStream_t stream);
void ddim_step(float* x, const float* model_out, const float* noise, int N, int C, int HW, const StepCoefficients& k,
               float eta, cudaStream_t stream);

// One step of a sampling loop as a table entry on the device: everything that changes from one
// step to the next lives here, so that the step (forward pass and update) can be captured once as
// a CUDA Graph and replayed for every step.
struct LoopStep {
  StepCoefficients k;
  DdimScalars ddim;
  bool use_ddim;            // else DDPM
  bool add_noise;           // DDPM: !k.last_step; DDIM: ddim.add_noise
  uint32_t noise_slot;      // noise_slot_for_step(i)
  float guidance_scale;     // read when the loop is guided
  int64_t next_modulation;  // offset in floats, in the modulation chunk, of the next step's
                            // modulations, or -1 when they are not there yet (the host copies them)
};

struct LoopStepArgs {
  const LoopStep* steps;          // [steps] the table
  int* step;                      // [1] the table entry this launch applies; advanced by one
  unsigned* blocks_done;          // [1] 0 between launches (the kernel's last block resets it)
  float* x_state;                 // [images, C, HW] the latents, updated in place
  float* x_in;                    // [rows, C, HW] the next forward pass's input: x_state, twice if guided
  const float* model_out;         // this step's forward pass (cond rows, then uncond): [rows, 2C, HW]
                                  // when patch is 0, else the final layer's tokens before unpatchify,
                                  // [rows, (width / patch)^2, patch, patch, 2C]
  int patch = 0;                  // the model's patch size when model_out is in token layout
  int width = 0;                  // the latent's side (HW = width^2) when patch > 0
  const uint64_t* seeds;          // [images]
  const float* modulation_chunk;  // the chunk that next_modulation indexes
  float* modulation;              // [modulation_floats] the forward pass's modulations
  int64_t modulation_floats;
  int images, C, HW;
  bool guided;          // rows = 2 * images: classifier-free guidance on channels
  int guided_channels;  // [0, guided_channels) of the 2C output channels
};

// Applies table entry *step, exactly as guidance_combine, gaussian_noise_rows (stream 0, slot
// noise_slot), ddpm_step or ddim_step and the copies of x_state into x_in would in sequence,
// for the conditional rows only (the unconditional half of x_state is never read: the next
// forward pass sees x[:images] twice). Then copies the next step's modulations when the entry
// names them, and advances *step. With patch > 0 it reads the model output where unpatchify
// would have fetched each element from, so the forward pass needs no unpatchify kernel.
void loop_step(const LoopStepArgs& args, cudaStream_t stream);

}  // namespace dit::cuda
#endif
