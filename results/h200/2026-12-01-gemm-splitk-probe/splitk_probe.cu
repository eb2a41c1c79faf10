// Exploration: cuBLASLt heuristic candidates vs forced split-K variants for DiT-XL/2 GEMMs.
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <string>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("cuda %s line %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)
#define BK(x) do { cublasStatus_t st_ = (x); if (st_ != CUBLAS_STATUS_SUCCESS) { printf("cublas %d line %d\n", (int)st_, __LINE__); exit(1);} } while (0)

static int64_t attr(const cublasLtMatmulAlgo_t& a, cublasLtMatmulAlgoConfigAttributes_t at) {
  int64_t v = 0; size_t w = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&a, at, &v, sizeof v, &w) != CUBLAS_STATUS_SUCCESS) return -1;
  if (w == 4) { int32_t x; memcpy(&x, &v, 4); return x; }
  if (w == 2) { int16_t x; memcpy(&x, &v, 2); return x; }
  return v;
}
static std::string desc(const cublasLtMatmulAlgo_t& a) {
  char b[200];
  snprintf(b, sizeof b, "id %lld tile %lld stages %lld splitk %lld red %lld swz %lld cl %lld custom %lld",
           (long long)attr(a, CUBLASLT_ALGO_CONFIG_ID), (long long)attr(a, CUBLASLT_ALGO_CONFIG_TILE_ID),
           (long long)attr(a, CUBLASLT_ALGO_CONFIG_STAGES_ID), (long long)attr(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
           (long long)attr(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME), (long long)attr(a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING),
           (long long)attr(a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID), (long long)attr(a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION));
  return b;
}

int main() {
  cublasLtHandle_t h; BK(cublasLtCreate(&h));
  const size_t ws_bytes = 32u << 20; void* ws; CK(cudaMalloc(&ws, ws_bytes));
  cudaStream_t st; CK(cudaStreamCreate(&st));
  struct S { const char* name; int M, N, K; bool gelu; };
  std::vector<S> shapes = {{"proj", 512, 1152, 1152, false}, {"fc2", 512, 1152, 4608, false},
                           {"qkv", 512, 3456, 1152, false}, {"fc1", 512, 4608, 1152, true},
                           {"proj", 2048, 1152, 1152, false}, {"fc2", 2048, 1152, 4608, false},
                           {"qkv", 2048, 3456, 1152, false}, {"fc1", 2048, 4608, 1152, true}};
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  for (const S& s : shapes) {
    const size_t wbytes = (size_t)s.N * s.K * 2;
    const int copies = std::max<int>(2, (int)((160u << 20) / wbytes));
    void* w; CK(cudaMalloc(&w, wbytes * copies)); CK(cudaMemset(w, 0x11, wbytes * copies));
    void *in, *out, *bias; CK(cudaMalloc(&in, (size_t)s.M * s.K * 2)); CK(cudaMemset(in, 0x12, (size_t)s.M * s.K * 2));
    CK(cudaMalloc(&out, (size_t)s.M * s.N * 2)); CK(cudaMalloc(&bias, s.N * 2)); CK(cudaMemset(bias, 0, s.N * 2));
    cublasLtMatmulDesc_t d; BK(cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t T = CUBLAS_OP_T, N = CUBLAS_OP_N;
    BK(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &T, sizeof T));
    BK(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSB, &N, sizeof N));
    cublasLtEpilogue_t ep = s.gelu ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
    BK(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof ep));
    BK(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    cublasLtMatrixLayout_t lw, li, lo;
    BK(cublasLtMatrixLayoutCreate(&lw, CUDA_R_16F, s.K, s.N, s.K));
    BK(cublasLtMatrixLayoutCreate(&li, CUDA_R_16F, s.K, s.M, s.K));
    BK(cublasLtMatrixLayoutCreate(&lo, CUDA_R_16F, s.N, s.M, s.N));
    cublasLtMatmulPreference_t pref; BK(cublasLtMatmulPreferenceCreate(&pref));
    uint64_t wsz = ws_bytes;
    BK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsz, sizeof wsz));
    cublasLtMatmulHeuristicResult_t res[64]; int got = 0;
    BK(cublasLtMatmulAlgoGetHeuristic(h, d, lw, li, lo, lo, pref, 64, res, &got));
    std::vector<cublasLtMatmulAlgo_t> algos;
    std::vector<std::string> tags;
    for (int i = 0; i < got; ++i) { algos.push_back(res[i].algo); tags.push_back("heur" + std::to_string(i)); }
    // forced split-K on the first 4 heuristic candidates
    for (int i = 0; i < std::min(got, 4); ++i)
      for (int32_t sk : {2, 3, 4, 6, 8})
        for (uint32_t red : {1u, 2u, 4u}) {
          cublasLtMatmulAlgo_t a = res[i].algo;
          if (cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &sk, sizeof sk) != CUBLAS_STATUS_SUCCESS) continue;
          if (cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red) != CUBLAS_STATUS_SUCCESS) continue;
          cublasLtMatmulHeuristicResult_t chk;
          if (cublasLtMatmulAlgoCheck(h, d, lw, li, lo, lo, &a, &chk) != CUBLAS_STATUS_SUCCESS) continue;
          if (chk.workspaceSize > ws_bytes) continue;
          algos.push_back(a); tags.push_back("h" + std::to_string(i) + "+sk" + std::to_string(sk) + "r" + std::to_string(red));
        }
    printf("== %s M %d N %d K %d: %d heuristic, %zu total\n", s.name, s.M, s.N, s.K, got, algos.size());
    const float alpha = 1.f, beta = 0.f;
    for (size_t ai = 0; ai < algos.size(); ++ai) {
      double best[2] = {1e9, 1e9};
      bool ok = true;
      for (int mode = 0; mode < 2 && ok; ++mode) {  // 0 hot weights, 1 cold (rotating copies)
        const int calls = mode == 0 ? 10 : copies;
        cudaGraph_t g; cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
        for (int c = 0; c < calls; ++c) {
          const char* wp = (const char*)w + (mode == 0 ? 0 : (size_t)c * wbytes);
          if (cublasLtMatmul(h, d, &alpha, wp, lw, in, li, &beta, out, lo, out, lo, &algos[ai], ws, ws_bytes, st) != CUBLAS_STATUS_SUCCESS) ok = false;
        }
        CK(cudaStreamEndCapture(st, &g));
        if (!ok) { cudaGraphDestroy(g); break; }
        CK(cudaGraphInstantiate(&ge, g, 0));
        CK(cudaGraphLaunch(ge, st)); CK(cudaStreamSynchronize(st));
        for (int r = 0; r < 7; ++r) {
          CK(cudaEventRecord(e0, st)); CK(cudaGraphLaunch(ge, st)); CK(cudaEventRecord(e1, st)); CK(cudaEventSynchronize(e1));
          float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); best[mode] = std::min(best[mode], 1000.0 * ms / calls);
        }
        cudaGraphExecDestroy(ge); cudaGraphDestroy(g);
      }
      if (!ok) { printf("  %-12s failed %s\n", tags[ai].c_str(), desc(algos[ai]).c_str()); continue; }
      printf("  %-12s hot %7.2f cold %7.2f us  %s\n", tags[ai].c_str(), best[0], best[1], desc(algos[ai]).c_str());
    }
    cudaFree(w); cudaFree(in); cudaFree(out); cudaFree(bias);
    cublasLtMatmulPreferenceDestroy(pref); cublasLtMatrixLayoutDestroy(lw); cublasLtMatrixLayoutDestroy(li);
    cublasLtMatrixLayoutDestroy(lo); cublasLtMatmulDescDestroy(d);
  }
  return 0;
}
