// CUDA patch embedding (kernels/patch_embed.h): a p x p stride-p convolution as one dot product
// of length C*p*p per output, a block's patches staged in shared memory, plus bias and pos_embed;
// and the same fused with the first LayerNorm + modulation: two tokens a block of 96 threads
// (one where T is odd), each thread computing its three float4 of both rows from the transposed
// weight and keeping them in registers for the statistics (kernels/layernorm_vec4.cuh). That
// replaces two launches of the forward pass (13 and 6 us at DiT-XL/2 batch 2 on an H200, Nsight
// Compute) with one. Both kernels read the weight transposed, [C p p, D]: in PyTorch's
// [D, C p p] the fused kernel's 16-byte loads had each thread of a warp in another 256-byte row,
// 32 L1 wavefronts a load, and took 14.7 us. Each weight quad serving two tokens halves the
// weight reads (the whole 74 KB weight per block): bench_kernels on an H200 (L2 flushed, batch 2)
// 12.9 -> 10.2 us at 256 and 20.6 -> 17.0 at 512; four tokens a block took 11.9 and 19.2.
#include "kernels/patch_embed.h"

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda_check.h"
#include "kernels/layernorm_modulate.h"
#include "kernels/layernorm_vec4.cuh"

namespace dit::cuda {

// ---------------------------------------------------------------------------------------------
// Kernel

// grid (ceil(D / blockDim), ceil(T / kTokens), B); one thread per output feature d of up to
// kTokens tokens. Each weight element a thread reads serves kTokens outputs: with one token a
// block, and the weight in PyTorch's [D, C p p] layout (rows strided across the warp), the kernel
// took 24 us at DiT-XL/2 batch 2 on an H200 (0.63 ms at batch 64) for 9 MFLOP.
constexpr int kTokens = 16;
static __global__ void patch_embed_kernel(const float* __restrict__ x,          // [B, C, S, S]
                                          const float* __restrict__ weight_t,   // [C p p, D]
                                          const float* __restrict__ bias,       // [D]
                                          const float* __restrict__ pos_embed,  // [T, D]
                                          float* __restrict__ out,              // [B, T, D]
                                          int C, int S, int p, int D) {
  extern __shared__ float patches[];  // [kTokens, C, p, p]
  const int g = S / p, T = g * g;
  const int first = blockIdx.y * kTokens, b = blockIdx.z;
  const int tokens = min(kTokens, T - first);
  const int patch_size = C * p * p;
  for (int i = threadIdx.x; i < kTokens * patch_size; i += blockDim.x) {
    const int t = i / patch_size, e = i % patch_size;
    const int token = first + t, row = token / g, col = token % g;
    const int c = e / (p * p), r = (e / p) % p, q = e % p;
    patches[i] = t < tokens ? x[((static_cast<size_t>(b) * C + c) * S + row * p + r) * S + col * p + q] : 0.0f;
  }
  __syncthreads();
  const int d = blockIdx.x * blockDim.x + threadIdx.x;
  if (d >= D) return;
  float acc[kTokens];
#pragma unroll
  for (int t = 0; t < kTokens; ++t) acc[t] = 0.0f;
#pragma unroll 16  // DiT's 4 x 2 x 2 patch in one unrolled body: its 16 weight loads issued together
  for (int i = 0; i < patch_size; ++i) {
    const float wi = weight_t[static_cast<size_t>(i) * D + d];  // a warp reads 32 consecutive floats
#pragma unroll
    for (int t = 0; t < kTokens; ++t) acc[t] += wi * patches[t * patch_size + i];  // rows >= tokens: zeros, not stored
  }
  const float bd = bias[d];
#pragma unroll
  for (int t = 0; t < kTokens; ++t) {
    if (t < tokens) {
      const size_t token = static_cast<size_t>(first + t);
      out[(static_cast<size_t>(b) * T + token) * D + d] = acc[t] + bd + pos_embed[token * D + d];
    }
  }
}

constexpr int kFusedMaxPatch = 256;  // C p^2 of the fused form: C = 4 up to p = 8
constexpr int kFusedRows = 2;        // tokens a block of the fused form, where they divide T

// grid (B T / kRows), kVecThreads threads: tokens kRows blockIdx.x .. + kRows - 1 of the
// flattened [B, T] (kRows divides T, so a block's tokens share their batch entry and modulation).
// Each weight quad a thread loads serves its kRows tokens. Output d sums w[d, i] * patch[i] in
// increasing i with one FMA each, then adds the bias and pos_embed, as patch_embed_kernel does,
// so the residual has the same bits.
template <typename R, typename Out, int kRows>
static __global__ void __launch_bounds__(kVecThreads)
    patch_embed_layernorm_kernel(const float* __restrict__ x,            // [B, C, S, S]
                                 const float* __restrict__ weight_t,     // [P, D], P = C p p
                                 const float* __restrict__ bias,         // [D]
                                 const float* __restrict__ pos_embed,    // [T, D]
                                 R* __restrict__ residual,               // [B, T, D]
                                 const float* __restrict__ shift,        // [B, mod_stride]
                                 const float* __restrict__ scale,        // [B, mod_stride]
                                 int mod_stride, Out* __restrict__ out,  // [B, T, D]
                                 int C, int S, int p, int D, float inv_d, float eps) {
  __shared__ float patch[kRows][kFusedMaxPatch];
  const int g = S / p, T = g * g, P = C * p * p, quads = D / 4;
  const int first_row = blockIdx.x * kRows, b = first_row / T, first_token = first_row - b * T;
  for (int i = threadIdx.x; i < kRows * P; i += kVecThreads) {
    const int t = i / P, e = i - t * P, token = first_token + t, row = token / g, col = token - row * g;
    const int c = e / (p * p), r = (e / p) % p, q = e % p;
    patch[t][e] = x[((static_cast<size_t>(b) * C + c) * S + row * p + r) * S + col * p + q];
  }
  // What does not depend on the patch is fetched before the barrier.
  const float4* bias4 = reinterpret_cast<const float4*>(bias);
  const float4* pos4 = reinterpret_cast<const float4*>(pos_embed + static_cast<size_t>(first_token) * D);
  const float4* sh = reinterpret_cast<const float4*>(shift + static_cast<size_t>(b) * mod_stride);
  const float4* sc = reinterpret_cast<const float4*>(scale + static_cast<size_t>(b) * mod_stride);
  const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  float4 v[kRows][kVecPerThread], shifts[kVecPerThread], scales[kVecPerThread], added[kVecPerThread];
#pragma unroll
  for (int j = 0; j < kVecPerThread; ++j) {
    const int q = threadIdx.x + kVecThreads * j;
    const bool in_row = q < quads;
    added[j] = in_row ? bias4[q] : zero;
    shifts[j] = in_row ? sh[q] : zero;
    scales[j] = in_row ? sc[q] : zero;
#pragma unroll
    for (int t = 0; t < kRows; ++t) v[t][j] = in_row ? pos4[static_cast<size_t>(t) * quads + q] : zero;  // pos_embed
  }
  __syncthreads();
  // Row i of weight_t, quad q: the weights of outputs 4 q .. 4 q + 3 for patch element i, one
  // 16-byte load whose warp reads 512 consecutive bytes.
  const float4* w4 = reinterpret_cast<const float4*>(weight_t);
  R* out_rows = residual + static_cast<size_t>(first_row) * D;
#pragma unroll
  for (int j = 0; j < kVecPerThread; ++j) {
    const int q = threadIdx.x + kVecThreads * j;
    if (q >= quads) continue;
    float4 acc[kRows];
#pragma unroll
    for (int t = 0; t < kRows; ++t) acc[t] = zero;
#pragma unroll 16
    for (int i = 0; i < P; ++i) {
      const float4 w = w4[static_cast<size_t>(i) * quads + q];
#pragma unroll
      for (int t = 0; t < kRows; ++t) {
        const float in = patch[t][i];
        acc[t] = make_float4(fmaf(w.x, in, acc[t].x), fmaf(w.y, in, acc[t].y), fmaf(w.z, in, acc[t].z),
                             fmaf(w.w, in, acc[t].w));
      }
    }
#pragma unroll
    for (int t = 0; t < kRows; ++t) {
      const float4 pos = v[t][j];
      v[t][j] = make_float4(acc[t].x + added[j].x + pos.x, acc[t].y + added[j].y + pos.y, acc[t].z + added[j].z + pos.z,
                            acc[t].w + added[j].w + pos.w);
      store4(out_rows, t * quads + q, v[t][j]);
    }
  }
  Out4<Out>* out_quads = reinterpret_cast<Out4<Out>*>(out) + static_cast<size_t>(first_row) * quads;
  vec4_layernorm_modulate_rows<Out, kRows>(v, shifts, scales, out_quads, quads, inv_d, eps);
}

// ---------------------------------------------------------------------------------------------
// Launchers

static void launch_patch_embed(const float* x, const float* weight_t, const float* bias, const float* pos_embed,
                               float* out, int B, int C, int S, int p, int D, cudaStream_t stream) {
  constexpr int kThreads = 128;
  const int g = S / p;
  const dim3 grid((D + kThreads - 1) / kThreads, (g * g + kTokens - 1) / kTokens, B);
  const size_t shared = static_cast<size_t>(kTokens) * C * p * p * sizeof(float);
  patch_embed_kernel<<<grid, kThreads, shared, stream>>>(x, weight_t, bias, pos_embed, out, C, S, p, D);
  DIT_LAUNCH_CHECK();
}

template <typename R, typename Out>
static void launch_patch_embed_layernorm(const float* x, const float* weight_t, const float* bias,
                                         const float* pos_embed, R* residual, const float* shift, const float* scale,
                                         int mod_stride, Out* out, int B, int C, int S, int p, int D, float eps,
                                         cudaStream_t stream) {
  const int T = (S / p) * (S / p);
  const float inv_d = 1.0f / static_cast<float>(D);
  if (T % kFusedRows == 0)
    patch_embed_layernorm_kernel<R, Out, kFusedRows><<<B * T / kFusedRows, kVecThreads, 0, stream>>>(
        x, weight_t, bias, pos_embed, residual, shift, scale, mod_stride, out, C, S, p, D, inv_d, eps);
  else
    patch_embed_layernorm_kernel<R, Out, 1><<<B * T, kVecThreads, 0, stream>>>(
        x, weight_t, bias, pos_embed, residual, shift, scale, mod_stride, out, C, S, p, D, inv_d, eps);
  DIT_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// Public entries

void patch_embed(const float* x, const float* weight_t, const float* bias, const float* pos_embed, float* out, int B,
                 int C, int S, int p, int D, cudaStream_t stream) {
  const char* op = "dit::cuda::patch_embed";
  require(B > 0 && C > 0 && S > 0 && p > 0 && D > 0, op, "non-positive size");
  require(S % p == 0, op, "latent size " + std::to_string(S) + " is not a multiple of patch " + std::to_string(p));
  require((S / p) * (S / p) <= 65535 && B <= 65535, op, "grid too large");
  require(static_cast<size_t>(kTokens) * C * p * p * sizeof(float) <= 48 * 1024, op,
          "patch too large for shared memory");
  for (const void* ptr :
       {static_cast<const void*>(x), static_cast<const void*>(weight_t), static_cast<const void*>(bias),
        static_cast<const void*>(pos_embed), static_cast<const void*>(out)})
    require_aligned(ptr, alignof(float), op, "pointer");
  launch_patch_embed(x, weight_t, bias, pos_embed, out, B, C, S, p, D, stream);
}

void patch_embed_layernorm_modulate(const float* x, const float* weight_t, const float* bias, const float* pos_embed,
                                    void* residual, DeviceDtype residual_dtype, const float* shift, const float* scale,
                                    int mod_stride, void* out, DeviceDtype out_dtype, int B, int C, int S, int p, int D,
                                    float eps, cudaStream_t stream) {
  const char* op = "dit::cuda::patch_embed_layernorm_modulate";
  require(B > 0 && C > 0 && S > 0 && p > 0 && D > 0, op, "non-positive size");
  require(S % p == 0, op, "latent size " + std::to_string(S) + " is not a multiple of patch " + std::to_string(p));
  require(static_cast<int64_t>(B) * (S / p) * (S / p) < (int64_t{1} << 31), op, "too many tokens");
  const int P = C * p * p;
  const auto aligned16 = [](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; };
  const bool fused = D % 4 == 0 && D <= kVecFormMaxD && P % 4 == 0 && P <= kFusedMaxPatch && mod_stride % 4 == 0 &&
                     aligned16(weight_t) && aligned16(bias) && aligned16(pos_embed) &&
                     reinterpret_cast<uintptr_t>(residual) % (4 * dtype_bytes(residual_dtype)) == 0 &&
                     aligned16(shift) && aligned16(scale) &&
                     reinterpret_cast<uintptr_t>(out) % (4 * dtype_bytes(out_dtype)) == 0;
  if (!fused) {
    require(residual_dtype == DeviceDtype::f32, op, "a 16-bit residual stream needs the fused form");
    float* residual_f32 = static_cast<float*>(residual);
    patch_embed(x, weight_t, bias, pos_embed, residual_f32, B, C, S, p, D, stream);
    layernorm_modulate(residual_f32, shift, scale, mod_stride, out, out_dtype, B, (S / p) * (S / p), D, eps, stream);
    return;
  }
  require(mod_stride >= D, op, "the modulation stride is smaller than D");
  require(eps > 0.0f, op, "eps must be positive");
  require_aligned(x, alignof(float), op, "x");
  dispatch_dtype(residual_dtype, [&](auto residual_tag) {
    using R = typename decltype(residual_tag)::type;
    dispatch_dtype(out_dtype, [&](auto tag) {
      using Out = typename decltype(tag)::type;
      launch_patch_embed_layernorm(x, weight_t, bias, pos_embed, static_cast<R*>(residual), shift, scale, mod_stride,
                                   static_cast<Out*>(out), B, C, S, p, D, eps, stream);
    });
  });
}

void patch_embed_layernorm_modulate(const float* x, const float* weight_t, const float* bias, const float* pos_embed,
                                    float* residual, const float* shift, const float* scale, int mod_stride, void* out,
                                    DeviceDtype out_dtype, int B, int C, int S, int p, int D, float eps,
                                    cudaStream_t stream) {
  patch_embed_layernorm_modulate(x, weight_t, bias, pos_embed, static_cast<void*>(residual), DeviceDtype::f32, shift,
                                 scale, mod_stride, out, out_dtype, B, C, S, p, D, eps, stream);
}

}  // namespace dit::cuda
