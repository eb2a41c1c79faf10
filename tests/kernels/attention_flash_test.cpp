// The tensor-core attention variant (kernels/attention_flash.h; CUDA only): every form and the
// default dispatch against the CPU reference of kernels/attention.h and against the naive kernel,
// the forms bit-identical to each other; the shapes it refuses and the choice of form.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/kernels/harness.h"

#if DIT_CUDA_CASES
#include "kernels/attention.h"
#include "kernels/attention_flash.h"
#endif

namespace dit {
namespace {

using std::vector;
using test::expect_close;

#if DIT_CUDA_CASES

using cuda::DeviceDtype;
using test::DeviceTensor;

using test::AttentionCase;

// --- attention (flash, tensor cores) ------------------------------------------------------------

class CudaAttentionFlash : public testing::TestWithParam<AttentionCase> {};

// Every form and the default dispatch, against the CPU reference (per-dtype bound) and against
// the naive kernel on the same device inputs (P is rounded to the dtype before P V, so the two
// differ by about one such rounding); the forms differ only in how rows are grouped into warps,
// so their outputs must be bit-identical.
TEST_P(CudaAttentionFlash, matches_reference_and_naive_kernel) {
  const AttentionCase k = GetParam();
  ASSERT_TRUE(cuda::attention_flash_supported(k.dtype, k.hd));
  const uint64_t seed = test::fresh_seed();
  const test::AttentionRun run = test::run_naive_attention(k, seed);
  ASSERT_EQ(run.naive_unwritten, 0u);
  const vector<float>& ref = run.reference;
  const vector<float>& naive = run.naive;
  DeviceTensor dqkv(run.qkv, k.dtype);

  const vector<cuda::FlashForm> forms = cuda::attention_flash_forms();
  ASSERT_EQ(forms.size(), 2u);
  vector<float> first_form;
  for (int f = -1; f < static_cast<int>(forms.size()); ++f) {  // -1: the default dispatch
    const std::string form = f < 0 ? "default" : cuda::flash_form_name(forms[f]);
    SCOPED_TRACE(form);
    DeviceTensor dflash(ref.size(), k.dtype);
    dflash.poison();
    if (f < 0)
      cuda::attention_flash(dqkv.data(), dflash.data(), k.dtype, k.B, k.N, k.H, k.hd, nullptr);
    else
      cuda::attention_flash(dqkv.data(), dflash.data(), k.dtype, k.B, k.N, k.H, k.hd, forms[f], nullptr);
    size_t unwritten = 0;
    const vector<float> flash = dflash.download(&unwritten);
    const std::string name = k.name() + "/" + form;
    expect_close("attention_flash/" + name, flash, unwritten, test::to_double(ref), test::output_bound(k.dtype), seed);
    expect_close("attention_flash_vs_naive/" + name, flash, 0, test::to_double(naive), test::output_bound(k.dtype),
                 seed);
    if (f == 0) first_form = flash;
    if (f > 0) {
      size_t differing = 0;
      for (size_t i = 0; i < flash.size(); ++i) differing += flash[i] != first_form[i];
      EXPECT_EQ(differing, 0u) << "outputs of " << form << " differing from " << cuda::flash_form_name(forms[0]);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    attention_flash, CudaAttentionFlash,
    testing::Values(AttentionCase{2, 16, 256, 72, DeviceDtype::f16}, AttentionCase{2, 16, 256, 72, DeviceDtype::bf16},
                    AttentionCase{2, 16, 1024, 72, DeviceDtype::f16}, AttentionCase{2, 12, 256, 64, DeviceDtype::f16},
                    AttentionCase{2, 12, 256, 64, DeviceDtype::bf16}, AttentionCase{1, 2, 100, 72, DeviceDtype::f16},
                    AttentionCase{1, 3, 17, 64, DeviceDtype::bf16}, AttentionCase{3, 1, 1, 72, DeviceDtype::f16},
                    AttentionCase{1, 2, 130, 64, DeviceDtype::f16}, AttentionCase{2, 3, 200, 72, DeviceDtype::f16},
                    AttentionCase{1, 2, 65, 72, DeviceDtype::bf16}),
    [](const auto& info) { return info.param.name(); });

TEST(CudaAttentionFlashChecks, rejects_unsupported_shapes) {
  DeviceTensor qkv(3 * 16 * 2 * 40, DeviceDtype::f16), out(16 * 2 * 40, DeviceDtype::f16);
  EXPECT_FALSE(cuda::attention_flash_supported(DeviceDtype::f32, 72));
  EXPECT_FALSE(cuda::attention_flash_supported(DeviceDtype::f16, 40));
  EXPECT_THROW(cuda::attention_flash(qkv.data(), out.data(), DeviceDtype::f16, 1, 16, 2, 40, nullptr), Error);
}

TEST(CudaAttentionFlashChecks, forms_and_their_choice) {
  std::string names;
  for (const cuda::FlashForm& form : cuda::attention_flash_forms()) names += cuda::flash_form_name(form) + " ";
  EXPECT_EQ(names, "rows64 rows128 ");
  int device = 0, sms = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), cudaSuccess);
  // Two row tiles once their 128-row blocks fill every SM, one below that.
  EXPECT_EQ(cuda::attention_flash_default_form(1, 256, 1).row_tiles, 1);
  EXPECT_EQ(cuda::attention_flash_default_form(sms, 128, 1).row_tiles, 2);
  EXPECT_EQ(cuda::attention_flash_default_form(sms - 1, 128, 1).row_tiles, 1);
  EXPECT_EQ(cuda::attention_flash_default_form(1, 128 * sms, 1).row_tiles, 2);
  EXPECT_EQ(cuda::attention_flash_default_form(64, 256, 16).row_tiles, 2);
  DeviceTensor qkv(3 * 100 * 72, DeviceDtype::f16), out(100 * 72, DeviceDtype::f16);
  EXPECT_THROW(cuda::attention_flash(qkv.data(), out.data(), DeviceDtype::f16, 1, 100, 1, 72, {3}, nullptr), Error);
  EXPECT_THROW(cuda::attention_flash(qkv.data(), out.data(), DeviceDtype::f16, 1, 100, 1, 72, {0}, nullptr), Error);
}

#endif  // DIT_CUDA_CASES

}  // namespace
}  // namespace dit
