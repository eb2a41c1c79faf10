// Strided-batched matrix products on cuBLASLt for the VAE attention (projections, scores, the
// attention-weighted sum). Column-major, as cuBLASLt sees them:
//   D[i] = alpha * op(A[i]) * B[i] + beta * C[i] (+ bias[row]),  i < batch,
// with C == D (in place) when beta != 0. The algorithm is the heuristic's first for a fixed
// workspace size, chosen once at construction: deterministic across calls and processes.
// Internal to model/.
#pragma once

#include <cublasLt.h>

#include <cstdint>
#include <memory>
#include <type_traits>

#include "kernels/cuda_types.h"
#include "model/dit_model.h"

namespace dit::cuda {

struct MatmulShape {
  bool transpose_a = false;  // A stored k x m (then transposed) instead of m x k
  int m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldd = 0;  // B is stored k x n, D (and C) m x n
  int batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_d = 0;  // elements between batch entries
  float alpha = 1.0f, beta = 0.0f;
  bool bias = false;  // add bias[m] to every column of D
};

class LtMatmul {
 public:
  static constexpr size_t kWorkspaceBytes = size_t{32} << 20;  // fixed: the heuristic depends on it
  static constexpr uint32_t kAlignmentBytes = 16;              // every pointer, leading dimension and stride

  // Operands and result in the storage type of `precision`, float32 accumulation (TF32 only
  // for Precision::tf32). Throws dit::Error(device) when cuBLASLt has no algorithm.
  LtMatmul(cublasLtHandle_t handle, const MatmulShape& shape, Precision precision);

  // `workspace` holds kWorkspaceBytes. `c` is read only when beta != 0 (pass d for in place).
  void run(const void* a, const void* b, const void* c, void* d, const void* bias, void* workspace,
           cudaStream_t stream) const;

 private:
  template <typename Handle, cublasStatus_t (*kDestroy)(Handle)>
  struct Destroy {
    void operator()(Handle h) const { kDestroy(h); }
  };
  using Desc = std::unique_ptr<std::remove_pointer_t<cublasLtMatmulDesc_t>,
                               Destroy<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>>;
  using Layout = std::unique_ptr<std::remove_pointer_t<cublasLtMatrixLayout_t>,
                                 Destroy<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>>;

  cublasLtHandle_t handle_;
  MatmulShape shape_;
  Desc desc_;
  Layout a_layout_, b_layout_, d_layout_;
  cublasLtMatmulAlgo_t algo_{};
};

}  // namespace dit::cuda
