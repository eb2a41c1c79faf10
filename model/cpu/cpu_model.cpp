// The CPU reference DiT (model/cpu/cpu_model.h), step by step as upstream DiT.forward.
#include "model/cpu/cpu_model.h"

#include <algorithm>
#include <string>

#include "kernels/activations.h"
#include "kernels/attention.h"
#include "kernels/gated_residual.h"
#include "kernels/guidance.h"
#include "kernels/layernorm_modulate.h"
#include "kernels/linear.h"
#include "kernels/patch_embed.h"
#include "kernels/timestep_embed.h"
#include "kernels/unpatchify.h"
#include "core/error.h"

namespace dit {
namespace {

constexpr int kFrequencyDim = 256;  // TimestepEmbedder.frequency_embedding_size
constexpr int kGuidedChannels = 3;  // upstream guides eps channels 0-2 only
constexpr float kLayerNormEps = 1e-6f;

void apply(const float* in, float* out, int rows, const auto& layer) {
  cpu::linear(in, layer.weight, layer.bias, out, rows, layer.out, layer.in);
}

}  // namespace

CpuDitModel::CpuDitModel(const ModelConfig& config, const DitWeights& weights) : config_(config), weights_(weights) {
  config_.validate();
  for (const auto& [name, shape] : expected_weight_shapes(config_)) {
    const Tensor& tensor = weights_.at(name);
    if (tensor.shape != shape || static_cast<int64_t>(tensor.data.size()) != tensor.numel())
      throw Error(ErrorKind::invalid_argument, "weight '" + name + "' has shape " + shape_string(tensor.shape) + ", " +
                                                   config_.name + " expects " + shape_string(shape));
  }
  time_mlp0_ = linear("t_embedder.mlp.0");
  time_mlp2_ = linear("t_embedder.mlp.2");
  for (int i = 0; i < config_.depth; ++i) {
    const std::string block = "blocks." + std::to_string(i) + ".";
    blocks_.push_back(Block{linear(block + "adaLN_modulation.1"), linear(block + "attn.qkv"),
                            linear(block + "attn.proj"), linear(block + "mlp.fc1"), linear(block + "mlp.fc2")});
  }
  final_adaln_ = linear("final_layer.adaLN_modulation.1");
  final_linear_ = linear("final_layer.linear");
}

CpuDitModel::Linear CpuDitModel::linear(const std::string& prefix) const {
  const Tensor& weight = weights_.at(prefix + ".weight");
  return Linear{weight.ptr(), weights_.at(prefix + ".bias").ptr(), static_cast<int>(weight.dim(0)),
                static_cast<int>(weight.dim(1))};
}

Tensor CpuDitModel::forward(const Tensor& x, std::span<const int64_t> t, std::span<const int64_t> y) {
  const ModelConfig& c = config_;
  const int B = x.shape.empty() ? 0 : static_cast<int>(x.dim(0));
  const std::vector<int64_t> expected{B, c.in_channels, c.input_size, c.input_size};
  if (B == 0 || x.shape != expected || static_cast<int>(t.size()) != B || static_cast<int>(y.size()) != B)
    throw Error(ErrorKind::invalid_argument,
                "forward: x " + shape_string(x.shape) + " with " + std::to_string(t.size()) + " timesteps and " +
                    std::to_string(y.size()) + " labels; " + c.name + " expects [B, " + std::to_string(c.in_channels) +
                    ", " + std::to_string(c.input_size) + ", " + std::to_string(c.input_size) + "] with B of each");
  for (int64_t label : y)
    if (label < 0 || label > c.num_classes)
      throw Error(ErrorKind::invalid_argument, "forward: label " + std::to_string(label) + " is outside [0, " +
                                                   std::to_string(c.num_classes) + "] (the last is the null class)");

  const int D = c.hidden_size, T = c.tokens(), H = c.num_heads, M = c.mlp_hidden(), p = c.patch_size;
  const int rows = B * T, out_dim = p * p * c.out_channels();

  std::vector<float> h(static_cast<size_t>(rows) * D);  // [B, T, D] the residual stream
  cpu::patch_embed(x.ptr(), weights_.at("x_embedder.proj.weight").ptr(), weights_.at("x_embedder.proj.bias").ptr(),
                   weights_.at("pos_embed").ptr(), h.data(), B, c.in_channels, c.input_size, p, D);

  // Conditioning c = t_embedder(t) + y_embedder(y); every adaLN layer consumes SiLU(c).
  std::vector<float> frequencies(static_cast<size_t>(B) * kFrequencyDim), hidden(static_cast<size_t>(B) * D),
      cond(static_cast<size_t>(B) * D);
  cpu::timestep_embed(t.data(), frequencies.data(), B, kFrequencyDim);
  apply(frequencies.data(), hidden.data(), B, time_mlp0_);
  cpu::silu(hidden.data(), hidden.data(), hidden.size());
  apply(hidden.data(), cond.data(), B, time_mlp2_);
  const float* table = weights_.at("y_embedder.embedding_table.weight").ptr();
  for (int b = 0; b < B; ++b)
    for (int d = 0; d < D; ++d) cond[static_cast<size_t>(b) * D + d] += table[y[b] * D + d];
  cpu::silu(cond.data(), cond.data(), cond.size());

  std::vector<float> modulation(static_cast<size_t>(B) * 6 * D);  // [B, 6D]: shift, scale, gate x 2
  std::vector<float> normed(static_cast<size_t>(rows) * D), qkv(static_cast<size_t>(rows) * 3 * D),
      attended(static_cast<size_t>(rows) * D), projected(static_cast<size_t>(rows) * D),
      mlp(static_cast<size_t>(rows) * M);
  for (const Block& block : blocks_) {
    apply(cond.data(), modulation.data(), B, block.adaln);
    const float* shift_msa = modulation.data();
    const float* scale_msa = shift_msa + D;
    const float* gate_msa = shift_msa + 2 * D;
    const float* shift_mlp = shift_msa + 3 * D;
    const float* scale_mlp = shift_msa + 4 * D;
    const float* gate_mlp = shift_msa + 5 * D;

    cpu::layernorm_modulate(h.data(), shift_msa, scale_msa, 6 * D, normed.data(), B, T, D, kLayerNormEps);
    apply(normed.data(), qkv.data(), rows, block.qkv);
    cpu::attention(qkv.data(), attended.data(), B, T, H, c.head_dim());
    apply(attended.data(), projected.data(), rows, block.proj);
    cpu::gated_residual(h.data(), projected.data(), gate_msa, 6 * D, B, T, D);

    cpu::layernorm_modulate(h.data(), shift_mlp, scale_mlp, 6 * D, normed.data(), B, T, D, kLayerNormEps);
    apply(normed.data(), mlp.data(), rows, block.fc1);
    cpu::gelu_tanh(mlp.data(), mlp.data(), mlp.size());
    apply(mlp.data(), projected.data(), rows, block.fc2);
    cpu::gated_residual(h.data(), projected.data(), gate_mlp, 6 * D, B, T, D);
  }

  // Final layer: adaLN (shift, scale), LayerNorm, modulate, Linear(D, p * p * out_channels).
  apply(cond.data(), modulation.data(), B, final_adaln_);
  cpu::layernorm_modulate(h.data(), modulation.data(), modulation.data() + D, 2 * D, normed.data(), B, T, D,
                          kLayerNormEps);
  std::vector<float> patches(static_cast<size_t>(rows) * out_dim);
  apply(normed.data(), patches.data(), rows, final_linear_);
  Tensor out({B, c.out_channels(), c.input_size, c.input_size});
  cpu::unpatchify(patches.data(), out.ptr(), B, c.grid(), p, c.out_channels());
  return out;
}

Tensor CpuDitModel::forward_with_cfg(const Tensor& x, std::span<const int64_t> t, std::span<const int64_t> y,
                                     float cfg_scale) {
  if (x.shape.empty() || x.dim(0) % 2 != 0)
    throw Error(ErrorKind::invalid_argument,
                "forward_with_cfg needs an even batch (B conditional rows, then B unconditional), got " +
                    shape_string(x.shape));
  // Upstream runs the first half twice: cat([x[:B], x[:B]]); the second half of x is unused.
  Tensor doubled = x;
  const int64_t half = x.numel() / 2;
  std::copy_n(x.ptr(), half, doubled.ptr() + half);
  Tensor out = forward(doubled, t, y);
  const int B = static_cast<int>(x.dim(0) / 2), C = static_cast<int>(out.dim(1));
  cpu::guidance_combine(out.ptr(), B, C, static_cast<int>(out.dim(2) * out.dim(3)), cfg_scale,
                        std::min(kGuidedChannels, C));
  return out;
}

}  // namespace dit
