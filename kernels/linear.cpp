// CPU reference of the linear layer (kernels/linear.h). The weight is packed into panels of
// kPanelWidth output columns converted to float64, laid out [K, kPanelWidth], so the inner loop
// is a broadcast multiply-add over contiguous doubles that vectorises; every output element is
// one float64 dot product in the order k = 0, 1, ..., K - 1, rounded once to float32.
#include "kernels/linear.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace dit::cpu {
namespace {

constexpr int kPanelWidth = 8;   // output columns per packed weight panel
constexpr int kRowTile = 4;      // input rows per register tile (4 x 8 float64 accumulators)
constexpr int kRowChunk = 128;   // input rows per parallel task; packing costs 1/kRowChunk

template <int Rows>
[[gnu::always_inline]] inline void row_tile(const float* in, int K, const double* panel,
                                            const float* bias, float* out, int N, int width) {
  double acc[Rows][kPanelWidth] = {};
  for (int k = 0; k < K; ++k) {
    const double* w = panel + static_cast<int64_t>(k) * kPanelWidth;
    for (int i = 0; i < Rows; ++i) {
      const double a = in[static_cast<int64_t>(i) * K + k];
      for (int j = 0; j < kPanelWidth; ++j) acc[i][j] += a * w[j];
    }
  }
  for (int i = 0; i < Rows; ++i)
    for (int j = 0; j < width; ++j)
      out[static_cast<int64_t>(i) * N + j] =
          static_cast<float>(acc[i][j] + (bias ? static_cast<double>(bias[j]) : 0.0));
}

// Rows [0, rows) of `in` times one packed panel. AVX2 without FMA where the CPU has it: wider
// vectors, the same roundings (no contraction), so results do not depend on the machine.
[[gnu::target_clones("avx2", "default")]]
void panel_product(const float* in, int rows, int K, const double* panel, const float* bias,
                   float* out, int N, int width) {
  int m = 0;
  for (; m + kRowTile <= rows; m += kRowTile)
    row_tile<kRowTile>(in + static_cast<int64_t>(m) * K, K, panel, bias,
                       out + static_cast<int64_t>(m) * N, N, width);
  const float* in_rest = in + static_cast<int64_t>(m) * K;
  float* out_rest = out + static_cast<int64_t>(m) * N;
  switch (rows - m) {
    case 3: row_tile<3>(in_rest, K, panel, bias, out_rest, N, width); break;
    case 2: row_tile<2>(in_rest, K, panel, bias, out_rest, N, width); break;
    case 1: row_tile<1>(in_rest, K, panel, bias, out_rest, N, width); break;
    default: break;
  }
}

}  // namespace

void linear(const float* in, const float* weight, const float* bias, float* out, int M, int N,
            int K) {
  const int panels = (N + kPanelWidth - 1) / kPanelWidth;
  const int chunks = (M + kRowChunk - 1) / kRowChunk;
  const int64_t tasks = static_cast<int64_t>(panels) * chunks;
#pragma omp parallel if (static_cast<int64_t>(M) * N * K > (1 << 16))
  {
    std::vector<double> panel(static_cast<size_t>(K) * kPanelWidth);
#pragma omp for schedule(static)
    for (int64_t task = 0; task < tasks; ++task) {
      const int n0 = static_cast<int>(task / chunks) * kPanelWidth;
      const int m0 = static_cast<int>(task % chunks) * kRowChunk;
      const int width = std::min(kPanelWidth, N - n0);
      for (int k = 0; k < K; ++k)
        for (int j = 0; j < kPanelWidth; ++j)
          panel[static_cast<size_t>(k) * kPanelWidth + j] =
              j < width ? weight[static_cast<int64_t>(n0 + j) * K + k] : 0.0;
      panel_product(in + static_cast<int64_t>(m0) * K, std::min(kRowChunk, M - m0), K,
                    panel.data(), bias ? bias + n0 : nullptr, out + static_cast<int64_t>(m0) * N + n0,
                    N, width);
    }
  }
}

}  // namespace dit::cpu
