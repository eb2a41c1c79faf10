// Engine options from named settings (model/engine_options.h).
#include "model/engine_options.h"

#include <string_view>

namespace dit {

EngineOptions engine_options_from(const std::function<const char*(const char*)>& lookup) {
  const auto is_off = [&](const char* name) {
    const char* value = lookup(name);
    return value && std::string_view(value) == "0";
  };
  EngineOptions options;
  options.cuda_graphs = !is_off("DIT_CUDA_GRAPHS");
  options.vae_fused_bias = !is_off("DIT_VAE_FUSED_BIAS");
  if (const char* plan = lookup("DIT_GEMM_PLAN")) options.gemm_plan = plan;
  return options;
}

}  // namespace dit
