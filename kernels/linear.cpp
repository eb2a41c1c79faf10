// CPU reference of the linear layer (kernels/linear.h). Each parallel task takes a chunk of input
// rows and a block of output columns: the rows are packed once as float64 [tile][K][4], each
// 8-column weight panel as float64 [K][8], so the inner loop is 4 x 8 independent multiply-adds
// on contiguous doubles that vectorise. Every output is one float64 dot product in the order
// k = 0 .. K-1, rounded once to float32, whatever the tiling or thread count.
#include "kernels/linear.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace dit::cpu {
namespace {

constexpr int kPanelWidth = 8;     // output columns per packed weight panel
constexpr int kRowTile = 4;        // rows per register tile: 4 x 8 float64 accumulators
constexpr int kRowChunk = 64;      // rows per task; a 6-row tile spilled registers and was slower
constexpr int kColumnBlock = 128;  // columns per task; weight packing costs 1 / kRowChunk

template <int Rows>
[[gnu::always_inline]] inline void row_tile(const double* a_packed, int K, const double* panel, const float* bias,
                                            float* out, int N, int width) {
  double acc[Rows][kPanelWidth] = {};
  for (int k = 0; k < K; ++k) {
    const double* w = panel + static_cast<int64_t>(k) * kPanelWidth;
    const double* a = a_packed + static_cast<int64_t>(k) * kRowTile;
    for (int i = 0; i < Rows; ++i)
      for (int j = 0; j < kPanelWidth; ++j) acc[i][j] += a[i] * w[j];
  }
  for (int i = 0; i < Rows; ++i)
    for (int j = 0; j < width; ++j)
      out[static_cast<int64_t>(i) * N + j] =
          static_cast<float>(acc[i][j] + (bias ? static_cast<double>(bias[j]) : 0.0));
}

// AVX2 without FMA where the CPU has it: wider vectors, the same roundings (no contraction), so
// results do not depend on the machine.
[[gnu::target_clones("avx2", "default")]] void panel_product(const double* a_packed, int rows, int K,
                                                             const double* panel, const float* bias, float* out, int N,
                                                             int width) {
  for (int m = 0; m < rows; m += kRowTile) {
    const double* a = a_packed + static_cast<int64_t>(m) * K;
    float* o = out + static_cast<int64_t>(m) * N;
    switch (std::min(kRowTile, rows - m)) {
      case 4: row_tile<4>(a, K, panel, bias, o, N, width); break;
      case 3: row_tile<3>(a, K, panel, bias, o, N, width); break;
      case 2: row_tile<2>(a, K, panel, bias, o, N, width); break;
      default: row_tile<1>(a, K, panel, bias, o, N, width); break;
    }
  }
}

}  // namespace

void linear(const float* in, const float* weight, const float* bias, float* out, int M, int N, int K) {
  const int chunks = (M + kRowChunk - 1) / kRowChunk;
  const int blocks = (N + kColumnBlock - 1) / kColumnBlock;
  const int64_t tasks = static_cast<int64_t>(chunks) * blocks;
#pragma omp parallel if (static_cast <int64_t>(M) * N * K > (1 << 18))
  {
    std::vector<double> a_packed(static_cast<size_t>(kRowChunk) * K);
    std::vector<double> panel(static_cast<size_t>(K) * kPanelWidth);
#pragma omp for schedule(static)
    for (int64_t task = 0; task < tasks; ++task) {
      const int m0 = static_cast<int>(task / blocks) * kRowChunk;
      const int n_begin = static_cast<int>(task % blocks) * kColumnBlock;
      const int rows = std::min(kRowChunk, M - m0);
      // [tile][k][row in tile], zero rows past the end
      for (int m = 0; m < rows; m += kRowTile)
        for (int k = 0; k < K; ++k)
          for (int i = 0; i < kRowTile; ++i)
            a_packed[static_cast<size_t>(m) * K + static_cast<size_t>(k) * kRowTile + i] =
                m + i < rows ? in[static_cast<int64_t>(m0 + m + i) * K + k] : 0.0;
      const int n_end = std::min(N, n_begin + kColumnBlock);
      for (int n0 = n_begin; n0 < n_end; n0 += kPanelWidth) {
        const int width = std::min(kPanelWidth, N - n0);
        for (int k = 0; k < K; ++k)
          for (int j = 0; j < kPanelWidth; ++j)
            panel[static_cast<size_t>(k) * kPanelWidth + j] =
                j < width ? weight[static_cast<int64_t>(n0 + j) * K + k] : 0.0;
        panel_product(a_packed.data(), rows, K, panel.data(), bias ? bias + n0 : nullptr,
                      out + static_cast<int64_t>(m0) * N + n0, N, width);
      }
    }
  }
}

}  // namespace dit::cpu
