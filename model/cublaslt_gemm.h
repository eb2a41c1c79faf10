// Linear layers on the GPU through cuBLASLt: out[M, N] = in[M, K] * weight[N, K]^T (+ bias[N])
// (then GELU-tanh), all row-major, PyTorch weight layout. One plan (descriptors and the
// heuristic's first algorithm for a fixed workspace) per distinct shape and type, made on first
// use and reused, so the choice is deterministic across calls and processes.
#pragma once

#include <cublasLt.h>

#include <map>
#include <set>
#include <tuple>

#include "kernels/cuda_types.h"

namespace dit::cuda {

enum class GemmCompute {
  fp32,  // CUBLAS_COMPUTE_32F: true float32 (TF32 off), the golden path
  tf32,  // CUBLAS_COMPUTE_32F_FAST_TF32 (float32 operands only)
};

enum class GemmEpilogue { none, bias, gelu_bias };  // cuBLASLt's GELU is the tanh form

struct GemmArgs {
  const void* in = nullptr;      // [M, K], `operands` dtype
  const void* weight = nullptr;  // [N, K], `operands` dtype
  const void* bias = nullptr;    // [N], `output` dtype; required unless epilogue == none
  void* out = nullptr;           // [M, N], `output` dtype
  int M = 0, N = 0, K = 0;
  DeviceDtype operands = DeviceDtype::f32;
  DeviceDtype output = DeviceDtype::f32;   // operands' dtype or f32
  GemmCompute compute = GemmCompute::fp32;
  GemmEpilogue epilogue = GemmEpilogue::none;
};

class GemmRunner {
 public:
  static constexpr size_t kWorkspaceBytes = 32u << 20;  // fixed: the heuristic depends on it
  static constexpr size_t kPointerAlignment = 256;      // what cuBLASLt's preference assumes

  // `workspace` is device memory of kWorkspaceBytes (from the caller's arena).
  explicit GemmRunner(void* workspace);
  ~GemmRunner();
  GemmRunner(const GemmRunner&) = delete;
  GemmRunner& operator=(const GemmRunner&) = delete;

  // Checks shapes, dtypes and 256-byte alignment, then enqueues on `stream`. An epilogue that
  // cuBLASLt does not offer for this shape and type runs as a separate bias/GELU kernel.
  void linear(const GemmArgs& args, cudaStream_t stream);
  // Whether cuBLASLt has an algorithm for this shape, types and epilogue (the answer is cached).
  bool can_run(const GemmArgs& args);
  // Tests only: run every epilogue as the separate kernel.
  void set_unfused_epilogues(bool unfused) { unfused_epilogues_ = unfused; }

 private:
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t weight_layout = nullptr, in_layout = nullptr, out_layout = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  using Key = std::tuple<int, int, int, int, int, int, int>;
  static Key key_of(const GemmArgs& args);
  Plan& plan_for(const GemmArgs& args);
  void matmul(Plan& plan, const GemmArgs& args, cudaStream_t stream);

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  std::map<Key, Plan> plans_;
  std::set<Key> unsupported_;
  bool unfused_epilogues_ = false;
};

}  // namespace dit::cuda
