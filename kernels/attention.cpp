// CPU reference of the attention core (kernels/attention.h): scores, softmax and the weighted
// sum of values all in float64, one query at a time. A task is (batch, head, block of queries);
// the head's keys are packed transposed [hd, T] and its values [T, hd] in float64, so both inner
// loops run over contiguous doubles.
#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace dit::cpu {
namespace {

constexpr int kQueryBlock = 64;  // queries per parallel task; the head's K and V are packed once per task

// One head: keys_t [hd, T] and values [T, hd] in float64; queries [rows] of the qkv layout.
[[gnu::target_clones("avx2", "default")]] void attend_block(const float* qkv, int64_t token_stride, int first,
                                                            int count, int T, int hd, double scale,
                                                            const double* keys_t, const double* values, double* scores,
                                                            double* query, double* sum, float* out,
                                                            int64_t out_stride) {
  for (int i = first; i < first + count; ++i) {
    const float* q = qkv + i * token_stride;
    for (int d = 0; d < hd; ++d) query[d] = q[d] * scale;
    for (int j = 0; j < T; ++j) scores[j] = 0.0;
    for (int d = 0; d < hd; ++d) {
      const double qd = query[d];
      const double* k = keys_t + static_cast<int64_t>(d) * T;
      for (int j = 0; j < T; ++j) scores[j] += qd * k[j];
    }
    double max_score = -INFINITY;
    for (int j = 0; j < T; ++j) max_score = std::max(max_score, scores[j]);
    double denominator = 0.0;
    for (int j = 0; j < T; ++j) {
      scores[j] = std::exp(scores[j] - max_score);  // shifted by the max: no overflow
      denominator += scores[j];
    }
    for (int d = 0; d < hd; ++d) sum[d] = 0.0;
    for (int j = 0; j < T; ++j) {
      const double p = scores[j];
      const double* v = values + static_cast<int64_t>(j) * hd;
      for (int d = 0; d < hd; ++d) sum[d] += p * v[d];
    }
    float* o = out + i * out_stride;
    for (int d = 0; d < hd; ++d) o[d] = static_cast<float>(sum[d] / denominator);
  }
}

}  // namespace

void attention(const float* qkv, float* out, int B, int T, int H, int hd) {
  const int64_t token_stride = 3LL * H * hd;  // qkv row: [3, H, hd]
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  const int blocks = (T + kQueryBlock - 1) / kQueryBlock;
#pragma omp parallel
  {
    std::vector<double> keys_t(static_cast<size_t>(T) * hd), values(static_cast<size_t>(T) * hd), scores(T), query(hd),
        sum(hd);
    int64_t packed_head = -1;
#pragma omp for collapse(3) schedule(static)
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < H; ++h)
        for (int block = 0; block < blocks; ++block) {
          const float* base = qkv + static_cast<int64_t>(b) * T * token_stride + static_cast<int64_t>(h) * hd;
          if (packed_head != static_cast<int64_t>(b) * H + h) {
            packed_head = static_cast<int64_t>(b) * H + h;
            for (int j = 0; j < T; ++j) {
              const float* k = base + j * token_stride + static_cast<int64_t>(H) * hd;
              const float* v = base + j * token_stride + 2LL * H * hd;
              for (int d = 0; d < hd; ++d) {
                keys_t[static_cast<int64_t>(d) * T + j] = k[d];
                values[static_cast<int64_t>(j) * hd + d] = v[d];
              }
            }
          }
          const int first = block * kQueryBlock;
          attend_block(base, token_stride, first, std::min(kQueryBlock, T - first), T, hd, scale, keys_t.data(),
                       values.data(), scores.data(), query.data(), sum.data(),
                       out + static_cast<int64_t>(b) * T * H * hd + static_cast<int64_t>(h) * hd,
                       static_cast<int64_t>(H) * hd);
        }
  }
}

}  // namespace dit::cpu
