// The linear layer (kernels/linear.h). CPU cases: the reference (kernels/linear.cpp) against a
// float64 re-derivation on fresh random inputs. CUDA cases: the cuBLASLt GEMM that runs it on the
// device (model/cuda/cublaslt_gemm.h) against the reference, fused and unfused epilogues, every
// operand/output dtype and tf32; GEMM plans (a plan's candidate taken, a stale one or another shape
// falling back, tuning recording a choice a fresh runner takes again); the argument checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kernels/linear.h"
#include "tests/kernels/harness.h"

#if DIT_CUDA_CASES
#include "kernels/activations.h"
#include "model/cuda/cublaslt_gemm.h"
#include "model/gemm_plan.h"
#endif

namespace dit {
namespace {

using std::vector;
using test::expect_close;

#if DIT_CPU_CASES

struct CpuLinearCase {
  int M, N, K;
  bool with_bias = true;
  std::string name() const { return test::dims_name({{"m", M}, {"n", N}, {"k", K}}) + (with_bias ? "" : "_nobias"); }
};

class CpuLinear : public testing::TestWithParam<CpuLinearCase> {};

TEST_P(CpuLinear, matches_float64_rederivation) {
  const auto [M, N, K, with_bias] = GetParam();
  const uint64_t seed = test::fresh_seed();
  const vector<float> in = test::random_normal(size_t(M) * K, seed);
  const vector<float> weight = test::random_normal(size_t(N) * K, seed + 1, 0.1f);
  const vector<float> bias = test::random_normal(N, seed + 2);
  vector<float> out = test::poisoned(size_t(M) * N);
  cpu::linear(in.data(), weight.data(), with_bias ? bias.data() : nullptr, out.data(), M, N, K);
  vector<double> ref(size_t(M) * N);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double acc = with_bias ? bias[n] : 0.0;
      for (int k = 0; k < K; ++k) acc += double(in[size_t(m) * K + k]) * weight[size_t(n) * K + k];
      ref[size_t(m) * N + n] = acc;
    }
  expect_close("linear/" + GetParam().name(), out, test::count_poisoned(out), ref, test::kElementwiseF32Bound, seed);
}

// Shapes cross the linear's 4-row tiles, 8-column panels and 128-row chunks.
INSTANTIATE_TEST_SUITE_P(linear, CpuLinear,
                         testing::Values(CpuLinearCase{1, 8, 16}, CpuLinearCase{7, 13, 33}, CpuLinearCase{64, 96, 72},
                                         CpuLinearCase{130, 17, 256}, CpuLinearCase{2, 864, 144},
                                         CpuLinearCase{5, 9, 7, false}),
                         [](const auto& info) { return info.param.name(); });

#endif  // DIT_CPU_CASES

#if DIT_CUDA_CASES

using cuda::DeviceDtype;
using test::DeviceTensor;

// --- cuBLASLt linear ----------------------------------------------------------------------------

struct LinearCase {
  int M, N, K;
  DeviceDtype operands, output;
  cuda::GemmCompute compute;
  cuda::GemmEpilogue epilogue;
  std::string name() const {
    const char* epi = epilogue == cuda::GemmEpilogue::none   ? "nobias"
                      : epilogue == cuda::GemmEpilogue::bias ? "bias"
                                                             : "gelu";
    return "m" + std::to_string(M) + "_n" + std::to_string(N) + "_k" + std::to_string(K) + "_" +
           test::dtype_suffix(operands) + "_to_" + test::dtype_suffix(output) +
           (compute == cuda::GemmCompute::tf32 ? "_tf32_" : "_") + epi;
  }
};

class CudaLinear : public testing::TestWithParam<LinearCase> {};

TEST_P(CudaLinear, matches_reference) {
  const LinearCase k = GetParam();
  const uint64_t seed = test::fresh_seed();
  const vector<float> in = test::round_to(test::random_normal(static_cast<size_t>(k.M) * k.K, seed), k.operands);
  const vector<float> weight = test::round_to(
      test::random_normal(static_cast<size_t>(k.N) * k.K, seed + 1, 1.0f / std::sqrt(static_cast<float>(k.K))),
      k.operands);
  const vector<float> bias = test::round_to(test::random_normal(k.N, seed + 2), k.output);
  vector<float> ref(static_cast<size_t>(k.M) * k.N);
  cpu::linear(in.data(), weight.data(), k.epilogue == cuda::GemmEpilogue::none ? nullptr : bias.data(), ref.data(), k.M,
              k.N, k.K);
  if (k.epilogue == cuda::GemmEpilogue::gelu_bias)
    cpu::gelu_tanh(ref.data(), ref.data(), static_cast<int64_t>(ref.size()));

  DeviceTensor din(in, k.operands), dweight(weight, k.operands), dbias(bias, k.output), dout(ref.size(), k.output);
  DeviceTensor workspace(cuda::GemmRunner::kWorkspaceBytes / 4);
  dout.poison();
  cuda::GemmRunner runner(workspace.data());
  cuda::GemmArgs args{din.data(), dweight.data(), dbias.data(), dout.data(), k.M,       k.N,
                      k.K,        k.operands,     k.output,     k.compute,   k.epilogue};
  runner.linear(args, nullptr);
  size_t unwritten = 0;
  const vector<float> out = dout.download(&unwritten);
  // tf32 keeps 10 mantissa bits of each operand; float32 output from 16-bit operands rounds only
  // the float32 accumulation
  double bound = test::output_bound(k.output);
  if (k.compute == cuda::GemmCompute::tf32)
    bound = 5e-3;
  else if (k.output == DeviceDtype::f32 && k.operands != DeviceDtype::f32)
    bound = 1e-4;
  expect_close("linear/" + k.name(), out, unwritten, test::to_double(ref), bound, seed);

  if (k.epilogue == cuda::GemmEpilogue::none) return;
  // the fallback for a missing fused epilogue: the plain GEMM, then the bias/GELU kernel
  DeviceTensor dunfused(ref.size(), k.output);
  dunfused.poison();
  runner.set_unfused_epilogues(true);
  cuda::GemmArgs unfused = args;
  unfused.out = dunfused.data();
  runner.linear(unfused, nullptr);
  const vector<float> out_unfused = dunfused.download(&unwritten);
  expect_close("linear/" + k.name() + "/unfused", out_unfused, unwritten, test::to_double(ref), bound, seed);
}

using cuda::GemmCompute;
using cuda::GemmEpilogue;
INSTANTIATE_TEST_SUITE_P(
    linear, CudaLinear,
    testing::Values(
        LinearCase{512, 3456, 1152, DeviceDtype::f32, DeviceDtype::f32, GemmCompute::fp32, GemmEpilogue::bias},
        LinearCase{512, 1152, 4608, DeviceDtype::f32, DeviceDtype::f32, GemmCompute::fp32, GemmEpilogue::bias},
        LinearCase{2, 6912, 1152, DeviceDtype::f32, DeviceDtype::f32, GemmCompute::fp32, GemmEpilogue::bias},
        LinearCase{48, 32, 144, DeviceDtype::f32, DeviceDtype::f32, GemmCompute::fp32, GemmEpilogue::none},
        LinearCase{512, 4608, 1152, DeviceDtype::f32, DeviceDtype::f32, GemmCompute::tf32, GemmEpilogue::bias},
        LinearCase{512, 3456, 1152, DeviceDtype::f16, DeviceDtype::f16, GemmCompute::fp32, GemmEpilogue::bias},
        LinearCase{512, 1152, 4608, DeviceDtype::f16, DeviceDtype::f32, GemmCompute::fp32, GemmEpilogue::bias},
        LinearCase{512, 4608, 1152, DeviceDtype::f16, DeviceDtype::f16, GemmCompute::fp32, GemmEpilogue::gelu_bias},
        LinearCase{2, 6912, 1152, DeviceDtype::f16, DeviceDtype::f32, GemmCompute::fp32, GemmEpilogue::bias},
        LinearCase{512, 3456, 1152, DeviceDtype::bf16, DeviceDtype::bf16, GemmCompute::fp32, GemmEpilogue::bias},
        LinearCase{512, 4608, 1152, DeviceDtype::bf16, DeviceDtype::bf16, GemmCompute::fp32, GemmEpilogue::gelu_bias},
        LinearCase{512, 32, 1152, DeviceDtype::bf16, DeviceDtype::f32, GemmCompute::fp32, GemmEpilogue::bias}),
    [](const auto& info) { return info.param.name(); });

// --- GEMM plans: the candidate a plan names, the fallback when it no longer fits, tuning ------

class CudaGemmPlan : public testing::Test {
 protected:
  static constexpr int M = 512, N = 1152, K = 1152;  // proj at DiT-XL/2 batch 2: 8 candidates on an H200
  void SetUp() override {
    seed_ = test::fresh_seed();
    in_ = test::round_to(test::random_normal(static_cast<size_t>(M) * K, seed_), DeviceDtype::f16);
    weight_ = test::round_to(test::random_normal(static_cast<size_t>(N) * K, seed_ + 1, 1.0f / std::sqrt(float(K))),
                             DeviceDtype::f16);
    bias_ = test::random_normal(N, seed_ + 2);
    ref_.resize(static_cast<size_t>(M) * N);
    cpu::linear(in_.data(), weight_.data(), bias_.data(), ref_.data(), M, N, K);
  }
  // Runs the GEMM on a runner with `plan`; checks the output against the CPU reference and
  // returns the candidate the runner took.
  int run(std::optional<GemmPlan> plan, const std::string& label) {
    DeviceTensor din(in_, DeviceDtype::f16), dweight(weight_, DeviceDtype::f16), dbias(bias_), dout(ref_.size());
    DeviceTensor workspace(cuda::GemmRunner::kWorkspaceBytes / 4);
    dout.poison();
    cuda::GemmRunner runner(workspace.data(), std::move(plan));
    const cuda::GemmArgs a = args(din, dweight, dbias, dout);
    runner.linear(a, nullptr);
    size_t unwritten = 0;
    const vector<float> out = dout.download(&unwritten);
    expect_close("gemm_plan/" + label, out, unwritten, test::to_double(ref_), 1e-4, seed_);
    return runner.candidate_for(a);
  }
  static cuda::GemmArgs args(DeviceTensor& in, DeviceTensor& weight, DeviceTensor& bias, DeviceTensor& out) {
    return {in.data(),
            weight.data(),
            bias.data(),
            out.data(),
            M,
            N,
            K,
            DeviceDtype::f16,
            DeviceDtype::f32,
            cuda::GemmCompute::fp32,
            cuda::GemmEpilogue::bias};
  }
  static GemmPlan plan_with(const cuda::GemmArgs& a, int candidate, std::map<std::string, int64_t> algo) {
    GemmPlan plan;
    plan.source = "test plan";
    plan.device = cuda::GemmRunner::current_device();
    GemmPlanChoice choice;
    choice.key = cuda::GemmRunner::plan_key(a);
    choice.candidate = candidate;
    choice.algo = std::move(algo);
    plan.choices = {choice};
    return plan;
  }
  uint64_t seed_ = 0;
  vector<float> in_, weight_, bias_, ref_;
};

TEST_F(CudaGemmPlan, takes_the_planned_candidate_and_falls_back_when_it_changed) {
  DeviceTensor scratch(16);
  const cuda::GemmArgs shape = args(scratch, scratch, scratch, scratch);  // pointers unused below
  DeviceTensor workspace(cuda::GemmRunner::kWorkspaceBytes / 4);
  const auto configs = cuda::GemmRunner(workspace.data()).candidate_configs(shape, 4);
  ASSERT_GE(configs.size(), 2u) << "the heuristic offers one algorithm for this shape";
  EXPECT_NE(configs[0], configs[1]);

  EXPECT_EQ(run(std::nullopt, "no_plan"), 0);
  EXPECT_EQ(run(plan_with(shape, 1, configs[1]), "candidate_1"), 1);
  // A plan whose configuration is not the heuristic's candidate 1 any more: the first is taken.
  EXPECT_EQ(run(plan_with(shape, 1, configs[0]), "stale"), 0);
  // A plan for another shape leaves this one on the first.
  cuda::GemmArgs other = shape;
  other.M = 256;
  EXPECT_EQ(run(plan_with(other, 1, configs[1]), "other_shape"), 0);
}

TEST_F(CudaGemmPlan, tuning_records_a_measured_choice) {
  cuda::GemmTuning& tuning = cuda::gemm_tuning();
  tuning = cuda::GemmTuning{};
  tuning.candidates = 4;
  tuning.margin = 0.0;
  const int taken = run(std::nullopt, "tuned");
  tuning.candidates = 0;
  ASSERT_EQ(tuning.choices.size(), 1u);
  const GemmPlanChoice choice = tuning.choices[0];
  tuning = cuda::GemmTuning{};
  DeviceTensor scratch(16);
  const cuda::GemmArgs shape = args(scratch, scratch, scratch, scratch);
  EXPECT_EQ(choice.key, cuda::GemmRunner::plan_key(shape));
  EXPECT_EQ(choice.candidate, taken);
  EXPECT_GT(choice.first_us, 0.0);
  EXPECT_GT(choice.us, 0.0);
  EXPECT_LE(choice.us, choice.first_us);  // margin 0: the fastest, the first included
  DeviceTensor workspace(cuda::GemmRunner::kWorkspaceBytes / 4);
  const auto configs = cuda::GemmRunner(workspace.data()).candidate_configs(shape, 4);
  ASSERT_LT(static_cast<size_t>(choice.candidate), configs.size());
  EXPECT_EQ(choice.algo, configs[static_cast<size_t>(choice.candidate)]);
  // The recorded choice, as a plan, is taken again by a fresh runner.
  GemmPlan plan = plan_with(shape, choice.candidate, choice.algo);
  EXPECT_EQ(run(plan, "replanned"), choice.candidate);
}

// --- prepare(): cuBLASLt's start-up for each type combination on helper threads -------------

// A runner that prepared its type combinations (one of them one cuBLASLt does not run) takes
// the same algorithm for every shape as a runner that did not, and so computes the same bytes.
// A runner that prepared and is destroyed unused waits for its threads.
TEST(CudaGemmPrepare, plans_and_outputs_equal_an_unprepared_runners) {
  const std::vector<cuda::GemmTypes> types{{DeviceDtype::f32, DeviceDtype::f32, GemmCompute::fp32},
                                           {DeviceDtype::f16, DeviceDtype::f32, GemmCompute::fp32},
                                           {DeviceDtype::f16, DeviceDtype::f16, GemmCompute::fp32},
                                           {DeviceDtype::bf16, DeviceDtype::bf16, GemmCompute::fp32},
                                           {DeviceDtype::f16, DeviceDtype::f16, GemmCompute::tf32}};
  DeviceTensor workspace_a(cuda::GemmRunner::kWorkspaceBytes / 4), workspace_b(cuda::GemmRunner::kWorkspaceBytes / 4);
  { cuda::GemmRunner(workspace_a.data()).prepare(types); }
  cuda::GemmRunner prepared(workspace_a.data());
  prepared.prepare(types);
  cuda::GemmRunner plain(workspace_b.data());
  const uint64_t seed = test::fresh_seed();
  for (const LinearCase& k :
       {LinearCase{2, 1152, 256, DeviceDtype::f32, DeviceDtype::f32, GemmCompute::fp32, GemmEpilogue::bias},
        LinearCase{2, 6912, 1152, DeviceDtype::f16, DeviceDtype::f32, GemmCompute::fp32, GemmEpilogue::bias},
        LinearCase{512, 4608, 1152, DeviceDtype::f16, DeviceDtype::f16, GemmCompute::fp32, GemmEpilogue::gelu_bias},
        LinearCase{512, 3456, 1152, DeviceDtype::bf16, DeviceDtype::bf16, GemmCompute::fp32, GemmEpilogue::bias}}) {
    SCOPED_TRACE(k.name());
    const vector<float> in = test::random_normal(static_cast<size_t>(k.M) * k.K, seed);
    const vector<float> weight = test::random_normal(static_cast<size_t>(k.N) * k.K, seed + 1, 0.03f);
    const vector<float> bias = test::random_normal(k.N, seed + 2);
    DeviceTensor din(in, k.operands), dweight(weight, k.operands), dbias(bias, k.output);
    DeviceTensor out_prepared(static_cast<size_t>(k.M) * k.N, k.output),
        out_plain(static_cast<size_t>(k.M) * k.N, k.output);
    out_prepared.poison();
    out_plain.poison();
    cuda::GemmArgs args{din.data(), dweight.data(), dbias.data(), out_prepared.data(), k.M,       k.N,
                        k.K,        k.operands,     k.output,     k.compute,           k.epilogue};
    prepared.linear(args, nullptr);
    EXPECT_EQ(prepared.candidate_configs(args, 8), plain.candidate_configs(args, 8));
    args.out = out_plain.data();
    plain.linear(args, nullptr);
    size_t unwritten_prepared = 0, unwritten_plain = 0;
    const vector<float> a = out_prepared.download(&unwritten_prepared), b = out_plain.download(&unwritten_plain);
    EXPECT_EQ(unwritten_prepared, 0u);
    EXPECT_EQ(unwritten_plain, 0u);
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end(),
                           [](float x, float y) { return std::memcmp(&x, &y, sizeof x) == 0; }))
        << "seed " << seed;
  }
}

TEST(CudaLinearChecks, rejects_misaligned_and_mismatched_arguments) {
  DeviceTensor a(1024), w(1024), bias(64), out(1024), workspace(cuda::GemmRunner::kWorkspaceBytes / 4);
  cuda::GemmRunner runner(workspace.data());
  cuda::GemmArgs args{a.data(),         w.data(),         bias.data(),       out.data(),        16, 16, 16,
                      DeviceDtype::f32, DeviceDtype::f32, GemmCompute::fp32, GemmEpilogue::bias};
  cuda::GemmArgs misaligned = args;
  misaligned.in = a.f32() + 1;
  EXPECT_THROW(runner.linear(misaligned, nullptr), Error);
  cuda::GemmArgs mixed = args;
  mixed.operands = DeviceDtype::f16;
  mixed.output = DeviceDtype::bf16;
  EXPECT_THROW(runner.linear(mixed, nullptr), Error);
  cuda::GemmArgs tf32_half = args;
  tf32_half.operands = DeviceDtype::f16;
  tf32_half.output = DeviceDtype::f16;
  tf32_half.compute = GemmCompute::tf32;
  EXPECT_THROW(runner.linear(tf32_half, nullptr), Error);
}

#endif  // DIT_CUDA_CASES

}  // namespace
}  // namespace dit
