// The host-side sampling loop (model/sampler.h) and DitModel::sample's default implementation.
// It follows upstream DiT's sample.py and p_sample_loop / ddim_sample_loop: the guided batch is
// stepped as a whole (both halves, each with its own noise and variance), and the images are
// the first half.
#include "model/sampler.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/noise.h"
#include "kernels/sampler_step.h"
#include "model/dit_model.h"
#include "core/error.h"

namespace dit {

const char* sampler_name(SamplerKind kind) {
  switch (kind) {
    case SamplerKind::ddpm: return "ddpm";
    case SamplerKind::ddim: return "ddim";
  }
  return "unknown";
}

SamplerKind parse_sampler(const std::string& name) {
  if (name == "ddpm") return SamplerKind::ddpm;
  if (name == "ddim") return SamplerKind::ddim;
  throw Error(ErrorKind::invalid_argument, "unknown sampler '" + name + "' (ddpm or ddim)");
}

void validate(const SampleRequest& request, int num_classes) {
  auto fail = [](const std::string& what) { throw Error(ErrorKind::invalid_argument, what); };
  if (request.class_labels.empty()) fail("a sample request needs at least one class label");
  for (int label : request.class_labels)
    if (label < 0 || label >= num_classes)
      fail("class label " + std::to_string(label) + " is outside [0, " + std::to_string(num_classes) + ")");
  if (request.seeds.size() != request.class_labels.size())
    fail("a sample request needs one seed per image: " + std::to_string(request.seeds.size()) + " seeds for " +
         std::to_string(request.class_labels.size()) + " class labels");
  if (request.steps < 1 || request.steps > 1000) fail("steps must be in 1..1000, got " + std::to_string(request.steps));
  if (!std::isfinite(request.cfg_scale))
    fail("the guidance scale must be finite, got " + std::to_string(request.cfg_scale));
  if (!std::isfinite(request.eta) || request.eta < 0.0f)
    fail("eta must be finite and non-negative, got " + std::to_string(request.eta));
  if (request.sampler == SamplerKind::ddpm && request.eta != 0.0f) fail("eta applies to the ddim sampler only");
}

std::vector<int64_t> batch_labels(const SampleRequest& request, const ModelConfig& config) {
  std::vector<int64_t> labels(request.class_labels.begin(), request.class_labels.end());
  if (guidance_enabled(request)) labels.insert(labels.end(), request.class_labels.size(), config.null_class());
  return labels;
}

Tensor initial_latents(const SampleRequest& request, const ModelConfig& config) {
  const int64_t images = static_cast<int64_t>(request.class_labels.size());
  const int64_t rows = guidance_enabled(request) ? 2 * images : images;
  Tensor x({rows, config.in_channels, config.input_size, config.input_size});
  const int64_t per_image = x.numel() / rows;
  for (int64_t n = 0; n < images; ++n) {
    cpu::gaussian_noise(request.seeds[n], kNoiseSlotInitial, 0, x.ptr() + n * per_image, per_image);
    if (rows > images) std::copy_n(x.ptr() + n * per_image, per_image, x.ptr() + (images + n) * per_image);
  }
  return x;
}

void step_noise(const SampleRequest& request, int iteration, Tensor& noise) {
  const int64_t images = static_cast<int64_t>(request.class_labels.size());
  const int64_t rows = noise.dim(0), per_image = noise.numel() / rows;
  for (int64_t row = 0; row < rows; ++row)
    cpu::gaussian_noise(request.seeds[row % images], noise_slot_for_step(iteration),
                        static_cast<uint32_t>(row / images), noise.ptr() + row * per_image, per_image);
}

StepCoefficients step_coefficients(const DiffusionSchedule& schedule, int index) {
  // upstream's _extract_into_tensor reads every coefficient as float32
  StepCoefficients k{};
  k.sqrt_recip_alphas_cumprod = static_cast<float>(schedule.sqrt_recip_alphas_cumprod.at(index));
  k.sqrt_recipm1_alphas_cumprod = static_cast<float>(schedule.sqrt_recipm1_alphas_cumprod.at(index));
  k.posterior_mean_coef1 = static_cast<float>(schedule.posterior_mean_coef1.at(index));
  k.posterior_mean_coef2 = static_cast<float>(schedule.posterior_mean_coef2.at(index));
  k.posterior_log_variance_clipped = static_cast<float>(schedule.posterior_log_variance_clipped.at(index));
  k.log_beta = static_cast<float>(schedule.log_betas.at(index));
  k.alpha_cumprod = static_cast<float>(schedule.alphas_cumprod.at(index));
  k.alpha_cumprod_prev = static_cast<float>(schedule.alphas_cumprod_prev.at(index));
  k.last_step = index == 0;
  return k;
}

Tensor run_sampler(DitModel& model, Tensor x, std::span<const int64_t> labels, const DiffusionSchedule& schedule,
                   SamplerKind kind, float cfg_scale, float eta, const NoiseSource& noise,
                   const StepObserver& observer) {
  const ModelConfig& config = model.config();
  if (!config.learn_sigma)
    throw Error(ErrorKind::invalid_argument, "sampling needs a learn_sigma model (the variance channels)");
  const std::vector<int64_t> expected{x.shape.empty() ? 0 : x.dim(0), config.in_channels, config.input_size,
                                      config.input_size};
  if (x.shape != expected || static_cast<int64_t>(labels.size()) != x.dim(0))
    throw Error(ErrorKind::invalid_argument, "sampler input " + shape_string(x.shape) + " with " +
                                                 std::to_string(labels.size()) + " labels does not fit " + config.name);
  const bool guided = cfg_scale != 1.0f;
  const int rows = static_cast<int>(x.dim(0)), C = config.in_channels;
  const int HW = config.input_size * config.input_size;
  Tensor step_noise_buffer(x.shape);
  for (int i = 0; i < schedule.num_steps; ++i) {
    const int index = schedule.num_steps - 1 - i;
    const std::vector<int64_t> t(rows, schedule.timestep_map[index]);
    const Tensor out = guided ? model.forward_with_cfg(x, t, labels, cfg_scale) : model.forward(x, t, labels);
    const StepCoefficients k = step_coefficients(schedule, index);
    const bool noisy = !k.last_step && (kind == SamplerKind::ddpm || eta != 0.0f);
    if (noisy) noise(i, step_noise_buffer);
    if (kind == SamplerKind::ddpm)
      cpu::ddpm_step(x.ptr(), out.ptr(), noisy ? step_noise_buffer.ptr() : nullptr, rows, C, HW, k);
    else
      cpu::ddim_step(x.ptr(), out.ptr(), noisy ? step_noise_buffer.ptr() : nullptr, rows, C, HW, k, eta);
    if (observer) observer(i, x);
  }
  return x;
}

Tensor DitModel::sample(const SampleRequest& request, const ProgressFn& progress) {
  const ModelConfig& model_config = config();
  validate(request, model_config.num_classes);
  const DiffusionSchedule schedule = make_schedule(request.steps);
  const std::vector<int64_t> labels = batch_labels(request, model_config);
  Tensor all_rows = run_sampler(
      *this, initial_latents(request, model_config), labels, schedule, request.sampler, request.cfg_scale, request.eta,
      [&request](int iteration, Tensor& noise) { step_noise(request, iteration, noise); },
      [&](int iteration, const Tensor&) {
        if (progress) progress(iteration + 1, schedule.num_steps);
      });
  const int64_t images = static_cast<int64_t>(request.class_labels.size());
  if (all_rows.dim(0) == images) return all_rows;
  Tensor result({images, all_rows.dim(1), all_rows.dim(2), all_rows.dim(3)});
  std::copy_n(all_rows.ptr(), result.numel(), result.ptr());
  return result;
}

}  // namespace dit
