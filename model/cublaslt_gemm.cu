// cuBLASLt linear layers (model/cublaslt_gemm.h). Row-major out[M, N] = in[M, K] * W[N, K]^T is
// the column-major product out^T[N, M] = op(W)[N, K] * in^T[K, M] with op = transpose on W's
// column-major [K, N] view: m = N, n = M, k = K, and the bias (length m) is per output feature.
#include "model/cublaslt_gemm.h"

#include <cstdint>
#include <string>

#include "kernels/bias_activation.h"
#include "kernels/cuda_check.h"

namespace dit::cuda {

namespace {

cudaDataType_t cuda_data_type(DeviceDtype dtype) {
  switch (dtype) {
    case DeviceDtype::f32: return CUDA_R_32F;
    case DeviceDtype::f16: return CUDA_R_16F;
    case DeviceDtype::bf16: return CUDA_R_16BF;
  }
  return CUDA_R_32F;
}

std::string describe(const GemmArgs& a) {
  return "linear M=" + std::to_string(a.M) + " N=" + std::to_string(a.N) + " K=" + std::to_string(a.K) +
         " operands=" + dtype_name(a.operands) + " output=" + dtype_name(a.output) +
         (a.compute == GemmCompute::tf32 ? " tf32" : " fp32-compute") +
         (a.epilogue == GemmEpilogue::none ? "" : a.epilogue == GemmEpilogue::bias ? " +bias" : " +bias+gelu");
}

}  // namespace

GemmRunner::GemmRunner(void* workspace) : workspace_(workspace) {
  require_aligned(workspace, kPointerAlignment, "GemmRunner", "workspace");
  DIT_CUBLAS_CHECK(cublasLtCreate(&handle_));
}

GemmRunner::~GemmRunner() {
  // Destruction cannot report: statuses are dropped on purpose here.
  for (auto& [key, plan] : plans_) {
    cublasLtMatrixLayoutDestroy(plan.weight_layout);
    cublasLtMatrixLayoutDestroy(plan.in_layout);
    cublasLtMatrixLayoutDestroy(plan.out_layout);
    cublasLtMatmulDescDestroy(plan.desc);
  }
  if (handle_) cublasLtDestroy(handle_);
}

GemmRunner::Key GemmRunner::key_of(const GemmArgs& a) {
  return Key{a.M, a.N, a.K, static_cast<int>(a.operands), static_cast<int>(a.output), static_cast<int>(a.compute),
             static_cast<int>(a.epilogue)};
}

bool GemmRunner::can_run(const GemmArgs& a) {
  const Key key = key_of(a);
  if (plans_.count(key)) return true;
  if (unsupported_.count(key)) return false;
  try {
    plan_for(a);
    return true;
  } catch (const Error& error) {
    if (error.kind() != ErrorKind::device) throw;
    unsupported_.insert(key);
    return false;
  }
}

GemmRunner::Plan& GemmRunner::plan_for(const GemmArgs& a) {
  const Key key = key_of(a);
  if (auto found = plans_.find(key); found != plans_.end()) return found->second;

  Plan plan;
  const cublasComputeType_t compute =
      a.compute == GemmCompute::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  DIT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan.desc, compute, CUDA_R_32F));
  const cublasOperation_t transpose = CUBLAS_OP_T, keep = CUBLAS_OP_N;
  DIT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose,
                                                  sizeof transpose));
  DIT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof keep));
  const cublasLtEpilogue_t epilogue = a.epilogue == GemmEpilogue::none   ? CUBLASLT_EPILOGUE_DEFAULT
                                      : a.epilogue == GemmEpilogue::bias ? CUBLASLT_EPILOGUE_BIAS
                                                                         : CUBLASLT_EPILOGUE_GELU_BIAS;
  DIT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                                  sizeof epilogue));
  if (a.epilogue != GemmEpilogue::none) {
    // the bias is in the output's dtype, cuBLASLt's default for non-fp8 outputs
    DIT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &a.bias,
                                                    sizeof a.bias));
  }
  const cudaDataType_t operand_type = cuda_data_type(a.operands), output_type = cuda_data_type(a.output);
  DIT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.weight_layout, operand_type, a.K, a.N, a.K));
  DIT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.in_layout, operand_type, a.K, a.M, a.K));
  DIT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.out_layout, output_type, a.N, a.M, a.N));

  cublasLtMatmulPreference_t preference = nullptr;
  DIT_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  const uint64_t workspace_bytes = kWorkspaceBytes;
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  const cublasStatus_t status = [&] {
    const cublasStatus_t set = cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes, sizeof workspace_bytes);
    if (set != CUBLAS_STATUS_SUCCESS) return set;
    return cublasLtMatmulAlgoGetHeuristic(handle_, plan.desc, plan.weight_layout, plan.in_layout,
                                          plan.out_layout, plan.out_layout, preference, 1, &result,
                                          &returned);
  }();
  cublasLtMatmulPreferenceDestroy(preference);
  if (status != CUBLAS_STATUS_SUCCESS || returned == 0) {
    cublasLtMatrixLayoutDestroy(plan.weight_layout);
    cublasLtMatrixLayoutDestroy(plan.in_layout);
    cublasLtMatrixLayoutDestroy(plan.out_layout);
    cublasLtMatmulDescDestroy(plan.desc);
    throw_device_error(__FILE__, __LINE__, "cublasLtMatmulAlgoGetHeuristic",
                       (status != CUBLAS_STATUS_SUCCESS ? std::string(cublas_status_name(status))
                                                        : std::string("no algorithm")) +
                           " for " + describe(a));
  }
  plan.algo = result.algo;
  return plans_.emplace(key, plan).first->second;
}

void GemmRunner::linear(const GemmArgs& a, cudaStream_t stream) {
  const char* op = "dit::cuda::GemmRunner::linear";
  require(a.M > 0 && a.N > 0 && a.K > 0, op, "empty shape in " + describe(a));
  require(a.output == a.operands || a.output == DeviceDtype::f32, op,
          "output must be f32 or the operands' dtype: " + describe(a));
  require(a.compute == GemmCompute::fp32 || a.operands == DeviceDtype::f32, op,
          "tf32 compute needs f32 operands: " + describe(a));
  require_aligned(a.in, kPointerAlignment, op, "in");
  require_aligned(a.weight, kPointerAlignment, op, "weight");
  require_aligned(a.out, kPointerAlignment, op, "out");
  if (a.epilogue != GemmEpilogue::none) require_aligned(a.bias, kPointerAlignment, op, "bias");

  if (a.epilogue != GemmEpilogue::none && (unfused_epilogues_ || !can_run(a))) {
    GemmArgs plain = a;
    plain.epilogue = GemmEpilogue::none;
    matmul(plan_for(plain), plain, stream);
    bias_activation(a.out, a.bias, a.output, a.M, a.N, a.epilogue == GemmEpilogue::gelu_bias, stream);
    return;
  }
  matmul(plan_for(a), a, stream);
}

void GemmRunner::matmul(Plan& plan, const GemmArgs& a, cudaStream_t stream) {
  if (a.epilogue != GemmEpilogue::none)
    DIT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &a.bias,
                                                    sizeof a.bias));
  const float alpha = 1.0f, beta = 0.0f;
  DIT_CUBLAS_CHECK(cublasLtMatmul(handle_, plan.desc, &alpha, a.weight, plan.weight_layout, a.in,
                                  plan.in_layout, &beta, a.out, plan.out_layout, a.out, plan.out_layout,
                                  &plan.algo, workspace_, kWorkspaceBytes, stream));
}

}  // namespace dit::cuda
