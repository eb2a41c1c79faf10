// How the engine runs beyond its backend and precision: switches a program passes to the
// factories (make_model, make_vae_decoder). The defaults are the engine as it is measured and
// judged; the engine itself never reads the environment. Every non-default value of `attention`
// and `gemm_plan` below restates the same computation in the same arithmetic (another kernel or
// GEMM algorithm, same dtypes): what dit-quality-render calibrate measures as "exact" changes.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/backend.h"

namespace dit {

struct EngineOptions {
  bool cuda_graphs = true;     // capture each sampling step and decode once and replay it; false: eager
  bool vae_fused_bias = true;  // fp16/bf16 VAE: the bias inside cuDNN's fused convolution call
  // The GEMM plan (model/gemm_plan.h): "" the plan directory's file for this GPU, if any;
  // "off" none (the heuristic's first candidate everywhere); "candidate:N" (N >= 0) every DiT
  // linear layer takes cuBLASLt's heuristic candidate N, or the last one the heuristic offers when
  // it offers fewer (no plan file is read; the VAE's attention products keep their own choice);
  // else the path of a plan file. cuda backend only for "candidate:N".
  std::string gemm_plan;
  // The DiT's attention kernel (kernels/attention*.h), cuda backend only: "" the engine's choice
  // (the first of cuda_attention_forms, except cuDNN's fused attention in fp16 and bf16 where the
  // build has it, at 1024 tokens and more or at DiT-XL/2 512 batch 2's query-key pairs and more:
  // model/cuda/cudnn_attention.h), else "naive", "tiled" or "flash", which must be one of
  // cuda_attention_forms for the model's precision and head size (make_model throws
  // dit::Error(invalid_argument) naming it otherwise).
  std::string attention;
};

// The options a program's settings name, each unset one at its default: DIT_CUDA_GRAPHS=0,
// DIT_VAE_FUSED_BIAS=0, DIT_GEMM_PLAN=off|candidate:N|FILE. `lookup` returns a setting's value, or null when it is unset: a program passes the C library's
// environment lookup to map its environment.
EngineOptions engine_options_from(const std::function<const char*(const char*)>& lookup);

// N of a gemm_plan "candidate:N"; nullopt for any other setting. Throws dit::Error
// (invalid_argument) when the setting starts with "candidate:" and N is not a number from 0 to 63.
std::optional<int> gemm_candidate_setting(const std::string& gemm_plan);

// The DiT attention forms the cuda backend runs at `precision` for heads of `head_dim`, the
// engine's choice first: "flash" (fp16/bf16, head sizes 64 and 72), "tiled" (fp32/tf32, head
// sizes 1 to 128), "naive" (any).
std::vector<std::string> cuda_attention_forms(Precision precision, int head_dim);

// Throws dit::Error(invalid_argument) naming the option when `options` asks `backend` for
// something it cannot do: on the cpu backend any `attention` but "" and a "candidate:N" GEMM plan
// (the CPU reference has one attention and no GEMM algorithms to choose), so a calibration never
// restates nothing. `head_dim`: the model's, for the attention check on the cuda backend.
void check_engine_options(Backend backend, Precision precision, int head_dim, const EngineOptions& options);

}  // namespace dit
