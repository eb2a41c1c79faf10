// How the engine runs beyond its backend and precision: switches a program passes to the
// factories (make_model, make_vae_decoder). The defaults are the engine as it is measured and
// judged; the engine itself never reads the environment.
#pragma once

#include <functional>
#include <string>

namespace dit {

struct EngineOptions {
  bool cuda_graphs = true;     // capture each sampling step and decode once and replay it; false: eager
  bool vae_fused_bias = true;  // fp16/bf16 VAE: the bias inside cuDNN's fused convolution call
  // The GEMM plan (model/cuda/gemm_plan.h): "" the plan directory's file for this GPU, if any;
  // "off" none (the heuristic's first candidate everywhere); else the path of a plan file.
  std::string gemm_plan;
};

// The options a program's settings name, each unset one at its default: DIT_CUDA_GRAPHS=0,
// DIT_VAE_FUSED_BIAS=0, DIT_GEMM_PLAN=off|FILE. `lookup` returns a setting's value, or null when
// it is unset: a program passes the C library's environment lookup to map its environment.
EngineOptions engine_options_from(const std::function<const char*(const char*)>& lookup);

}  // namespace dit
