// Scratch microbenchmark for exp-final (not part of any commit): narrow linear variants against
// cuBLASLt at the DiT final layer's shape, hot, inside a graph (flush, produce, linear, consume),
// and their errors against a float64 reference.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda_check.h"
#include "kernels/linear.h"

namespace a_r8 {
namespace dit::cuda {
using ::dit::cuda::DeviceDtype;
using ::dit::cuda::require;
using ::dit::cuda::require_aligned;
}
#include "a_r8.cu"
}
namespace a2_r1 {
namespace dit::cuda {
using ::dit::cuda::DeviceDtype;
using ::dit::cuda::require;
using ::dit::cuda::require_aligned;
}
#include "a2_r1.cu"
}
namespace a2_r2 {
namespace dit::cuda {
using ::dit::cuda::DeviceDtype;
using ::dit::cuda::require;
using ::dit::cuda::require_aligned;
}
#include "a2_r2.cu"
}
namespace a2_r4 {
namespace dit::cuda {
using ::dit::cuda::DeviceDtype;
using ::dit::cuda::require;
using ::dit::cuda::require_aligned;
}
#include "a2_r4.cu"
}
namespace b_w12 {
namespace dit::cuda {
using ::dit::cuda::DeviceDtype;
using ::dit::cuda::require;
using ::dit::cuda::require_aligned;
}
#include "b_w12.cu"
}
namespace b_w18 {
namespace dit::cuda {
using ::dit::cuda::DeviceDtype;
using ::dit::cuda::require;
using ::dit::cuda::require_aligned;
}
#include "b_w18.cu"
}
namespace b_n2_w6 {
namespace dit::cuda {
using ::dit::cuda::DeviceDtype;
using ::dit::cuda::require;
using ::dit::cuda::require_aligned;
}
#include "b_n2_w6.cu"
}
namespace b_n2_w12 {
namespace dit::cuda {
using ::dit::cuda::DeviceDtype;
using ::dit::cuda::require;
using ::dit::cuda::require_aligned;
}
#include "b_n2_w12.cu"
}
namespace b_n4_w12 {
namespace dit::cuda {
using ::dit::cuda::DeviceDtype;
using ::dit::cuda::require;
using ::dit::cuda::require_aligned;
}
#include "b_n4_w12.cu"
}

using dit::cuda::DeviceDtype;
#define CK(x)                                                                           \
  do {                                                                                  \
    cudaError_t e_ = (x);                                                               \
    if (e_ != cudaSuccess) {                                                            \
      printf("%s:%d %s %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));          \
      exit(1);                                                                          \
    }                                                                                   \
  } while (0)
#define CB(x)                                                     \
  do {                                                            \
    cublasStatus_t s_ = (x);                                      \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                            \
      printf("%s:%d %s status %d\n", __FILE__, __LINE__, #x, s_); \
      exit(1);                                                    \
    }                                                             \
  } while (0)

using Launch = void (*)(const void*, const void*, DeviceDtype, const float*, float*, int, int, int, cudaStream_t);
struct Variant {
  const char* name;
  Launch launch;
  bool (*supports)(int, int);
  bool needs_n4;
};
static const Variant kVariants[] = {
    {"A_warp_row_r8", a_r8::dit::cuda::narrow_linear, a_r8::dit::cuda::narrow_linear_supports, false},
    {"A2_quad_r1", a2_r1::dit::cuda::narrow_linear, a2_r1::dit::cuda::narrow_linear_supports, false},
    {"A2_quad_r2", a2_r2::dit::cuda::narrow_linear, a2_r2::dit::cuda::narrow_linear_supports, false},
    {"A2_quad_r4", a2_r4::dit::cuda::narrow_linear, a2_r4::dit::cuda::narrow_linear_supports, false},
    {"B_mma_w12", b_w12::dit::cuda::narrow_linear, b_w12::dit::cuda::narrow_linear_supports, true},
    {"B_mma_w18", b_w18::dit::cuda::narrow_linear, b_w18::dit::cuda::narrow_linear_supports, true},
    {"B_mma_n2_w6", b_n2_w6::dit::cuda::narrow_linear, b_n2_w6::dit::cuda::narrow_linear_supports, true},
    {"B_mma_n2_w12", b_n2_w12::dit::cuda::narrow_linear, b_n2_w12::dit::cuda::narrow_linear_supports, true},
    {"B_mma_n4_w12", b_n4_w12::dit::cuda::narrow_linear, b_n4_w12::dit::cuda::narrow_linear_supports, true},
};

static uint16_t to16(float v, DeviceDtype d, float* rounded) {
  if (d == DeviceDtype::f16) {
    __half h = __float2half_rn(v);
    *rounded = __half2float(h);
    uint16_t u;
    memcpy(&u, &h, 2);
    return u;
  }
  __nv_bfloat16 h = __float2bfloat16_rn(v);
  *rounded = __bfloat162float(h);
  uint16_t u;
  memcpy(&u, &h, 2);
  return u;
}

struct Problem {
  int M, N, K;
  DeviceDtype dtype;
  std::vector<float> x, w, bias;  // rounded values
  std::vector<double> ref;
  void *dx = nullptr, *dw = nullptr;
  float *dbias = nullptr, *dout = nullptr;
  Problem(int M_, int N_, int K_, DeviceDtype d, unsigned seed) : M(M_), N(N_), K(K_), dtype(d) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<uint16_t> hx(size_t(M) * K), hw(size_t(N) * K);
    x.resize(hx.size());
    w.resize(hw.size());
    bias.resize(N);
    for (size_t i = 0; i < hx.size(); ++i) hx[i] = to16(nd(rng), d, &x[i]);
    for (size_t i = 0; i < hw.size(); ++i) hw[i] = to16(nd(rng) / std::sqrt(float(K)), d, &w[i]);
    for (auto& b : bias) b = nd(rng) * 0.1f;
    ref.resize(size_t(M) * N);
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        double acc = bias[n];
        for (int k = 0; k < K; ++k) acc += double(x[size_t(m) * K + k]) * w[size_t(n) * K + k];
        ref[size_t(m) * N + n] = acc;
      }
    CK(cudaMalloc(&dx, hx.size() * 2));
    CK(cudaMalloc(&dw, hw.size() * 2));
    CK(cudaMalloc(&dbias, N * 4));
    CK(cudaMalloc(&dout, size_t(M) * N * 4));
    CK(cudaMemcpy(dx, hx.data(), hx.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dw, hw.data(), hw.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dbias, bias.data(), N * 4, cudaMemcpyHostToDevice));
  }
  // normalised error, max abs error, unwritten count (NaN poison)
  void check(const char* name) {
    std::vector<float> out(size_t(M) * N);
    CK(cudaMemcpy(out.data(), dout, out.size() * 4, cudaMemcpyDeviceToHost));
    double num = 0, den = 0, worst = 0;
    size_t unwritten = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      if (std::isnan(out[i])) {
        ++unwritten;
        continue;
      }
      const double e = out[i] - ref[i];
      num += e * e;
      den += ref[i] * ref[i];
      worst = std::max(worst, std::fabs(e));
    }
    printf("  check %-18s M%-4d N%-3d K%-5d %s: rel %.3e max %.3e unwritten %zu %s\n", name, M, N, K,
           dtype == DeviceDtype::f16 ? "f16" : "bf16", std::sqrt(num / den), worst, unwritten,
           (unwritten == 0 && std::sqrt(num / den) < 1e-4) ? "OK" : "FAIL");
  }
  void poison() { CK(cudaMemset(dout, 0xff, size_t(M) * N * 4)); }
};

struct Lt {
  cublasLtHandle_t handle;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t wl, il, ol;
  cublasLtMatmulAlgo_t algo;
  void* workspace;
  size_t ws = 32u << 20;
  Problem* p;
  Lt(Problem& pr) : p(&pr) {
    CB(cublasLtCreate(&handle));
    CB(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
    CB(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t));
    CB(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof n));
    cublasLtEpilogue_t e = CUBLASLT_EPILOGUE_BIAS;
    CB(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e));
    CB(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p->dbias, sizeof p->dbias));
    const cudaDataType_t ot = p->dtype == DeviceDtype::f16 ? CUDA_R_16F : CUDA_R_16BF;
    CB(cublasLtMatrixLayoutCreate(&wl, ot, p->K, p->N, p->K));
    CB(cublasLtMatrixLayoutCreate(&il, ot, p->K, p->M, p->K));
    CB(cublasLtMatrixLayoutCreate(&ol, CUDA_R_32F, p->N, p->M, p->N));
    CK(cudaMalloc(&workspace, ws));
    cublasLtMatmulPreference_t pref;
    CB(cublasLtMatmulPreferenceCreate(&pref));
    uint64_t wsb = ws;
    CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb));
    cublasLtMatmulHeuristicResult_t r[1];
    int got = 0;
    CB(cublasLtMatmulAlgoGetHeuristic(handle, desc, wl, il, ol, ol, pref, 1, r, &got));
    if (!got) {
      printf("no heuristic\n");
      exit(1);
    }
    algo = r[0].algo;
  }
  void run(cudaStream_t s) {
    const float alpha = 1, beta = 0;
    CB(cublasLtMatmul(handle, desc, &alpha, p->dw, wl, p->dx, il, &beta, p->dout, ol, p->dout, ol, &algo, workspace,
                      ws, s));
  }
};

__global__ void flush_kernel(float4* p, size_t n, float v) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = make_float4(v, v, v, v);
}
__global__ void produce_kernel(const uint4* src, uint4* dst, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}
__global__ void consume_kernel(const float* out, float* sink, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) sink[i] = out[i] * 2.0f;
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char** argv) {
  const bool ncu = argc > 1 && std::string(argv[1]) == "--ncu";
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("device %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  if (!ncu) {
    printf("correctness (float64 reference, bound 1e-4 normalised)\n");
    const int shapes[][3] = {{512, 32, 1152}, {37, 32, 1152}, {100, 16, 256}, {33, 12, 96}, {5, 28, 64}};
    for (DeviceDtype d : {DeviceDtype::f16, DeviceDtype::bf16})
      for (auto& sh : shapes) {
        Problem p(sh[0], sh[1], sh[2], d, 1234 + sh[0]);
        for (const Variant& v : kVariants) {
          if (!v.supports(p.N, p.K)) continue;
          p.poison();
          v.launch(p.dx, p.dw, d, p.dbias, p.dout, p.M, p.N, p.K, s);
          CK(cudaStreamSynchronize(s));
          p.check(v.name);
        }
        Lt lt(p);
        p.poison();
        lt.run(s);
        CK(cudaStreamSynchronize(s));
        p.check("cublasLt");
      }
  }

  Problem p(512, 32, 1152, DeviceDtype::f16, 7);
  Lt lt(p);
  std::vector<std::pair<std::string, std::function<void(cudaStream_t)>>> fns;
  fns.push_back({"cublasLt", [&](cudaStream_t st) { lt.run(st); }});
  for (const Variant& v : kVariants)
    fns.push_back({v.name, [&, v](cudaStream_t st) { v.launch(p.dx, p.dw, p.dtype, p.dbias, p.dout, 512, 32, 1152, st); }});

  const size_t flush_vec = (size_t(128) << 20) / 16;  // 128 MB of float4, twice the H200's L2
  float4* flush;
  CK(cudaMalloc(&flush, flush_vec * 16));
  uint4* src;
  CK(cudaMalloc(&src, size_t(512) * 1152 * 2));
  CK(cudaMemcpy(src, p.dx, size_t(512) * 1152 * 2, cudaMemcpyDeviceToDevice));
  float* sink;
  CK(cudaMalloc(&sink, 512 * 32 * 4));
  auto flush_l2 = [&](cudaStream_t st) { flush_kernel<<<prop.multiProcessorCount * 4, 256, 0, st>>>(flush, flush_vec, 1.0f); };
  auto produce = [&](cudaStream_t st) {
    produce_kernel<<<prop.multiProcessorCount * 2, 256, 0, st>>>(src, static_cast<uint4*>(p.dx), size_t(512) * 1152 / 8);
  };
  auto consume = [&](cudaStream_t st) { consume_kernel<<<64, 256, 0, st>>>(p.dout, sink, 512 * 32); };

  if (ncu) {  // each variant 3 times after a flush and the producer, for Nsight Compute
    for (auto& [name, fn] : fns)
      for (int i = 0; i < 3; ++i) {
        flush_l2(s);
        produce(s);
        fn(s);
      }
    CK(cudaStreamSynchronize(s));
    return 0;
  }

  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  printf("\nhot back-to-back launches (us a launch, median of 5 runs of 2000)\n");
  for (auto& [name, fn] : fns) {
    std::vector<double> runs;
    for (int r = 0; r < 5; ++r) {
      for (int i = 0; i < 50; ++i) fn(s);
      CK(cudaEventRecord(e0, s));
      for (int i = 0; i < 2000; ++i) fn(s);
      CK(cudaEventRecord(e1, s));
      CK(cudaEventSynchronize(e1));
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      runs.push_back(ms * 1000.0 / 2000);
    }
    printf("  %-18s %.2f\n", name.c_str(), median(runs));
  }

  // Graphs: [flush, produce, (linear), consume] x kChain, replayed; the difference of the per-replay
  // times with and without the linear is what the linear costs inside a graph.
  constexpr int kChain = 4;
  auto capture = [&](const std::function<void(cudaStream_t)>* fn) {
    cudaGraph_t g;
    cudaGraphExec_t ex;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int c = 0; c < kChain; ++c) {
      flush_l2(s);
      produce(s);
      if (fn) (*fn)(s);
      consume(s);
    }
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ex, g, 0));
    CK(cudaGraphDestroy(g));
    return ex;
  };
  // and without the flush: the linear in a chain of small kernels, L2 warm
  auto capture_warm = [&](const std::function<void(cudaStream_t)>* fn) {
    cudaGraph_t g;
    cudaGraphExec_t ex;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int c = 0; c < 16; ++c) {
      produce(s);
      if (fn) (*fn)(s);
      consume(s);
    }
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ex, g, 0));
    CK(cudaGraphDestroy(g));
    return ex;
  };
  for (int mode = 0; mode < 2; ++mode) {
    const int per = mode == 0 ? kChain : 16;
    printf("\n%s: us a linear inside a graph (median replay with minus without, /%d; 3 rounds)\n",
           mode == 0 ? "graph, L2 flushed before each producer" : "graph, warm L2 (produce, linear, consume)", per);
    cudaGraphExec_t base = mode == 0 ? capture(nullptr) : capture_warm(nullptr);
    for (auto& [name, fn] : fns) {
      cudaGraphExec_t with = mode == 0 ? capture(&fn) : capture_warm(&fn);
      std::vector<double> diffs;
      for (int round = 0; round < 3; ++round) {
        std::vector<double> tw, tb;
        for (int i = 0; i < 200; ++i) {
          for (int k = 0; k < 2; ++k) {
            cudaGraphExec_t ex = k == 0 ? with : base;
            CK(cudaEventRecord(e0, s));
            CK(cudaGraphLaunch(ex, s));
            CK(cudaEventRecord(e1, s));
            CK(cudaEventSynchronize(e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            (k == 0 ? tw : tb).push_back(ms * 1000.0);
          }
        }
        diffs.push_back((median(tw) - median(tb)) / per);
        if (round == 2) printf("  %-18s %.2f %.2f %.2f   (replay %.1f vs %.1f us)\n", name.c_str(), diffs[0], diffs[1],
                               diffs[2], median(tw), median(tb));
      }
      CK(cudaGraphExecDestroy(with));
    }
    CK(cudaGraphExecDestroy(base));
  }
  return 0;
}
