// The class-label lookup c = t_emb + table[y] (kernels/class_embed.h; CUDA only: the CPU backend
// does the lookup inline, so the case holds its own host reference).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/kernels/harness.h"

#if DIT_CUDA_CASES
#include "kernels/class_embed.h"
#endif

namespace dit {
namespace {

using std::vector;
using test::expect_close;

#if DIT_CUDA_CASES

using cuda::DeviceDtype;
using test::DeviceTensor;

TEST(class_embed, adds_the_label_row) {
  const uint64_t seed = test::fresh_seed();
  const int B = 5, D = 1152, rows = 1001;
  const vector<int64_t> labels = {0, 7, 1000, 999, 3};
  const vector<float> t_emb = test::random_normal(static_cast<size_t>(B) * D, seed);
  const vector<float> table = test::random_normal(static_cast<size_t>(rows) * D, seed + 1);
  vector<double> ref(t_emb.size());
  for (int b = 0; b < B; ++b)
    for (int d = 0; d < D; ++d)
      ref[static_cast<size_t>(b) * D + d] =
          static_cast<float>(t_emb[static_cast<size_t>(b) * D + d] + table[static_cast<size_t>(labels[b]) * D + d]);
  DeviceTensor dt(t_emb), dtable(table), dc(t_emb.size());
  test::DeviceArray<int64_t> dlabels(labels);
  test::DeviceArray<int> bad(vector<int>{0});
  dc.poison();
  cuda::class_embed_add(dt.f32(), dtable.f32(), dlabels.data(), dc.f32(), B, D, rows, bad.data(), nullptr);
  size_t unwritten = 0;
  const vector<float> out = dc.download(&unwritten);
  expect_close("class_embed/b5_d1152", out, unwritten, ref, 0.0, seed);
  int bad_labels = -1;
  DIT_CUDA_CHECK(cudaMemcpy(&bad_labels, bad.data(), sizeof bad_labels, cudaMemcpyDeviceToHost));
  EXPECT_EQ(bad_labels, 0);
}

#endif  // DIT_CUDA_CASES

}  // namespace
}  // namespace dit
