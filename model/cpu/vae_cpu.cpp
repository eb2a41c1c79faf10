// The CPU reference VAE decoder: float32 activations (channels last), float64 accumulation in
// every convolution, normalisation and attention sum.
#include <cmath>
#include <vector>

#include "kernels/group_norm.h"
#include "kernels/upsample.h"
#include "kernels/vae_conv2d.h"
#include "kernels/vae_softmax.h"
#include "core/error.h"
#include "model/cpu/vae_cpu.h"
#include "model/vae_layout.h"

namespace dit {
namespace {

// Activations [N, H, W, C].
struct Activation {
  int N = 0, H = 0, W = 0, C = 0;
  std::vector<float> data;
  Activation() = default;
  Activation(int n, int h, int w, int c) : N(n), H(h), W(w), C(c), data(static_cast<size_t>(n) * h * w * c) {}
  int64_t pixels() const { return static_cast<int64_t>(H) * W; }
};

class CpuVaeDecoder final : public VaeDecoder {
 public:
  CpuVaeDecoder(const VaeConfig& config, const VaeWeights& weights)
      : config_(config), layout_(vae::decoder_layout(config)), weights_(weights) {
    for (const auto& [name, shape] : vae::parameter_shapes(config)) {
      const Tensor& t = weights_.at(name);
      if (t.shape != shape)
        throw Error(ErrorKind::invalid_argument, "VAE weights: " + name + " has shape " + shape_string(t.shape) +
                                                     ", expected " + shape_string(shape));
    }
  }

  const VaeConfig& config() const override { return config_; }

  Tensor decode(const Tensor& z) override {
    check_latents(z, config_);
    const int N = static_cast<int>(z.shape[0]), C = static_cast<int>(z.shape[1]), S = static_cast<int>(z.shape[2]);
    Activation x(N, S, S, C);
    for (int n = 0; n < N; ++n)
      for (int c = 0; c < C; ++c)
        for (int p = 0; p < S * S; ++p)
          x.data[(static_cast<size_t>(n) * S * S + p) * C + c] = z.data[(static_cast<size_t>(n) * C + c) * S * S + p];

    x = conv(x, "post_quant_conv.", layout_.latent_channels, 1);
    x = conv(x, "decoder.conv_in.", layout_.top_channels, 3);
    x = resnet(x, layout_.mid_resnets[0]);
    x = attention(x);
    x = resnet(x, layout_.mid_resnets[1]);
    for (const auto& block : layout_.up_blocks) {
      for (const auto& r : block.resnets) x = resnet(x, r);
      if (!block.upsampler_prefix.empty()) {
        Activation up(x.N, 2 * x.H, 2 * x.W, x.C);
        cpu::upsample_nearest2x(x.data.data(), up.data.data(), x.N, x.H, x.W, x.C);
        x = conv(up, block.upsampler_prefix, block.channels, 3);
      }
    }
    norm(x, "decoder.conv_norm_out.", true);
    x = conv(x, "decoder.conv_out.", layout_.out_channels, 3);

    Tensor out({N, x.C, x.H, x.W});
    for (int n = 0; n < N; ++n)
      for (int c = 0; c < x.C; ++c)
        for (int64_t p = 0; p < x.pixels(); ++p)
          out.data[(static_cast<size_t>(n) * x.C + c) * x.pixels() + p] = x.data[(n * x.pixels() + p) * x.C + c];
    return out;
  }

 private:
  Activation conv(const Activation& in, const std::string& prefix, int out_channels, int k) const {
    Activation out(in.N, in.H, in.W, out_channels);
    cpu::vae_conv2d(in.data.data(), weights_.at(prefix + "weight").ptr(), weights_.at(prefix + "bias").ptr(),
                    out.data.data(), in.N, in.H, in.W, in.C, out_channels, k);
    return out;
  }

  void norm(Activation& x, const std::string& prefix, bool silu) const {
    cpu::group_norm(x.data.data(), weights_.at(prefix + "weight").ptr(), weights_.at(prefix + "bias").ptr(),
                    x.data.data(), x.N, x.pixels(), x.C, config_.norm_num_groups, config_.norm_eps, silu);
  }

  // x + conv2(silu(norm2(conv1(silu(norm1(x)))))), x through a 1x1 conv when channels change.
  Activation resnet(const Activation& x, const vae::ResnetLayout& r) const {
    Activation h = x;
    norm(h, r.prefix + "norm1.", true);
    h = conv(h, r.prefix + "conv1.", r.out_channels, 3);
    norm(h, r.prefix + "norm2.", true);
    h = conv(h, r.prefix + "conv2.", r.out_channels, 3);
    const Activation shortcut = r.has_shortcut() ? conv(x, r.prefix + "conv_shortcut.", r.out_channels, 1) : x;
    for (size_t i = 0; i < h.data.size(); ++i) h.data[i] += shortcut.data[i];
    return h;
  }

  // x + to_out(softmax(q k^T / sqrt(C)) v), q, k, v = to_q/k/v(group_norm(x)): one head over all
  // pixels of an image.
  Activation attention(const Activation& x) const {
    const std::string prefix = vae::kMidAttentionPrefix;
    Activation h = x;
    norm(h, prefix + "group_norm.", false);
    // The projections are Linear layers on each pixel: 1x1 convolutions.
    const Activation q = conv(h, prefix + "to_q.", x.C, 1);
    const Activation k = conv(h, prefix + "to_k.", x.C, 1);
    const Activation v = conv(h, prefix + "to_v.", x.C, 1);
    const int64_t P = x.pixels();
    const int C = x.C;
    const double scale = 1.0 / std::sqrt(static_cast<double>(C));
    Activation mixed(x.N, x.H, x.W, C);
    std::vector<float> scores(static_cast<size_t>(P) * P);
    for (int n = 0; n < x.N; ++n) {
      const float* qn = q.data.data() + n * P * C;
      const float* kn = k.data.data() + n * P * C;
      const float* vn = v.data.data() + n * P * C;
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < P; ++i)
        for (int64_t j = 0; j < P; ++j) {
          double dot = 0;
          for (int c = 0; c < C; ++c) dot += static_cast<double>(qn[i * C + c]) * kn[j * C + c];
          scores[i * P + j] = static_cast<float>(dot * scale);
        }
      cpu::vae_softmax(scores.data(), scores.data(), P, P);
#pragma omp parallel
      {
        std::vector<double> acc(C);
#pragma omp for schedule(static)
        for (int64_t i = 0; i < P; ++i) {
          std::fill(acc.begin(), acc.end(), 0.0);
          for (int64_t j = 0; j < P; ++j) {
            const double w = scores[i * P + j];
            for (int c = 0; c < C; ++c) acc[c] += w * vn[j * C + c];
          }
          for (int c = 0; c < C; ++c) mixed.data[(n * P + i) * C + c] = static_cast<float>(acc[c]);
        }
      }
    }
    Activation out = conv(mixed, prefix + "to_out.0.", C, 1);
    for (size_t i = 0; i < out.data.size(); ++i) out.data[i] += x.data[i];
    return out;
  }

  VaeConfig config_;
  vae::DecoderLayout layout_;
  VaeWeights weights_;
};

}  // namespace

std::unique_ptr<VaeDecoder> make_cpu_vae_decoder(const VaeConfig& config, const VaeWeights& weights,
                                                 Precision precision) {
  if (precision != Precision::fp32)
    throw Error(ErrorKind::invalid_argument,
                std::string("the CPU VAE decoder runs in fp32 only, not ") + precision_name(precision));
  return std::make_unique<CpuVaeDecoder>(config, weights);
}

}  // namespace dit
