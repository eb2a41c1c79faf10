// The CPU reference backend: the DiT forward pass of upstream models.py on the kernels'
// CPU references (float32 storage, float64 accumulation), the spec every backend is checked
// against.
#pragma once

#include <memory>
#include <vector>

#include "model/dit_model.h"

namespace dit {

class CpuDitModel final : public DitModel {
 public:
  // Copies the weights (the caller may drop its copy); throws dit::Error (invalid_argument)
  // when a tensor is missing or has the wrong shape.
  CpuDitModel(const ModelConfig& config, const DitWeights& weights);

  const ModelConfig& config() const override { return config_; }
  Backend backend() const override { return Backend::cpu; }
  Precision precision() const override { return Precision::fp32; }

  Tensor forward(const Tensor& x, std::span<const int64_t> t, std::span<const int64_t> y) override;
  Tensor forward_with_cfg(const Tensor& x, std::span<const int64_t> t, std::span<const int64_t> y,
                          float cfg_scale) override;

 private:
  struct Linear {
    const float* weight;  // [out, in]
    const float* bias;    // [out]
    int out, in;
  };
  struct Block {
    Linear adaln, qkv, proj, fc1, fc2;
  };
  Linear linear(const std::string& prefix) const;

  ModelConfig config_;
  DitWeights weights_;
  Linear time_mlp0_, time_mlp2_, final_adaln_, final_linear_;
  std::vector<Block> blocks_;
};

}  // namespace dit
