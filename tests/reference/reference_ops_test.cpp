// Table-driven tests of every CPU reference op against a straightforward float64 re-derivation
// on fresh random inputs (set DIT_TEST_SEED to replay a failure). Each case is named after its
// parameters (`attention/b2_t16_h2_d72`); outputs are poisoned first and must all be written.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/activations.h"
#include "kernels/attention.h"
#include "kernels/gated_residual.h"
#include "kernels/guidance.h"
#include "kernels/layernorm_modulate.h"
#include "kernels/linear.h"
#include "kernels/patch_embed.h"
#include "kernels/sampler_step.h"
#include "kernels/timestep_embed.h"
#include "kernels/unpatchify.h"
#include "model/sampler.h"
#include "model/schedule.h"
#include "tests/support/test_support.h"

namespace dit {
namespace {

constexpr double kFloat32Bound = 1e-6;  // one float32 rounding of a float64 result: ~6e-8
constexpr double kStepBound = 1e-5;     // float32 element arithmetic with cancellation at high t

using std::vector;

std::string name_of(const std::string& op, std::initializer_list<std::pair<const char*, int>> params,
                    const std::string& suffix = "") {
  std::string name = op + "/";
  bool first = true;
  for (const auto& [key, value] : params) {
    if (!first) name += '_';
    name.append(key).append(std::to_string(value));
    first = false;
  }
  return name + suffix;
}

void expect_close(const vector<float>& out, const vector<double>& ref, double bound, uint64_t seed) {
  EXPECT_EQ(test::count_poisoned(out), 0u) << "elements never written (seed " << seed << ")";
  const test::Comparison c = test::compare(out, ref);
  EXPECT_LE(c.relative_error, bound) << "seed " << seed << ": " << c.describe(out, ref);
}

vector<float> poisoned(size_t n) {
  vector<float> v(n);
  test::poison(v);
  return v;
}

// --- the cases ---------------------------------------------------------------------------

void linear_case(int M, int N, int K, bool with_bias) {
  const uint64_t seed = test::fresh_seed();
  const vector<float> in = test::random_normal(size_t(M) * K, seed);
  const vector<float> weight = test::random_normal(size_t(N) * K, seed + 1, 0.1f);
  const vector<float> bias = test::random_normal(N, seed + 2);
  vector<float> out = poisoned(size_t(M) * N);
  cpu::linear(in.data(), weight.data(), with_bias ? bias.data() : nullptr, out.data(), M, N, K);
  vector<double> ref(size_t(M) * N);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double acc = with_bias ? bias[n] : 0.0;
      for (int k = 0; k < K; ++k) acc += double(in[size_t(m) * K + k]) * weight[size_t(n) * K + k];
      ref[size_t(m) * N + n] = acc;
    }
  expect_close(out, ref, kFloat32Bound, seed);
}

void attention_case(int B, int T, int H, int hd) {
  const uint64_t seed = test::fresh_seed();
  const vector<float> qkv = test::random_normal(size_t(B) * T * 3 * H * hd, seed);
  vector<float> out = poisoned(size_t(B) * T * H * hd);
  cpu::attention(qkv.data(), out.data(), B, T, H, hd);
  auto at = [&](int b, int t, int which, int h, int d) {
    return double(qkv[((((size_t(b) * T + t) * 3 + which) * H + h) * hd) + d]);
  };
  vector<double> ref(out.size());
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < T; ++i) {
        vector<double> weights(T);
        double total = 0;
        for (int j = 0; j < T; ++j) {
          double dot = 0;
          for (int d = 0; d < hd; ++d) dot += at(b, i, 0, h, d) * at(b, j, 1, h, d);
          weights[j] = std::exp(dot / std::sqrt(double(hd)));  // unshifted: inputs are O(1)
          total += weights[j];
        }
        for (int d = 0; d < hd; ++d) {
          double acc = 0;
          for (int j = 0; j < T; ++j) acc += weights[j] / total * at(b, j, 2, h, d);
          ref[((size_t(b) * T + i) * H + h) * hd + d] = acc;
        }
      }
  expect_close(out, ref, kFloat32Bound, seed);
}

void layernorm_modulate_case(int B, int T, int D) {
  const uint64_t seed = test::fresh_seed();
  const int stride = 6 * D;  // slices of an adaLN output, as the model passes them
  vector<float> x = test::random_normal(size_t(B) * T * D, seed, 2.0f);
  for (size_t i = 0; i < x.size(); ++i) x[i] += 3.0f;  // a mean far from 0
  const vector<float> modulation = test::random_normal(size_t(B) * stride, seed + 1);
  const float* shift = modulation.data() + 3 * D;
  const float* scale = modulation.data() + 4 * D;
  vector<float> out = poisoned(x.size());
  cpu::layernorm_modulate(x.data(), shift, scale, stride, out.data(), B, T, D, 1e-6f);
  vector<double> ref(x.size());
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      const float* row = x.data() + (size_t(b) * T + t) * D;
      double sum = 0, sum_squares = 0;
      for (int d = 0; d < D; ++d) sum += row[d], sum_squares += double(row[d]) * row[d];
      const double mean = sum / D, variance = sum_squares / D - mean * mean;
      for (int d = 0; d < D; ++d)
        ref[(size_t(b) * T + t) * D + d] = (row[d] - mean) / std::sqrt(variance + double(1e-6f)) *
                                               (1.0 + scale[size_t(b) * stride + d]) + shift[size_t(b) * stride + d];
    }
  expect_close(out, ref, kFloat32Bound, seed);
}

void gated_residual_case(int B, int T, int D) {
  const uint64_t seed = test::fresh_seed();
  vector<float> x = test::random_normal(size_t(B) * T * D, seed);
  const vector<float> y = test::random_normal(x.size(), seed + 1);
  const vector<float> modulation = test::random_normal(size_t(B) * 6 * D, seed + 2);
  const float* gate = modulation.data() + 2 * D;
  vector<double> ref(x.size());
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int d = 0; d < D; ++d) {
        const size_t i = (size_t(b) * T + t) * D + d;
        ref[i] = double(x[i]) + double(gate[size_t(b) * 6 * D + d]) * y[i];
      }
  cpu::gated_residual(x.data(), y.data(), gate, 6 * D, B, T, D);
  expect_close(x, ref, kFloat32Bound, seed);
}

void patch_embed_case(int B, int C, int S, int p, int D) {
  const uint64_t seed = test::fresh_seed();
  const int g = S / p, T = g * g;
  const vector<float> x = test::random_normal(size_t(B) * C * S * S, seed);
  const vector<float> weight = test::random_normal(size_t(D) * C * p * p, seed + 1, 0.2f);
  const vector<float> bias = test::random_normal(D, seed + 2);
  const vector<float> pos = test::random_normal(size_t(T) * D, seed + 3);
  vector<float> out = poisoned(size_t(B) * T * D);
  cpu::patch_embed(x.data(), weight.data(), bias.data(), pos.data(), out.data(), B, C, S, p, D);
  vector<double> ref(out.size());
  for (int b = 0; b < B; ++b)
    for (int oh = 0; oh < g; ++oh)
      for (int ow = 0; ow < g; ++ow)
        for (int d = 0; d < D; ++d) {
          double acc = bias[d];
          for (int c = 0; c < C; ++c)
            for (int kh = 0; kh < p; ++kh)
              for (int kw = 0; kw < p; ++kw)
                acc += double(weight[((size_t(d) * C + c) * p + kh) * p + kw]) *
                       x[((size_t(b) * C + c) * S + oh * p + kh) * S + ow * p + kw];
          const int token = oh * g + ow;
          ref[(size_t(b) * T + token) * D + d] = acc + pos[size_t(token) * D + d];
        }
  expect_close(out, ref, kFloat32Bound, seed);
}

// transpose_patch_weight: element (i, d) of [C p p, D] is element (d, i) of [D, C p p].
void transpose_patch_weight_case(int D, int patch) {
  const uint64_t seed = test::fresh_seed();
  const vector<float> weight = test::random_normal(size_t(D) * patch, seed);
  const vector<float> transposed = cpu::transpose_patch_weight(weight, D);
  ASSERT_EQ(transposed.size(), weight.size());
  for (int d = 0; d < D; ++d)
    for (int i = 0; i < patch; ++i)
      ASSERT_EQ(transposed[size_t(i) * D + d], weight[size_t(d) * patch + i]) << "d " << d << " i " << i;
}

void timestep_embed_case(int B, int dim) {
  const uint64_t seed = test::fresh_seed();
  vector<int64_t> t(B);
  const vector<float> u = test::random_uniform(B, seed);
  for (int b = 0; b < B; ++b) t[b] = std::lround((u[b] + 1.0f) * 499.5f);
  vector<float> out = poisoned(size_t(B) * dim);
  cpu::timestep_embed(t.data(), out.data(), B, dim, 10000.0f);
  // The spec (upstream's torch code) forms the frequency exponent and the argument t * f in
  // float32; those roundings move the argument by up to ~5e-5 at t ~ 1000, so the reference
  // follows them, then takes cos and sin in float64.
  const int half = dim / 2;
  vector<double> ref(out.size(), 0.0);
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < half; ++i) {
      const float exponent = float(-std::log(10000.0)) * float(i) / float(half);
      const float frequency = float(std::exp(double(exponent)));
      const double arg = float(t[b]) * frequency;
      ref[size_t(b) * dim + i] = std::cos(arg);
      ref[size_t(b) * dim + half + i] = std::sin(arg);
    }
  expect_close(out, ref, kFloat32Bound, seed);
}

void unpatchify_case(int B, int g, int p, int C) {
  const uint64_t seed = test::fresh_seed();
  const int S = g * p;
  const vector<float> tokens = test::random_normal(size_t(B) * g * g * p * p * C, seed);
  vector<float> out = poisoned(tokens.size());
  cpu::unpatchify(tokens.data(), out.data(), B, g, p, C);
  vector<double> ref(out.size());
  for (int b = 0; b < B; ++b)
    for (int c = 0; c < C; ++c)
      for (int row = 0; row < S; ++row)
        for (int col = 0; col < S; ++col) {
          const int token = (row / p) * g + col / p, r = row % p, q = col % p;
          ref[((size_t(b) * C + c) * S + row) * S + col] =
              tokens[(size_t(b) * g * g + token) * p * p * C + (r * p + q) * C + c];
        }
  expect_close(out, ref, 0.0, seed);  // a permutation: exact
}

void guidance_case(int B, int C, int HW, float scale) {
  const uint64_t seed = test::fresh_seed();
  vector<float> out = test::random_normal(size_t(2) * B * C * HW, seed);
  vector<double> ref(out.begin(), out.end());
  for (int b = 0; b < B; ++b)
    for (int c = 0; c < 3; ++c)
      for (int i = 0; i < HW; ++i) {
        const size_t cond = (size_t(b) * C + c) * HW + i, uncond = (size_t(B + b) * C + c) * HW + i;
        const double guided = double(out[uncond]) + scale * (double(out[cond]) - out[uncond]);
        ref[cond] = ref[uncond] = guided;
      }
  cpu::guidance_combine(out.data(), B, C, HW, scale, 3);
  expect_close(out, ref, kFloat32Bound, seed);
  for (int row = 0; row < 2 * B; ++row)  // channels 3.. untouched, bit for bit
    for (size_t i = (size_t(row) * C + 3) * HW; i < size_t(row + 1) * C * HW; ++i)
      ASSERT_EQ(out[i], float(ref[i])) << "channel >= 3 modified at " << i;
}

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

void ddpm_step_case(int N, int C, int HW, int steps, int index) {
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
  expect_close(in.x, ref, kStepBound, seed);
}

// DDIM against an independent formulation: x0 from sqrt(alpha_bar), not the recip coefficients.
void ddim_step_case(int N, int C, int HW, int steps, int index, float eta) {
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
  expect_close(in.x, ref, kStepBound, seed);
}

void activation_case(const std::string& which, int n) {
  const uint64_t seed = test::fresh_seed();
  const vector<float> x = test::random_normal(n, seed, 4.0f);
  vector<float> out = poisoned(n);
  vector<double> ref(n);
  if (which == "silu") {
    cpu::silu(x.data(), out.data(), n);
    for (int i = 0; i < n; ++i) ref[i] = x[i] / (1 + std::exp(-double(x[i])));
  } else {
    cpu::gelu_tanh(x.data(), out.data(), n);
    for (int i = 0; i < n; ++i) {
      const double v = x[i];
      ref[i] = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    }
  }
  expect_close(out, ref, kFloat32Bound, seed);
}

// --- the table ---------------------------------------------------------------------------

struct OpCase {
  std::string name;
  std::function<void()> run;
};

vector<OpCase> op_cases() {
  vector<OpCase> cases;
  // Shapes cross the linear's 4-row tiles, 8-column panels and 128-row chunks.
  for (auto [M, N, K] : {std::tuple{1, 8, 16}, {7, 13, 33}, {64, 96, 72}, {130, 17, 256}, {2, 864, 144}})
    cases.push_back({name_of("linear", {{"m", M}, {"n", N}, {"k", K}}), [=] { linear_case(M, N, K, true); }});
  cases.push_back({name_of("linear", {{"m", 5}, {"n", 9}, {"k", 7}}, "_nobias"), [] { linear_case(5, 9, 7, false); }});
  for (auto [B, T, H, hd] : {std::tuple{2, 16, 2, 72}, {1, 16, 4, 16}, {2, 64, 3, 64}, {1, 7, 1, 8}})
    cases.push_back({name_of("attention", {{"b", B}, {"t", T}, {"h", H}, {"d", hd}}),
                     [=] { attention_case(B, T, H, hd); }});
  for (auto [B, T, D] : {std::tuple{2, 16, 64}, {3, 5, 144}})
    cases.push_back({name_of("layernorm_modulate", {{"b", B}, {"t", T}, {"d", D}}),
                     [=] { layernorm_modulate_case(B, T, D); }});
  cases.push_back({name_of("gated_residual", {{"b", 2}, {"t", 16}, {"d", 64}}), [] { gated_residual_case(2, 16, 64); }});
  for (auto [B, C, S, p, D] : {std::tuple{2, 4, 8, 2, 64}, {1, 4, 16, 4, 32}, {2, 3, 8, 8, 16}})
    cases.push_back({name_of("patch_embed", {{"b", B}, {"c", C}, {"s", S}, {"p", p}, {"d", D}}),
                     [=] { patch_embed_case(B, C, S, p, D); }});
  for (auto [D, patch] : {std::pair{1152, 16}, {5, 3}})
    cases.push_back({name_of("transpose_patch_weight", {{"d", D}, {"patch", patch}}),
                     [=] { transpose_patch_weight_case(D, patch); }});
  for (auto [B, dim] : {std::pair{4, 256}, {3, 7}})
    cases.push_back({name_of("timestep_embed", {{"b", B}, {"dim", dim}}), [=] { timestep_embed_case(B, dim); }});
  for (auto [B, g, p, C] : {std::tuple{2, 4, 2, 8}, {1, 3, 4, 6}})
    cases.push_back({name_of("unpatchify", {{"b", B}, {"g", g}, {"p", p}, {"c", C}}),
                     [=] { unpatchify_case(B, g, p, C); }});
  cases.push_back({name_of("guidance", {{"b", 2}, {"c", 8}, {"hw", 64}}, "_s4"), [] { guidance_case(2, 8, 64, 4.0f); }});
  cases.push_back({name_of("guidance", {{"b", 1}, {"c", 8}, {"hw", 16}}, "_s1.5"), [] { guidance_case(1, 8, 16, 1.5f); }});
  for (auto [steps, index] : {std::pair{250, 249}, {250, 100}, {250, 0}, {10, 5}})
    cases.push_back({name_of("ddpm_step", {{"n", 4}, {"c", 4}, {"hw", 64}, {"steps", steps}, {"index", index}}),
                     [=] { ddpm_step_case(4, 4, 64, steps, index); }});
  for (auto [steps, index, eta_tenths] : {std::tuple{50, 49, 0}, {50, 20, 5}, {50, 1, 10}, {50, 0, 10}, {10, 7, 3}})
    cases.push_back({name_of("ddim_step", {{"n", 4}, {"c", 4}, {"hw", 64}, {"steps", steps}, {"index", index},
                                           {"eta_tenths", eta_tenths}}),
                     [=] { ddim_step_case(4, 4, 64, steps, index, eta_tenths / 10.0f); }});
  for (int n : {1000, 100000})  // below and above the parallel threshold
    for (const std::string op : {"silu", "gelu_tanh"})
      cases.push_back({name_of(op, {{"n", n}}), [=] { activation_case(op, n); }});
  return cases;
}

class OpTest : public testing::Test {
 public:
  explicit OpTest(std::function<void()> run) : run_(std::move(run)) {}
  void TestBody() override { run_(); }

 private:
  std::function<void()> run_;
};

const bool registered = [] {
  for (OpCase& c : op_cases())
    testing::RegisterTest("CpuReference", c.name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                          [run = c.run]() -> testing::Test* { return new OpTest(run); });
  return true;
}();

}  // namespace
}  // namespace dit
