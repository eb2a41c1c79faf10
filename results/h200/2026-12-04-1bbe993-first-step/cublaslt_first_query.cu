// Scratch probe: where cuBLASLt's first heuristic query spends its time.
#include <cublasLt.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
static double now_ms() {
  using namespace std::chrono;
  static const auto t0 = steady_clock::now();
  return duration<double, std::milli>(steady_clock::now() - t0).count();
}
static int ctx_active() {
  unsigned flags = 0; int active = -1;
  cuDevicePrimaryCtxGetState(0, &flags, &active);
  return active;
}
static void heur(cublasLtHandle_t h, cudaDataType_t ab, cudaDataType_t cd, int M, int N, int K, const char* what) {
  double t = now_ms();
  cublasLtMatmulDesc_t desc; cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasOperation_t T = CUBLAS_OP_T; cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &T, sizeof T);
  cublasLtMatrixLayout_t a, b, c;
  cublasLtMatrixLayoutCreate(&a, ab, K, N, K); cublasLtMatrixLayoutCreate(&b, ab, K, M, K); cublasLtMatrixLayoutCreate(&c, cd, N, M, N);
  cublasLtMatmulPreference_t pref; cublasLtMatmulPreferenceCreate(&pref);
  size_t ws = 32u << 20; cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  cublasLtMatmulHeuristicResult_t r[8]; int n = 0;
  cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(h, desc, a, b, c, c, pref, 8, r, &n);
  std::printf("%9.2f heuristic %-22s %6.2f ms status %d returned %d ctx_active %d\n", now_ms(), what, now_ms() - t, s, n, ctx_active());
}
static cublasLtMatmulAlgo_t last_algo;
static cublasLtMatmulDesc_t last_desc; static cublasLtMatrixLayout_t la, lb, lc;
static void heur_keep(cublasLtHandle_t h, cudaDataType_t ab, cudaDataType_t cd, int M, int N, int K) {
  cublasLtMatmulDescCreate(&last_desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasOperation_t T = CUBLAS_OP_T; cublasLtMatmulDescSetAttribute(last_desc, CUBLASLT_MATMUL_DESC_TRANSA, &T, sizeof T);
  cublasLtMatrixLayoutCreate(&la, ab, K, N, K); cublasLtMatrixLayoutCreate(&lb, ab, K, M, K); cublasLtMatrixLayoutCreate(&lc, cd, N, M, N);
  cublasLtMatmulPreference_t pref; cublasLtMatmulPreferenceCreate(&pref);
  size_t ws = 32u << 20; cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  cublasLtMatmulHeuristicResult_t r[8]; int n = 0;
  double t = now_ms();
  if (h) { cublasLtMatmulAlgoGetHeuristic(h, last_desc, la, lb, lc, lc, pref, 8, r, &n); last_algo = r[0].algo;
    std::printf("%9.2f heuristic %.2f ms\n", now_ms(), now_ms() - t); }
}
static void all(cublasLtHandle_t h, const char* tag) {
  std::printf("-- %s\n", tag);
  heur(h, CUDA_R_32F, CUDA_R_32F, 2, 1152, 256, "f32>f32");
  heur(h, CUDA_R_16F, CUDA_R_32F, 2, 195840, 1152, "f16>f32");
  heur(h, CUDA_R_16F, CUDA_R_16F, 512, 3456, 1152, "f16>f16");
  heur(h, CUDA_R_16F, CUDA_R_16F, 4096, 512, 512, "f16>f16 vae");
  heur(h, CUDA_R_16BF, CUDA_R_16BF, 512, 3456, 1152, "bf16>bf16");
}
int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "before";
  cuInit(0);
  std::printf("%9.2f cuInit done, ctx_active %d, mode %s\n", now_ms(), ctx_active(), mode);
  cublasLtHandle_t h;
  if (!std::strcmp(mode, "before")) {  // heuristics before any context
    double t = now_ms(); cublasLtCreate(&h); std::printf("%9.2f create %.2f ms ctx_active %d\n", now_ms(), now_ms() - t, ctx_active());
    all(h, "no context yet");
    t = now_ms(); cudaFree(0); std::printf("%9.2f context after: %.2f ms\n", now_ms(), now_ms() - t);
    all(h, "again");
  } else if (!std::strcmp(mode, "after")) {
    double t = now_ms(); cudaFree(0); std::printf("%9.2f context %.2f ms\n", now_ms(), now_ms() - t);
    t = now_ms(); cublasLtCreate(&h); std::printf("%9.2f create %.2f ms\n", now_ms(), now_ms() - t);
    all(h, "after context");
  } else if (!std::strcmp(mode, "parallel")) {
    double t = now_ms(); cudaFree(0); std::printf("%9.2f context %.2f ms\n", now_ms(), now_ms() - t);
    cublasLtCreate(&h); t = now_ms();
    std::thread a([&] { heur(h, CUDA_R_32F, CUDA_R_32F, 2, 1152, 256, "f32>f32 par"); });
    std::thread b([&] { heur(h, CUDA_R_16F, CUDA_R_32F, 2, 195840, 1152, "f16>f32 par"); });
    std::thread c([&] { heur(h, CUDA_R_16F, CUDA_R_16F, 512, 3456, 1152, "f16>f16 par"); });
    a.join(); b.join(); c.join(); std::printf("%9.2f parallel three: %.2f ms\n", now_ms(), now_ms() - t);
  } else if (!std::strcmp(mode, "save") || !std::strcmp(mode, "check")) {
    double t = now_ms(); cudaFree(0); cublasLtCreate(&h); std::printf("%9.2f context+create %.2f ms\n", now_ms(), now_ms() - t);
    const bool save = !std::strcmp(mode, "save");
    heur_keep(save ? h : nullptr, CUDA_R_16F, CUDA_R_16F, 512, 3456, 1152);
    if (save) { FILE* f = std::fopen("/tmp/algo.bin", "wb"); std::fwrite(&last_algo, sizeof last_algo, 1, f); std::fclose(f); }
    else { FILE* f = std::fopen("/tmp/algo.bin", "rb"); if (std::fread(&last_algo, sizeof last_algo, 1, f) != 1) return 1; std::fclose(f); }
    cublasLtMatmulHeuristicResult_t res{};
    t = now_ms(); cublasStatus_t s = cublasLtMatmulAlgoCheck(h, last_desc, la, lb, lc, lc, &last_algo, &res);
    std::printf("%9.2f algo check %.2f ms status %d ws %zu\n", now_ms(), now_ms() - t, s, res.workspaceSize);
    void *A, *B, *C, *W; cudaMalloc(&A, 3456 * 1152 * 2); cudaMalloc(&B, 512 * 1152 * 2); cudaMalloc(&C, 512 * 3456 * 2); cudaMalloc(&W, 32 << 20);
    float alpha = 1, beta = 0;
    for (int i = 0; i < 2; ++i) { t = now_ms(); s = cublasLtMatmul(h, last_desc, &alpha, A, la, B, lb, &beta, C, lc, C, lc, &last_algo, W, 32 << 20, 0);
      cudaDeviceSynchronize(); std::printf("%9.2f matmul %d %.2f ms status %d\n", now_ms(), i, now_ms() - t, s); }
    t = now_ms(); cublasLtMatmulAlgo_t ids_algo; int ids[64]; int nid = 0;
    cublasLtMatmulAlgoGetIds(h, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, 64, ids, &nid);
    std::printf("%9.2f getids f32 %.2f ms n %d\n", now_ms(), now_ms() - t, nid);
    t = now_ms(); s = cublasLtMatmulAlgoInit(h, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, nid ? ids[0] : 0, &ids_algo);
    std::printf("%9.2f algo init f32 %.2f ms status %d\n", now_ms(), now_ms() - t, s);
  } else {  // beside: context on main, heuristics on a thread
    double t = now_ms();
    std::thread th([&] { cublasLtHandle_t h2; cublasLtCreate(&h2); all(h2, "thread beside context"); });
    cudaFree(0); std::printf("%9.2f main: context %.2f ms\n", now_ms(), now_ms() - t);
    th.join(); std::printf("%9.2f both done %.2f ms\n", now_ms(), now_ms() - t);
  }
  return 0;
}
