// Engine options from named settings, and what each backend accepts (model/engine_options.h).
#include "model/engine_options.h"

#include <algorithm>
#include <charconv>
#include <string_view>

#include "core/error.h"

namespace dit {

namespace {

constexpr std::string_view kCandidatePrefix = "candidate:";
constexpr int kMaxGemmCandidate = 63;  // GemmRunner asks the heuristic for at most 64

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace

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

std::optional<int> gemm_candidate_setting(const std::string& gemm_plan) {
  const std::string_view setting(gemm_plan);
  if (!setting.starts_with(kCandidatePrefix)) return std::nullopt;
  const std::string_view digits = setting.substr(kCandidatePrefix.size());
  int candidate = -1;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), candidate);
  if (digits.empty() || error != std::errc() || end != digits.data() + digits.size() || candidate < 0 ||
      candidate > kMaxGemmCandidate)
    throw Error(ErrorKind::invalid_argument,
                "gemm_plan \"" + gemm_plan + "\": candidate:N takes N from 0 to " + std::to_string(kMaxGemmCandidate));
  return candidate;
}

// Mirrors the dispatch of dit::cuda::attention (kernels/attention.h); the CUDA model checks this
// table against the kernels' own predicates when it is made (model/cuda/cuda_model.cpp).
std::vector<std::string> cuda_attention_forms(Precision precision, int head_dim) {
  const bool sixteen_bit = precision == Precision::fp16 || precision == Precision::bf16;
  std::vector<std::string> forms;
  if (sixteen_bit && (head_dim == 64 || head_dim == 72)) forms.push_back("flash");
  if (!sixteen_bit && head_dim >= 1 && head_dim <= 128) forms.push_back("tiled");
  forms.push_back("naive");
  return forms;
}

void check_engine_options(Backend backend, Precision precision, int head_dim, const EngineOptions& options) {
  const std::optional<int> candidate = gemm_candidate_setting(options.gemm_plan);
  if (backend == Backend::cpu) {
    if (!options.attention.empty())
      throw Error(ErrorKind::invalid_argument,
                  "attention \"" + options.attention + "\": the cpu backend has one attention; only \"\" is accepted");
    if (candidate)
      throw Error(ErrorKind::invalid_argument,
                  "gemm_plan \"" + options.gemm_plan + "\": the cpu backend has no GEMM candidates to choose from");
    return;
  }
  if (options.attention.empty()) return;
  const std::vector<std::string> forms = cuda_attention_forms(precision, head_dim);
  if (std::find(forms.begin(), forms.end(), options.attention) == forms.end())
    throw Error(ErrorKind::invalid_argument, "attention \"" + options.attention + "\" is not available at " +
                                                 precision_name(precision) + " with head size " +
                                                 std::to_string(head_dim) + " (available: " + joined(forms) + ")");
}

}  // namespace dit
