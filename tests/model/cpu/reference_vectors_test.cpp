// The CPU backend against the outside oracle (tests/data/REFERENCE-VECTORS.md): the forward
// pass, guidance, every schedule array, and the DDPM and DDIM trajectories step by step, for
// dit_tiny_a (head dim 16) and dit_tiny_b (head dim 72, the DiT-XL head size).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "model/dit_model.h"
#include "core/safetensors.h"
#include "model/sampler.h"
#include "model/schedule.h"
#include "model/weights.h"
#include "tests/support/test_support.h"

namespace dit {
namespace {

constexpr double kForwardBound = 1e-5;     // float32 arithmetic: about 1e-6 expected
constexpr double kScheduleBound = 1e-12;   // float64, the same operations as numpy
constexpr double kTrajectoryBound = 1e-4;  // float32 error compounding over 10 steps

struct Fixture {
  ModelConfig config;
  SafetensorsFile vectors;
  std::unique_ptr<DitModel> model;
};

Fixture load(const std::string& name) {
  const std::string weights_path = test::data_path(name + ".weights.safetensors");
  const SafetensorsFile weights_file = SafetensorsFile::open(weights_path);
  const ModelConfig config = model_config_from_json(weights_file.metadata().at("config"));
  const DitWeights weights = DitWeights::load(weights_path, config);
  return Fixture{config, SafetensorsFile::open(test::data_path(name + ".vectors.safetensors")),
                 make_model(Backend::cpu, config, weights)};
}

std::vector<double> row_slice(const std::vector<double>& all, size_t row, size_t row_size) {
  return {all.begin() + row * row_size, all.begin() + (row + 1) * row_size};
}

class ReferenceVectors : public testing::TestWithParam<std::string> {};

TEST_P(ReferenceVectors, ForwardMatches) {
  Fixture f = load(GetParam());
  const Tensor x = f.vectors.to_float("forward.x");
  const Tensor out = f.model->forward(x, f.vectors.to_int64("forward.t"), f.vectors.to_int64("forward.y"));
  const std::vector<double> expected = f.vectors.to_double("forward.out");
  ASSERT_EQ(out.shape, f.vectors.at("forward.out").shape);
  const test::Comparison c = test::compare(out.data, expected);
  EXPECT_LE(c.relative_error, kForwardBound) << c.describe(out.data, expected);
}

TEST_P(ReferenceVectors, GuidedForwardMatches) {
  Fixture f = load(GetParam());
  const Tensor x = f.vectors.to_float("cfg.x");
  const float scale = static_cast<float>(f.vectors.to_double("cfg.scale").at(0));
  const Tensor out = f.model->forward_with_cfg(x, f.vectors.to_int64("cfg.t"), f.vectors.to_int64("cfg.y"), scale);
  const std::vector<double> expected = f.vectors.to_double("cfg.out");
  ASSERT_EQ(out.shape, f.vectors.at("cfg.out").shape);
  const test::Comparison c = test::compare(out.data, expected);
  EXPECT_LE(c.relative_error, kForwardBound) << c.describe(out.data, expected);
}

TEST_P(ReferenceVectors, SchedulesMatch) {
  Fixture f = load(GetParam());
  for (int steps : {1000, 250, 50, 10}) {
    SCOPED_TRACE("schedule." + std::to_string(steps));
    const DiffusionSchedule s = make_schedule(steps);
    const std::string prefix = "schedule." + std::to_string(steps) + ".";
    EXPECT_EQ(s.num_steps, steps);
    EXPECT_EQ(s.timestep_map, f.vectors.to_int64(prefix + "timestep_map"));
    const std::pair<const char*, const std::vector<double>*> arrays[] = {
        {"betas", &s.betas},
        {"alphas_cumprod", &s.alphas_cumprod},
        {"alphas_cumprod_prev", &s.alphas_cumprod_prev},
        {"posterior_variance", &s.posterior_variance},
        {"posterior_log_variance_clipped", &s.posterior_log_variance_clipped},
        {"posterior_mean_coef1", &s.posterior_mean_coef1},
        {"posterior_mean_coef2", &s.posterior_mean_coef2},
        {"sqrt_recip_alphas_cumprod", &s.sqrt_recip_alphas_cumprod},
        {"sqrt_recipm1_alphas_cumprod", &s.sqrt_recipm1_alphas_cumprod}};
    for (const auto& [name, values] : arrays) {
      const std::vector<double> expected = f.vectors.to_double(prefix + name);
      ASSERT_EQ(values->size(), expected.size()) << name;
      size_t mismatches = 0;
      for (size_t i = 0; i < expected.size(); ++i) {
        const double error = std::abs((*values)[i] - expected[i]);
        if (!(error <= kScheduleBound * std::abs(expected[i])) && mismatches++ < 3)
          ADD_FAILURE() << name << "[" << i << "] = " << (*values)[i] << ", expected " << expected[i]
                        << " (relative error " << error / std::abs(expected[i]) << ")";
      }
      EXPECT_EQ(mismatches, 0u) << name;
    }
  }
  EXPECT_EQ(make_schedule(10).timestep_map, f.vectors.to_int64("ddpm.timestep_map"));
}

// Runs the sampler from ddpm.xT and checks every row of the batch after every step.
void check_trajectory(Fixture& f, SamplerKind kind, const std::string& trajectory_name) {
  const Tensor x_T = f.vectors.to_float("ddpm.xT");
  const std::vector<int64_t> labels = f.vectors.to_int64("ddpm.y");
  const float scale = static_cast<float>(f.vectors.to_double("cfg.scale").at(0));
  const std::vector<double> noise = f.vectors.to_double("ddpm.noise");
  const std::vector<double> trajectory = f.vectors.to_double(trajectory_name);
  const size_t step_size = static_cast<size_t>(x_T.numel());
  const DiffusionSchedule schedule = make_schedule(10);
  ASSERT_EQ(trajectory.size(), step_size * schedule.num_steps);

  int noise_requests = 0, observed = 0;
  const Tensor result = run_sampler(
      *f.model, x_T, labels, schedule, kind, scale, 0.0f,
      [&](int iteration, Tensor& out) {
        ++noise_requests;
        const std::vector<double> step = row_slice(noise, iteration, step_size);
        ASSERT_EQ(out.data.size(), step.size());
        for (size_t i = 0; i < step.size(); ++i) out.data[i] = static_cast<float>(step[i]);
      },
      [&](int iteration, const Tensor& x) {
        ++observed;
        const std::vector<double> expected = row_slice(trajectory, iteration, step_size);
        const test::Comparison c = test::compare(x.data, expected);
        EXPECT_LE(c.relative_error, kTrajectoryBound)
            << trajectory_name << " step " << iteration << ": " << c.describe(x.data, expected);
      });
  EXPECT_EQ(observed, schedule.num_steps);
  // DDPM draws noise at every step but the last; DDIM with eta = 0 never does.
  EXPECT_EQ(noise_requests, kind == SamplerKind::ddpm ? schedule.num_steps - 1 : 0);
  const std::vector<double> last = row_slice(trajectory, schedule.num_steps - 1, step_size);
  EXPECT_LE(test::compare(result.data, last).relative_error, kTrajectoryBound);
}

TEST_P(ReferenceVectors, DdpmTrajectoryMatches) {
  Fixture f = load(GetParam());
  check_trajectory(f, SamplerKind::ddpm, "ddpm.trajectory");
}

TEST_P(ReferenceVectors, DdimTrajectoryMatches) {
  Fixture f = load(GetParam());
  check_trajectory(f, SamplerKind::ddim, "ddim.trajectory");
}

INSTANTIATE_TEST_SUITE_P(TinyModels, ReferenceVectors, testing::Values("dit_tiny_a", "dit_tiny_b"),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace dit
