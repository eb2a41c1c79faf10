// CPU reference of the attention core (kernels/attention.h): scores, softmax and the weighted
// sum of values all in float64, one query row at a time; parallel over (batch, head, query).
#include "kernels/attention.h"

#include <cmath>
#include <cstdint>
#include <vector>

namespace dit::cpu {

void attention(const float* qkv, float* out, int B, int T, int H, int hd) {
  const int64_t token_stride = 3LL * H * hd;  // qkv row: [3, H, hd]
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
#pragma omp parallel
  {
    std::vector<double> scores(T), query(hd), sum(hd);
#pragma omp for collapse(3) schedule(static)
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < H; ++h)
        for (int i = 0; i < T; ++i) {
          const float* base = qkv + static_cast<int64_t>(b) * T * token_stride + static_cast<int64_t>(h) * hd;
          const float* q = base + i * token_stride;
          for (int d = 0; d < hd; ++d) query[d] = q[d];
          double max_score = -INFINITY;
          for (int j = 0; j < T; ++j) {
            const float* k = base + j * token_stride + static_cast<int64_t>(H) * hd;
            double dot = 0.0;
#pragma omp simd reduction(+ : dot)
            for (int d = 0; d < hd; ++d) dot += query[d] * static_cast<double>(k[d]);
            scores[j] = dot * scale;
            max_score = std::max(max_score, scores[j]);
          }
          double denominator = 0.0;
          for (int j = 0; j < T; ++j) {
            scores[j] = std::exp(scores[j] - max_score);  // shifted by the max: no overflow
            denominator += scores[j];
          }
          for (int d = 0; d < hd; ++d) sum[d] = 0.0;
          for (int j = 0; j < T; ++j) {
            const float* v = base + j * token_stride + 2LL * H * hd;
            const double p = scores[j];
#pragma omp simd
            for (int d = 0; d < hd; ++d) sum[d] += p * static_cast<double>(v[d]);
          }
          float* o = out + (static_cast<int64_t>(b) * T + i) * H * hd + static_cast<int64_t>(h) * hd;
          for (int d = 0; d < hd; ++d) o[d] = static_cast<float>(sum[d] / denominator);
        }
  }
}

}  // namespace dit::cpu
