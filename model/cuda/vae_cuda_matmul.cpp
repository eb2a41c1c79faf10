// cuBLASLt matrix products for the VAE attention (model/cuda/vae_cuda_matmul.h).
#include "model/cuda/vae_cuda_matmul.h"

#include <string>

#include "kernels/cuda_check.h"

namespace dit::cuda {

static cudaDataType_t cuda_type(Precision precision) {
  switch (precision) {
    case Precision::fp16: return CUDA_R_16F;
    case Precision::bf16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

LtMatmul::LtMatmul(cublasLtHandle_t handle, const MatmulShape& shape, Precision precision)
    : handle_(handle), shape_(shape) {
  const char* op = "dit::cuda::LtMatmul";
  require(shape.m > 0 && shape.n > 0 && shape.k > 0 && shape.batch > 0, op, "non-positive size");
  const size_t element = precision == Precision::fp16 || precision == Precision::bf16 ? 2 : 4;
  for (int64_t stride : {shape.lda, shape.ldb, shape.ldd, shape.stride_a, shape.stride_b, shape.stride_d})
    require(stride * element % kAlignmentBytes == 0, op,
            "leading dimension or stride " + std::to_string(stride) + " breaks 16-byte alignment");

  const cudaDataType_t type = cuda_type(precision);
  const cublasComputeType_t compute = precision == Precision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  cublasLtMatmulDesc_t desc = nullptr;
  DIT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, compute, CUDA_R_32F));
  desc_.reset(desc);
  const cublasOperation_t transpose_a = shape.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, no_transpose = CUBLAS_OP_N;
  DIT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose_a, sizeof transpose_a));
  DIT_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &no_transpose, sizeof no_transpose));
  const cublasLtEpilogue_t epilogue = shape.bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  DIT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));

  auto make_layout = [&](uint64_t rows, uint64_t cols, int64_t ld, int64_t stride) {
    cublasLtMatrixLayout_t layout = nullptr;
    DIT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, type, rows, cols, ld));
    Layout owned(layout);
    if (shape.batch > 1) {
      const int32_t batch = shape.batch;
      DIT_CUBLAS_CHECK(
          cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch));
      DIT_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                        sizeof stride));
    }
    return owned;
  };
  a_layout_ = shape.transpose_a ? make_layout(shape.k, shape.m, shape.lda, shape.stride_a)
                                : make_layout(shape.m, shape.k, shape.lda, shape.stride_a);
  b_layout_ = make_layout(shape.k, shape.n, shape.ldb, shape.stride_b);
  d_layout_ = make_layout(shape.m, shape.n, shape.ldd, shape.stride_d);

  cublasLtMatmulPreference_t raw_preference = nullptr;
  DIT_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&raw_preference));
  std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>,
                  Destroy<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>>
      preference(raw_preference);
  const uint64_t workspace = kWorkspaceBytes;
  DIT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(raw_preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                        &workspace, sizeof workspace));
  const uint32_t alignment = kAlignmentBytes;
  for (auto attribute : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                         CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    DIT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(raw_preference, attribute, &alignment, sizeof alignment));

  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  DIT_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(handle_, desc, a_layout_.get(), b_layout_.get(), d_layout_.get(),
                                                  d_layout_.get(), raw_preference, 1, &result, &found));
  if (found == 0)
    throw Error(ErrorKind::device, "cuBLASLt has no algorithm for a " + std::to_string(shape.m) + "x" +
                                       std::to_string(shape.n) + "x" + std::to_string(shape.k) + " product (batch " +
                                       std::to_string(shape.batch) + ", " + precision_name(precision) + ")");
  algo_ = result.algo;
}

void LtMatmul::run(const void* a, const void* b, const void* c, void* d, const void* bias, void* workspace,
                   cudaStream_t stream) const {
  const char* op = "dit::cuda::LtMatmul::run";
  require_aligned(a, kAlignmentBytes, op, "a");
  require_aligned(b, kAlignmentBytes, op, "b");
  require_aligned(d, kAlignmentBytes, op, "d");
  require_aligned(workspace, kAlignmentBytes, op, "workspace");
  require(!shape_.bias || bias != nullptr, op, "bias expected");
  require(shape_.beta == 0.0f || c != nullptr, op, "C expected when beta != 0");
  if (shape_.bias)
    DIT_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc_.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
  DIT_CUBLAS_CHECK(cublasLtMatmul(handle_, desc_.get(), &shape_.alpha, a, a_layout_.get(), b, b_layout_.get(),
                                  &shape_.beta, shape_.beta != 0.0f ? c : d, d_layout_.get(), d, d_layout_.get(),
                                  &algo_, workspace, kWorkspaceBytes, stream));
}

}  // namespace dit::cuda
