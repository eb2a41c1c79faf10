// A small version-2 contract for a one-case corpus "tiny.jsonl" whose case "tiny-b" is critical,
// with zero allowed regression and exact floors for the CPU and gate set `set` only: what the
// command-line tests of dit-quality and dit-quality-render judge under.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace dit::test {

inline nlohmann::json one_case_contract(const std::string& about, const std::string& set,
                                        const std::string& calibration, const std::string& margin) {
  nlohmann::json metrics;
  for (const char* name : {"latent_relative_l2", "max_abs_pixel_error"})
    metrics[name] = {{"direction", "lower"}, {"allowed_regression", {{"absolute", 0.0}, {"relative", 0.0}}}};
  for (const char* name : {"image_psnr", "image_ssim", "all_finite", "determinism"})
    metrics[name] = {{"direction", "higher"}, {"allowed_regression", {{"absolute", 0.0}, {"relative", 0.0}}}};
  const nlohmann::json exact = {{"latent_relative_l2", 1e-6}, {"image_psnr", 80.0}, {"image_ssim", 0.99999},
                                {"max_abs_pixel_error", 2.0}, {"all_finite", 1.0},  {"determinism", 1.0}};
  return {{"about", about},
          {"version", 2},
          {"strict_zero_regression", false},
          {"strict_classifications", {"quantization"}},
          {"required_metrics",
           {"latent_relative_l2", "image_psnr", "image_ssim", "max_abs_pixel_error", "all_finite", "determinism"}},
          {"metrics", metrics},
          {"floors", {{"cpu", {{set, {{"calibration", calibration}, {"margin", margin}, {"exact", exact}}}}}}},
          {"critical_cases", {{"tiny.jsonl", {"tiny-b"}}}}};
}

}  // namespace dit::test
