// CUDA gated residual + LayerNorm + modulation (kernels/residual_layernorm.h).
//   - Rows of at most 1152 elements whose length and strides are multiples of 4 (DiT-XL/2 and
//     every DiT size): the float4 row form of kernels/layernorm_vec4.cuh, a block of 96 threads
//     (3 warps) per row, each thread holding three float4 in registers from the residual update
//     to the output.
//   - Other rows of at most 1152: a block of 128 threads per row, each thread holding 9 scalar
//     elements (d = thread + 128 j), two block reductions. At DiT-XL/2 batch 2 (512 rows) this
//     form took 5.7 us a launch on an H200 (Nsight Compute, in the forward pass), latency-bound:
//     most cycles waited on loads, issue slots 23% busy; the warp-per-row form before it took 7.7
//     (knowledge/handbook/03_single_gpu/04_fusion.md).
//   - Longer rows: one warp per row, four rows per block; the updated row is written back and
//     re-read for the two-pass statistics (kernels/layernorm_row.cuh).
#include "kernels/residual_layernorm.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/cuda_check.h"
#include "kernels/cuda_reduce.cuh"
#include "kernels/layernorm_row.cuh"
#include "kernels/layernorm_vec4.cuh"

namespace dit::cuda {

constexpr int kResidualLayerNormWarps = 4;  // rows per block of the warp-per-row form
constexpr int kRowThreads = 128;            // threads per row of the block form
constexpr int kRowValues = 9;               // elements per thread of the block form
constexpr int kBlockFormMaxD = kRowThreads * kRowValues;

// ---------------------------------------------------------------------------------------------
// Kernel

// One row's pointers, as every form computes them: row `row` of x, y and out, and the gate,
// shift and scale rows of its batch entry.
template <typename X, typename Y, typename Out>
struct RowPointers {
  X* x;
  const Y* y;
  const float* gate;
  const float* shift;
  const float* scale;
  Out* out;
};

template <typename X, typename Y, typename Out>
__device__ __forceinline__ RowPointers<X, Y, Out> row_pointers(X* x, const Y* y, const float* gate, int gate_stride,
                                                               const float* shift, const float* scale, int mod_stride,
                                                               Out* out, int row, int T, int D) {
  const size_t b = static_cast<size_t>(row / T), offset = static_cast<size_t>(row) * D;
  return {x + offset, y + offset, gate + b * gate_stride, shift + b * mod_stride, scale + b * mod_stride, out + offset};
}

// float4 form: one row per block of kVecThreads threads (D % 4 == 0, D <= kVecFormMaxD, every
// float pointer and stride 16-byte aligned, x, y and out aligned to four of their elements). With
// kPair, y2 and gate2 add a second gated branch after the first, (x + gate y) + gate2 y2, and
// kStoreX says whether the updated row is written back to x.
template <typename X, typename Y, typename Out, bool kPair = false, bool kStoreX = true>
static __global__ void __launch_bounds__(kVecThreads)
    residual_layernorm_vec4_kernel(X* __restrict__ x,               // [B, T, D]
                                   const Y* __restrict__ y,         // [B, T, D]
                                   const float* __restrict__ gate,  // [B, gate_stride]
                                   int gate_stride,
                                   const float* __restrict__ shift,        // [B, mod_stride]
                                   const float* __restrict__ scale,        // [B, mod_stride]
                                   int mod_stride, Out* __restrict__ out,  // [B, T, D]
                                   int T, int D, float inv_d, float eps,
                                   const Y* __restrict__ y2 = nullptr,         // [B, T, D] (kPair)
                                   const float* __restrict__ gate2 = nullptr)  // [B, gate_stride] (kPair)
{
  const int quads = D / 4;
  const RowPointers<X, Y, Out> r =
      row_pointers(x, y, gate, gate_stride, shift, scale, mod_stride, out, blockIdx.x, T, D);
  X* xr = r.x;
  const Y* yr = r.y;
  const float4* g = reinterpret_cast<const float4*>(r.gate);
  const float4* sh = reinterpret_cast<const float4*>(r.shift);
  const float4* sc = reinterpret_cast<const float4*>(r.scale);
  const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  float4 v[kVecPerThread], shifts[kVecPerThread], scales[kVecPerThread];
#pragma unroll
  for (int j = 0; j < kVecPerThread; ++j) {
    const int q = threadIdx.x + kVecThreads * j;
    const bool in_row = q < quads;
    const float4 xq = in_row ? load4(xr, q) : zero, yq = in_row ? load4(yr, q) : zero, gq = in_row ? g[q] : zero;
    shifts[j] = in_row ? sh[q] : zero;
    scales[j] = in_row ? sc[q] : zero;
    v[j] = make_float4(xq.x + gq.x * yq.x, xq.y + gq.y * yq.y, xq.z + gq.z * yq.z, xq.w + gq.w * yq.w);
    if constexpr (kPair) {
      // the same float operations, in the same order, as a second launch reading v back from x
      const size_t b = static_cast<size_t>(blockIdx.x / T), offset = static_cast<size_t>(blockIdx.x) * D;
      const float4 y2q = in_row ? load4(y2 + offset, q) : zero;
      const float4 g2q = in_row ? reinterpret_cast<const float4*>(gate2 + b * gate_stride)[q] : zero;
      v[j] =
          make_float4(v[j].x + g2q.x * y2q.x, v[j].y + g2q.y * y2q.y, v[j].z + g2q.z * y2q.z, v[j].w + g2q.w * y2q.w);
    }
  }
  if constexpr (kStoreX) {
#pragma unroll
    for (int j = 0; j < kVecPerThread; ++j)
      if (threadIdx.x + kVecThreads * j < quads) store4(xr, threadIdx.x + kVecThreads * j, v[j]);
  }
  vec4_layernorm_modulate(v, shifts, scales, reinterpret_cast<Out4<Out>*>(r.out), quads, inv_d, eps);
}

// Block form: one row per block of kRowThreads threads (D <= kBlockFormMaxD).
template <typename X, typename Y, typename Out>
static __global__ void __launch_bounds__(kRowThreads)
    residual_layernorm_block_kernel(X* __restrict__ x,               // [B, T, D]
                                    const Y* __restrict__ y,         // [B, T, D]
                                    const float* __restrict__ gate,  // [B, gate_stride]
                                    int gate_stride,
                                    const float* __restrict__ shift,        // [B, mod_stride]
                                    const float* __restrict__ scale,        // [B, mod_stride]
                                    int mod_stride, Out* __restrict__ out,  // [B, T, D]
                                    int T, int D, float inv_d, float eps) {
  __shared__ float scratch[32];
  const RowPointers<X, Y, Out> r =
      row_pointers(x, y, gate, gate_stride, shift, scale, mod_stride, out, blockIdx.x, T, D);
  X* xr = r.x;
  const Y* yr = r.y;
  const float *g = r.gate, *sh = r.shift, *sc = r.scale;
  Out* o = r.out;
  float v[kRowValues], shifts[kRowValues], scales[kRowValues];
#pragma unroll
  for (int j = 0; j < kRowValues; ++j) {
    const int d = threadIdx.x + kRowThreads * j;
    v[j] = d < D ? to_float(xr[d]) + g[d] * to_float(yr[d]) : 0.0f;
    shifts[j] = d < D ? sh[d] : 0.0f;
    scales[j] = d < D ? sc[d] : 0.0f;
  }
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < kRowValues; ++j) {
    const int d = threadIdx.x + kRowThreads * j;
    if (d < D) xr[d] = from_float<X>(v[j]);
    sum += v[j];  // zero beyond D
  }
  // inv_d = 1 / D and rsqrtf: no division subroutine, whose calls made the compiler spill a
  // register of the 27 held across them to a stack frame.
  const float mean = block_reduce<false>(sum, scratch) * inv_d;
  float squares = 0.0f;
#pragma unroll
  for (int j = 0; j < kRowValues; ++j) {
    const float centred = v[j] - mean;
    if (threadIdx.x + kRowThreads * j < D) squares += centred * centred;
  }
  const float variance = block_reduce<false>(squares, scratch) * inv_d;
  const float inv_std = rsqrtf(variance + eps);
#pragma unroll
  for (int j = 0; j < kRowValues; ++j) {
    const int d = threadIdx.x + kRowThreads * j;
    if (d < D) o[d] = from_float<Out>((v[j] - mean) * inv_std * (1.0f + scales[j]) + shifts[j]);
  }
}

// Warp-per-row form for rows longer than kBlockFormMaxD.
template <typename Y, typename Out>
static __global__ void residual_layernorm_modulate_kernel(float* __restrict__ x,           // [B, T, D]
                                                          const Y* __restrict__ y,         // [B, T, D]
                                                          const float* __restrict__ gate,  // [B, gate_stride]
                                                          int gate_stride,
                                                          const float* __restrict__ shift,        // [B, mod_stride]
                                                          const float* __restrict__ scale,        // [B, mod_stride]
                                                          int mod_stride, Out* __restrict__ out,  // [B, T, D]
                                                          int rows, int T, int D, float eps) {
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * kResidualLayerNormWarps + threadIdx.x / 32;
  if (row >= rows) return;  // whole warps leave together
  const RowPointers<float, Y, Out> r = row_pointers(x, y, gate, gate_stride, shift, scale, mod_stride, out, row, T, D);
  float* xr = r.x;
  const Y* yr = r.y;
  const float *g = r.gate, *sh = r.shift, *sc = r.scale;
  Out* o = r.out;
  float sum = 0.0f;
  for (int d = lane; d < D; d += 32) {
    const float updated = xr[d] + g[d] * to_float(yr[d]);
    xr[d] = updated;  // read back below by this same lane only
    sum += updated;
  }
  layernorm_modulate_row(xr, sum, sh, sc, o, D, eps, lane);
}

// ---------------------------------------------------------------------------------------------
// Launcher

template <typename X, typename Y, typename Out>
static void launch_residual_layernorm_modulate(X* x, const Y* y, const float* gate, int gate_stride, const float* shift,
                                               const float* scale, int mod_stride, Out* out, int B, int T, int D,
                                               float eps, cudaStream_t stream) {
  const int rows = B * T;
  const auto aligned16 = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const bool vec4 = D % 4 == 0 && D <= kVecFormMaxD && gate_stride % 4 == 0 && mod_stride % 4 == 0 &&
                    reinterpret_cast<uintptr_t>(x) % (4 * sizeof(X)) == 0 &&
                    reinterpret_cast<uintptr_t>(y) % (4 * sizeof(Y)) == 0 && aligned16(gate) && aligned16(shift) &&
                    aligned16(scale) && reinterpret_cast<uintptr_t>(out) % (4 * sizeof(Out)) == 0;
  if (vec4) {
    residual_layernorm_vec4_kernel<X, Y, Out><<<rows, kVecThreads, 0, stream>>>(
        x, y, gate, gate_stride, shift, scale, mod_stride, out, T, D, 1.0f / static_cast<float>(D), eps);
  } else if (D <= kBlockFormMaxD) {
    residual_layernorm_block_kernel<X, Y, Out><<<rows, kRowThreads, 0, stream>>>(
        x, y, gate, gate_stride, shift, scale, mod_stride, out, T, D, 1.0f / static_cast<float>(D), eps);
  } else if constexpr (std::is_same_v<X, float>) {
    const int blocks = (rows + kResidualLayerNormWarps - 1) / kResidualLayerNormWarps;
    residual_layernorm_modulate_kernel<Y, Out><<<blocks, kResidualLayerNormWarps * 32, 0, stream>>>(
        x, y, gate, gate_stride, shift, scale, mod_stride, out, rows, T, D, eps);
  } else {
    require(false, "dit::cuda::residual_layernorm_modulate",
            "a 16-bit residual stream needs D <= " + std::to_string(kBlockFormMaxD) + ", got " + std::to_string(D));
  }
  DIT_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// Public entry

void residual_layernorm_modulate(void* x, DeviceDtype x_dtype, const void* y, DeviceDtype y_dtype, const float* gate,
                                 int gate_stride, const float* shift, const float* scale, int mod_stride, void* out,
                                 DeviceDtype out_dtype, int B, int T, int D, float eps, cudaStream_t stream) {
  const char* op = "dit::cuda::residual_layernorm_modulate";
  require(B > 0 && T > 0 && D > 0, op, "non-positive size");
  require(static_cast<int64_t>(B) * T < (int64_t{1} << 31), op, "too many rows");
  require(gate_stride >= D && mod_stride >= D, op, "a modulation stride is smaller than D");
  require(eps > 0.0f, op, "eps must be positive");
  require_aligned(x, dtype_bytes(x_dtype), op, "x");
  require_aligned(y, dtype_bytes(y_dtype), op, "y");
  require_aligned(gate, alignof(float), op, "gate");
  require_aligned(shift, alignof(float), op, "shift");
  require_aligned(scale, alignof(float), op, "scale");
  require_aligned(out, dtype_bytes(out_dtype), op, "out");
  if (x_dtype != DeviceDtype::f32) {
    // A 16-bit stream comes with the branch and the output in its own type (the 16-bit paths).
    require(y_dtype == x_dtype && out_dtype == x_dtype, op, "a 16-bit residual stream needs y and out in its dtype");
    require(D <= kBlockFormMaxD, op, "a 16-bit residual stream needs D <= " + std::to_string(kBlockFormMaxD));
    dispatch_dtype(x_dtype, [&](auto tag) {
      using E = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<E, float>)
        launch_residual_layernorm_modulate(static_cast<E*>(x), static_cast<const E*>(y), gate, gate_stride, shift,
                                           scale, mod_stride, static_cast<E*>(out), B, T, D, eps, stream);
    });
    return;
  }
  dispatch_dtype(y_dtype, [&](auto y_tag) {
    using Y = typename decltype(y_tag)::type;
    dispatch_dtype(out_dtype, [&](auto tag) {
      using Out = typename decltype(tag)::type;
      launch_residual_layernorm_modulate(static_cast<float*>(x), static_cast<const Y*>(y), gate, gate_stride, shift,
                                         scale, mod_stride, static_cast<Out*>(out), B, T, D, eps, stream);
    });
  });
}

void residual_layernorm_modulate(float* x, const void* y, DeviceDtype y_dtype, const float* gate, int gate_stride,
                                 const float* shift, const float* scale, int mod_stride, void* out,
                                 DeviceDtype out_dtype, int B, int T, int D, float eps, cudaStream_t stream) {
  residual_layernorm_modulate(static_cast<void*>(x), DeviceDtype::f32, y, y_dtype, gate, gate_stride, shift, scale,
                              mod_stride, out, out_dtype, B, T, D, eps, stream);
}

bool residual_layernorm_pair_supported(int D) { return D > 0 && D % 4 == 0 && D <= kVecFormMaxD; }

void residual_layernorm_modulate_pair(void* x, DeviceDtype x_dtype, bool store_x, const void* y, const float* gate,
                                      const void* y2, const float* gate2, int gate_stride, DeviceDtype y_dtype,
                                      const float* shift, const float* scale, int mod_stride, void* out,
                                      DeviceDtype out_dtype, int B, int T, int D, float eps, cudaStream_t stream) {
  const char* op = "dit::cuda::residual_layernorm_modulate_pair";
  require(B > 0 && T > 0 && residual_layernorm_pair_supported(D), op, "D must be a positive multiple of 4 up to 1152");
  require(static_cast<int64_t>(B) * T < (int64_t{1} << 31), op, "too many rows");
  require(gate_stride >= D && mod_stride >= D && gate_stride % 4 == 0 && mod_stride % 4 == 0, op,
          "a modulation stride is smaller than D or not a multiple of 4");
  require(eps > 0.0f, op, "eps must be positive");
  require(store_x || y2 == nullptr, op, "a pair's update must be stored");
  require(y2 == nullptr || gate2 != nullptr, op, "y2 without gate2");
  require(x_dtype == DeviceDtype::f32 || (y_dtype == x_dtype && out_dtype == x_dtype), op,
          "a 16-bit residual stream needs y and out in its dtype");
  const size_t y_align = 4 * dtype_bytes(y_dtype), out_align = 4 * dtype_bytes(out_dtype);
  require_aligned(x, 4 * dtype_bytes(x_dtype), op, "x");
  require_aligned(y, y_align, op, "y");
  if (y2) require_aligned(y2, y_align, op, "y2");
  require_aligned(gate, 16, op, "gate");
  if (gate2) require_aligned(gate2, 16, op, "gate2");
  require_aligned(shift, 16, op, "shift");
  require_aligned(scale, 16, op, "scale");
  require_aligned(out, out_align, op, "out");
  const int rows = B * T;
  const float inv_d = 1.0f / static_cast<float>(D);
  const auto launch = [&](auto* xt, auto* yt, auto* o) {
    using X = std::remove_pointer_t<decltype(xt)>;
    using Y = std::remove_const_t<std::remove_pointer_t<decltype(yt)>>;
    using Out = std::remove_pointer_t<decltype(o)>;
    if (y2)
      residual_layernorm_vec4_kernel<X, Y, Out, true, true><<<rows, kVecThreads, 0, stream>>>(
          xt, yt, gate, gate_stride, shift, scale, mod_stride, o, T, D, inv_d, eps, static_cast<const Y*>(y2), gate2);
    else if (store_x)
      residual_layernorm_vec4_kernel<X, Y, Out, false, true>
          <<<rows, kVecThreads, 0, stream>>>(xt, yt, gate, gate_stride, shift, scale, mod_stride, o, T, D, inv_d, eps);
    else
      residual_layernorm_vec4_kernel<X, Y, Out, false, false>
          <<<rows, kVecThreads, 0, stream>>>(xt, yt, gate, gate_stride, shift, scale, mod_stride, o, T, D, inv_d, eps);
  };
  if (x_dtype != DeviceDtype::f32) {
    dispatch_dtype(x_dtype, [&](auto tag) {
      using E = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<E, float>)
        launch(static_cast<E*>(x), static_cast<const E*>(y), static_cast<E*>(out));
    });
  } else {
    dispatch_dtype(y_dtype, [&](auto y_tag) {
      using Y = typename decltype(y_tag)::type;
      dispatch_dtype(out_dtype, [&](auto tag) {
        using Out = typename decltype(tag)::type;
        launch(static_cast<float*>(x), static_cast<const Y*>(y), static_cast<Out*>(out));
      });
    });
  }
  DIT_LAUNCH_CHECK();
}

}  // namespace dit::cuda
