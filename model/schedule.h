// The diffusion schedule of upstream DiT: a linear beta schedule (1e-4 .. 0.02 over 1000
// steps) respaced to N steps with a fractional stride and Python's round-half-to-even, with
// every derived coefficient computed in float64 exactly as upstream GaussianDiffusion does.
#pragma once

#include <cstdint>
#include <vector>

namespace dit {

struct DiffusionSchedule {
  int num_steps = 0;                                   // N, the respaced length
  std::vector<int64_t> timestep_map;                   // [N] original timestep fed to the model
  std::vector<double> betas;                           // [N] respaced betas
  std::vector<double> alphas_cumprod;                  // [N]
  std::vector<double> alphas_cumprod_prev;             // [N]
  std::vector<double> posterior_variance;              // [N]
  std::vector<double> posterior_log_variance_clipped;  // [N]
  std::vector<double> posterior_mean_coef1;            // [N]
  std::vector<double> posterior_mean_coef2;            // [N]
  std::vector<double> sqrt_recip_alphas_cumprod;       // [N]
  std::vector<double> sqrt_recipm1_alphas_cumprod;     // [N]
  std::vector<double> log_betas;                       // [N] log(betas), the learned-range max
};

// num_steps in 1..1000; throws dit::Error otherwise.
DiffusionSchedule make_schedule(int num_steps, int base_steps = 1000);

}  // namespace dit
