// The DDPM and DDIM updates (kernels/sampler_step.h). CPU cases: the reference against the float64
// schedule and an independent DDIM formulation. CUDA cases: the step kernels against the reference,
// and the sampling loop's table-driven step (loop_step) against the kernels it replaces and the CPU
// reference of the same sequence.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/sampler_step.h"
#include "model/sampler.h"
#include "model/schedule.h"
#include "tests/kernels/harness.h"

#if DIT_CUDA_CASES
#include "kernels/guidance.h"
#include "kernels/noise.h"
#endif

namespace dit {
namespace {

using std::vector;
using test::expect_close;

#if DIT_CPU_CASES

constexpr double kStepBound = 1e-5;  // float32 element arithmetic with cancellation at high t

// Inputs of a sampler step: x, model output (eps then v in [-1, 1]) and noise.
struct StepInputs {
  vector<float> x, model_out, noise;
};
StepInputs step_inputs(int N, int C, int HW, uint64_t seed) {
  StepInputs in{test::random_normal(size_t(N) * C * HW, seed), test::random_normal(size_t(N) * 2 * C * HW, seed + 1),
                test::random_normal(size_t(N) * C * HW, seed + 2)};
  const vector<float> v = test::random_uniform(size_t(N) * C * HW, seed + 3);
  for (int n = 0; n < N; ++n)
    for (int i = 0; i < C * HW; ++i) in.model_out[(size_t(n) * 2 + 1) * C * HW + i] = v[size_t(n) * C * HW + i];
  return in;
}

struct CpuStepCase {
  int N, C, HW, steps, index;
  int eta_tenths = 0;  // DDIM only
  std::string name() const {
    return test::dims_name({{"n", N}, {"c", C}, {"hw", HW}, {"steps", steps}, {"index", index}});
  }
};

class CpuDdpmStep : public testing::TestWithParam<CpuStepCase> {};

TEST_P(CpuDdpmStep, matches_float64_schedule) {
  const auto [N, C, HW, steps, index, eta_tenths] = GetParam();
  const uint64_t seed = test::fresh_seed();
  StepInputs in = step_inputs(N, C, HW, seed);
  const DiffusionSchedule s = make_schedule(steps);
  const StepCoefficients k = step_coefficients(s, index);
  vector<double> ref(in.x.size());
  for (int n = 0; n < N; ++n)
    for (int i = 0; i < C * HW; ++i) {
      const size_t e = size_t(n) * C * HW + i;
      const double x = in.x[e], eps = in.model_out[size_t(n) * 2 * C * HW + i],
                   v = in.model_out[(size_t(n) * 2 + 1) * C * HW + i];
      // The float64 schedule, not the float32 coefficients: also bounds their rounding.
      const double x0 = s.sqrt_recip_alphas_cumprod[index] * x - s.sqrt_recipm1_alphas_cumprod[index] * eps;
      const double mean = s.posterior_mean_coef1[index] * x0 + s.posterior_mean_coef2[index] * x;
      const double f = (v + 1) / 2;
      const double log_var = f * std::log(s.betas[index]) + (1 - f) * s.posterior_log_variance_clipped[index];
      ref[e] = index == 0 ? mean : mean + std::exp(0.5 * log_var) * in.noise[e];
    }
  cpu::ddpm_step(in.x.data(), in.model_out.data(), in.noise.data(), N, C, HW, k);
  expect_close("ddpm_step/" + GetParam().name(), in.x, test::count_poisoned(in.x), ref, kStepBound, seed);
}

INSTANTIATE_TEST_SUITE_P(ddpm_step, CpuDdpmStep,
                         testing::Values(CpuStepCase{4, 4, 64, 250, 249}, CpuStepCase{4, 4, 64, 250, 100},
                                         CpuStepCase{4, 4, 64, 250, 0}, CpuStepCase{4, 4, 64, 10, 5}),
                         [](const auto& info) { return info.param.name(); });

class CpuDdimStep : public testing::TestWithParam<CpuStepCase> {};

// DDIM against an independent formulation: x0 from sqrt(alpha_bar), not the recip coefficients.
TEST_P(CpuDdimStep, matches_independent_formulation) {
  const auto [N, C, HW, steps, index, eta_tenths] = GetParam();
  const float eta = eta_tenths / 10.0f;
  const uint64_t seed = test::fresh_seed();
  StepInputs in = step_inputs(N, C, HW, seed);
  const DiffusionSchedule s = make_schedule(steps);
  const StepCoefficients k = step_coefficients(s, index);
  const double ac = s.alphas_cumprod[index], ac_prev = s.alphas_cumprod_prev[index];
  const double sigma = eta * std::sqrt((1 - ac_prev) / (1 - ac) * (1 - ac / ac_prev));
  vector<double> ref(in.x.size());
  for (int n = 0; n < N; ++n)
    for (int i = 0; i < C * HW; ++i) {
      const size_t e = size_t(n) * C * HW + i;
      const double x = in.x[e], eps = in.model_out[size_t(n) * 2 * C * HW + i];
      const double x0 = (x - std::sqrt(1 - ac) * eps) / std::sqrt(ac);
      const double direction = std::sqrt(1 - ac_prev - sigma * sigma) * eps;
      ref[e] = std::sqrt(ac_prev) * x0 + direction + (index == 0 ? 0.0 : sigma * in.noise[e]);
    }
  cpu::ddim_step(in.x.data(), in.model_out.data(), in.noise.data(), N, C, HW, k, eta);
  expect_close("ddim_step/" + GetParam().name(), in.x, test::count_poisoned(in.x), ref, kStepBound, seed);
}

INSTANTIATE_TEST_SUITE_P(ddim_step, CpuDdimStep,
                         testing::Values(CpuStepCase{4, 4, 64, 50, 49, 0}, CpuStepCase{4, 4, 64, 50, 20, 5},
                                         CpuStepCase{4, 4, 64, 50, 1, 10}, CpuStepCase{4, 4, 64, 50, 0, 10},
                                         CpuStepCase{4, 4, 64, 10, 7, 3}),
                         [](const auto& info) {
                           return info.param.name() + "_eta_tenths" + std::to_string(info.param.eta_tenths);
                         });

#endif  // DIT_CPU_CASES

#if DIT_CUDA_CASES

using cuda::DeviceDtype;
using test::DeviceTensor;

// --- sampler steps ------------------------------------------------------------------------------

struct StepCase {
  bool ddim;
  int index;  // respaced index of a 250-step schedule; 0 is the last step
  float eta;
  std::string name() const {
    return std::string(ddim ? "ddim" : "ddpm") + "_index" + std::to_string(index) + "_eta" +
           std::to_string(static_cast<int>(eta * 10));
  }
};

class CudaSamplerStep : public testing::TestWithParam<StepCase> {};

TEST_P(CudaSamplerStep, matches_reference) {
  const StepCase k = GetParam();
  const uint64_t seed = test::fresh_seed();
  const int N = 4, C = 4, HW = 32 * 32;
  const StepCoefficients coefficients = step_coefficients(make_schedule(250), k.index);
  const vector<float> x = test::random_normal(static_cast<size_t>(N) * C * HW, seed);
  vector<float> model_out = test::random_normal(static_cast<size_t>(N) * 2 * C * HW, seed + 1);
  for (int n = 0; n < N; ++n)  // v in [-1, 1], as the learned-range variance expects
    for (size_t i = 0; i < static_cast<size_t>(C) * HW; ++i) {
      float& v = model_out[(static_cast<size_t>(n) * 2 * C + C) * HW + i];
      v = std::tanh(v);
    }
  const vector<float> noise = test::random_normal(x.size(), seed + 2);
  vector<float> ref = x;
  if (k.ddim)
    cpu::ddim_step(ref.data(), model_out.data(), noise.data(), N, C, HW, coefficients, k.eta);
  else
    cpu::ddpm_step(ref.data(), model_out.data(), noise.data(), N, C, HW, coefficients);
  DeviceTensor dx(x), dmodel(model_out), dnoise(noise);
  if (k.ddim)
    cuda::ddim_step(dx.f32(), dmodel.f32(), dnoise.f32(), N, C, HW, coefficients, k.eta, nullptr);
  else
    cuda::ddpm_step(dx.f32(), dmodel.f32(), dnoise.f32(), N, C, HW, coefficients, nullptr);
  expect_close("sampler_step/" + k.name(), dx.download(), 0, test::to_double(ref), test::kElementwiseF32Bound, seed);
}

INSTANTIATE_TEST_SUITE_P(sampler_step, CudaSamplerStep,
                         testing::Values(StepCase{false, 249, 0}, StepCase{false, 120, 0}, StepCase{false, 0, 0},
                                         StepCase{true, 249, 0}, StepCase{true, 120, 0.5f}, StepCase{true, 0, 1.0f},
                                         StepCase{true, 3, 1.0f}),
                         [](const auto& info) { return info.param.name(); });

// --- loop_step: one table-driven step of the sampling loop ---------------------------------------
// Two consecutive launches on a two-entry table against the kernels it replaces, run in
// sequence on the device (equal bits expected: the same device arithmetic), and against the
// CPU reference of the same sequence; the token-layout cases give loop_step the model output
// before unpatchify and the kernels it replaces the same values after it.

struct LoopStepCase {
  bool ddim, guided;
  int images, C, HW;  // C * HW % 4 != 0 exercises a partial Philox group
  int index;          // respaced index of the first entry in a 250-step schedule; the second is index - 1
  float eta;
  int patch = 0;  // > 0: loop_step reads the model output in token layout (HW a square)
  std::string name() const {
    return std::string(ddim ? "ddim" : "ddpm") + (guided ? "_cfg" : "") + "_n" + std::to_string(images) + "_c" +
           std::to_string(C) + "_hw" + std::to_string(HW) + "_index" + std::to_string(index) + "_eta" +
           std::to_string(static_cast<int>(eta * 10)) + (patch > 0 ? "_tokens_p" + std::to_string(patch) : "");
  }
};

// [rows, C, S, S] -> [rows, (S/p)^2, p, p, C]: the inverse of unpatchify, on the host.
vector<float> patchify(const vector<float>& image, int rows, int C, int S, int p) {
  vector<float> tokens(image.size());
  const int g = S / p;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < C; ++c)
      for (int y = 0; y < S; ++y)
        for (int x = 0; x < S; ++x) {
          const size_t token = static_cast<size_t>(r) * g * g + static_cast<size_t>(y / p) * g + x / p;
          tokens[((token * p + y % p) * p + x % p) * C + c] = image[((static_cast<size_t>(r) * C + c) * S + y) * S + x];
        }
  return tokens;
}

class CudaLoopStep : public testing::TestWithParam<LoopStepCase> {};

TEST_P(CudaLoopStep, equals_the_kernels_it_replaces) {
  const LoopStepCase k = GetParam();
  const uint64_t seed = test::fresh_seed();
  const int N = k.images, rows = k.guided ? 2 * N : N, C = k.C, HW = k.HW;
  const size_t per_image = static_cast<size_t>(C) * HW, row_floats = 12;  // modulation floats of one step
  const int guided_channels = std::min(3, 2 * C);
  const float scale = 4.0f;
  const DiffusionSchedule schedule = make_schedule(250);
  vector<uint64_t> seeds(N);
  for (int n = 0; n < N; ++n) seeds[n] = seed + 17 * static_cast<uint64_t>(n);

  vector<cuda::LoopStep> table(2);
  for (int s = 0; s < 2; ++s) {
    cuda::LoopStep& e = table[s];
    e.k = step_coefficients(schedule, k.index - s);
    e.use_ddim = k.ddim;
    e.ddim = ddim_scalars(e.k, k.eta);
    e.add_noise = k.ddim ? e.ddim.add_noise : !e.k.last_step;
    e.noise_slot = noise_slot_for_step(249 - k.index + s);
    e.guidance_scale = scale;
    e.next_modulation = s == 0 ? static_cast<int64_t>(row_floats) : -1;  // then "the host copies"
  }
  const vector<float> chunk = test::random_normal(3 * row_floats, seed + 5);
  const vector<float> modulation0 = test::random_normal(row_floats, seed + 6);

  const vector<float> x = test::random_normal(static_cast<size_t>(N) * per_image, seed);
  DeviceTensor dx(x), dx_in(static_cast<size_t>(rows) * per_image), dout(static_cast<size_t>(rows) * 2 * per_image);
  DeviceTensor dchunk(chunk), dmodulation(modulation0);
  DeviceTensor ref_x(x), ref_out(static_cast<size_t>(rows) * 2 * per_image);
  DeviceTensor ref_noise(static_cast<size_t>(N) * per_image);
  const test::DeviceArray<uint64_t> dseeds(seeds);
  const test::DeviceArray<uint32_t> dstreams(vector<uint32_t>(N, 0));
  const test::DeviceArray<cuda::LoopStep> dtable(table);
  const test::DeviceArray<int> dstep(vector<int>{0});
  const test::DeviceArray<unsigned> ddone(vector<unsigned>{0});
  cuda::LoopStepArgs args;
  args.steps = dtable.data();
  args.step = dstep.data();
  args.blocks_done = ddone.data();
  args.x_state = dx.f32();
  args.x_in = dx_in.f32();
  args.model_out = dout.f32();
  args.seeds = dseeds.data();
  args.modulation_chunk = dchunk.f32();
  args.modulation = dmodulation.f32();
  args.modulation_floats = static_cast<int64_t>(row_floats);
  args.images = N;
  args.C = C;
  args.HW = HW;
  args.guided = k.guided;
  args.guided_channels = guided_channels;
  const int width = static_cast<int>(std::lround(std::sqrt(static_cast<double>(HW))));
  if (k.patch > 0) {
    ASSERT_EQ(width * width, HW) << "a token-layout case needs a square latent";
    args.patch = k.patch;
    args.width = width;
  }

  vector<float> cpu_x = x;
  for (int s = 0; s < 2; ++s) {
    const std::string name = "loop_step/" + k.name() + "/entry" + std::to_string(s);
    vector<float> model_out = test::random_normal(static_cast<size_t>(rows) * 2 * per_image, seed + 10 + s);
    for (int r = 0; r < rows; ++r)  // v in [-1, 1], as the learned-range variance expects
      for (size_t i = 0; i < per_image; ++i) {
        float& v = model_out[(static_cast<size_t>(r) * 2 + 1) * per_image + i];
        v = std::tanh(v);
      }
    dout.upload(k.patch > 0 ? patchify(model_out, rows, 2 * C, width, k.patch) : model_out);
    dx_in.poison();
    cuda::loop_step(args, nullptr);

    // the sequence it replaces, on the device
    const cuda::LoopStep& e = table[s];
    ref_out.upload(model_out);
    if (k.guided) cuda::guidance_combine(ref_out.f32(), N, 2 * C, HW, scale, guided_channels, nullptr);
    if (e.add_noise)
      cuda::gaussian_noise_rows(dseeds.data(), dstreams.data(), e.noise_slot, ref_noise.f32(), N,
                                static_cast<int64_t>(per_image), nullptr);
    if (k.ddim)
      cuda::ddim_step(ref_x.f32(), ref_out.f32(), ref_noise.f32(), N, C, HW, e.k, k.eta, nullptr);
    else
      cuda::ddpm_step(ref_x.f32(), ref_out.f32(), ref_noise.f32(), N, C, HW, e.k, nullptr);
    const vector<float> expected = ref_x.download();
    EXPECT_TRUE(expected == dx.download())
        << name << ": x_state differs from the composed kernels (seed " << seed << ")";
    size_t unwritten = 0;
    const vector<float> x_in = dx_in.download(&unwritten);
    EXPECT_EQ(unwritten, 0u) << name << ": x_in not fully written";
    for (int half = 0; half < rows / N; ++half)
      EXPECT_TRUE(std::equal(expected.begin(), expected.end(), x_in.begin() + half * expected.size()))
          << name << ": x_in half " << half << " is not x_state";

    // the CPU reference of the same sequence
    if (k.guided) cpu::guidance_combine(model_out.data(), N, 2 * C, HW, scale, guided_channels);
    vector<float> noise(static_cast<size_t>(N) * per_image);
    for (int n = 0; n < N; ++n)
      cpu::gaussian_noise(seeds[n], e.noise_slot, 0, noise.data() + n * per_image, static_cast<int64_t>(per_image));
    if (k.ddim)
      cpu::ddim_step(cpu_x.data(), model_out.data(), noise.data(), N, C, HW, e.k, k.eta);
    else
      cpu::ddpm_step(cpu_x.data(), model_out.data(), noise.data(), N, C, HW, e.k);
    expect_close(name, dx.download(), 0, test::to_double(cpu_x), test::kElementwiseF32Bound, seed);

    // entry 0 names the chunk's second row block; entry 1 leaves the modulations as they are
    const vector<float> block(chunk.begin() + row_floats, chunk.begin() + 2 * row_floats);
    EXPECT_TRUE(dmodulation.download() == block) << name << ": the modulations are not the chunk's second block";
  }
  int step = -1;
  unsigned done = 1;
  ASSERT_EQ(cudaMemcpy(&step, dstep.data(), sizeof step, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(&done, ddone.data(), sizeof done, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(step, 2) << "two launches advance the step twice";
  EXPECT_EQ(done, 0u) << "the block count is reset for the next launch";
}

INSTANTIATE_TEST_SUITE_P(
    loop_step, CudaLoopStep,
    testing::Values(LoopStepCase{false, true, 2, 4, 1024, 249, 0}, LoopStepCase{false, false, 3, 4, 64, 120, 0},
                    LoopStepCase{false, true, 1, 3, 5, 1, 0},  // ends on the last step
                    LoopStepCase{true, true, 2, 4, 256, 200, 0}, LoopStepCase{true, true, 2, 4, 256, 120, 1.0f},
                    LoopStepCase{true, false, 3, 3, 7, 1, 0.5f},
                    LoopStepCase{false, true, 2, 4, 1024, 249, 0, 2},  // DiT-XL/2 at 256
                    LoopStepCase{false, false, 1, 4, 64, 1, 0, 4}, LoopStepCase{true, true, 2, 4, 256, 120, 1.0f, 2}),
    [](const auto& info) { return info.param.name(); });

#endif  // DIT_CUDA_CASES

}  // namespace
}  // namespace dit
