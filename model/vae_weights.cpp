// VaeWeights: loading (diffusers or LDM names), shape checks, and seeded random weights.
#include <algorithm>
#include <cmath>
#include <set>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/safetensors.h"
#include "model/vae.h"
#include "model/vae_layout.h"

namespace dit {

const Tensor& VaeWeights::at(const std::string& name) const {
  const auto it = tensors.find(name);
  if (it == tensors.end()) throw Error(ErrorKind::invalid_argument, "VAE weights: no tensor " + name);
  return it->second;
}

static bool is_decoder_parameter(const std::string& name) {
  return name.rfind("decoder.", 0) == 0 || name.rfind("post_quant_conv.", 0) == 0;
}

VaeWeights VaeWeights::load(const std::string& path, const VaeConfig& config) {
  const auto shapes = vae::parameter_shapes(config);
  const SafetensorsFile file = SafetensorsFile::open(path);
  const bool diffusers = file.contains("decoder.mid_block.resnets.0.conv1.weight");
  const bool ldm = file.contains("decoder.mid.block_1.conv1.weight");
  if (!diffusers && !ldm)
    throw Error(ErrorKind::invalid_file,
                path +
                    ": not a VAE decoder checkpoint (neither decoder.mid_block.resnets.0.conv1.weight "
                    "(diffusers) nor decoder.mid.block_1.conv1.weight (LDM) is present)");
  VaeWeights weights;
  std::set<std::string> used;
  for (const auto& [name, shape] : shapes) {
    const std::string stored = diffusers ? name : vae::ldm_name(name, config);
    if (!file.contains(stored))
      throw Error(ErrorKind::invalid_file,
                  path + ": missing tensor " + stored + " (shape " + shape_string(shape) + ") for this VAE config");
    std::vector<int64_t> expected = shape;
    // LDM's attention projections are 1x1 convolutions: [C, C, 1, 1] instead of [C, C].
    const bool as_conv = !diffusers && shape.size() == 2 && name.find("attentions.0.to_") != std::string::npos;
    if (as_conv) expected = {shape[0], shape[1], 1, 1};
    // Its errors name the file, the tensor and the shapes, or the first NaN or infinite element.
    Tensor tensor = file.to_finite_float(stored, expected);
    tensor.shape = shape;
    weights.tensors.emplace(name, std::move(tensor));
    used.insert(stored);
  }
  for (const auto& [stored, view] : file.tensors())
    if (is_decoder_parameter(stored) && !used.count(stored))
      throw Error(ErrorKind::invalid_file,
                  path + ": unexpected tensor " + stored + " (the checkpoint does not match the VAE config)");
  return weights;
}

namespace {

// A counter-based generator (splitmix64) per tensor, keyed by the seed and the tensor's name,
// so every tensor's values depend on nothing else. Draw k of the stream is mix(key + (k + 1) *
// golden); normal pair p (values 2p and 2p + 1, Box-Muller) takes draws 2p and 2p + 1, so any
// pair can be computed on its own and a tensor fills on every core with the same values.
class NamedNormal {
 public:
  NamedNormal(uint64_t seed, const std::string& name) : key_(seed) {
    for (unsigned char c : name) key_ = (key_ ^ c) * 0x100000001b3ull;  // FNV-1a style mix
  }
  // Values 2p (cos branch) and 2p + 1 (sin branch).
  void pair(uint64_t p, double& first, double& second) const {
    const double u1 = (static_cast<double>(draw(2 * p) >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
    const double u2 = static_cast<double>(draw(2 * p + 1) >> 11) * 0x1.0p-53;      // [0, 1)
    const double radius = std::sqrt(-2.0 * std::log(u1));
    first = radius * std::cos(2.0 * M_PI * u2);
    second = radius * std::sin(2.0 * M_PI * u2);
  }

 private:
  uint64_t draw(uint64_t k) const {
    uint64_t z = key_ + (k + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t key_;
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

// Weights ~ N(0, 1/fan_in) keep activations of unit scale through the depth of the decoder;
// norm gains near 1 and small biases make every parameter matter.
VaeWeights VaeWeights::random(const VaeConfig& config, uint64_t seed) {
  const auto shapes = vae::parameter_shapes(config);
  std::vector<std::pair<std::string, std::vector<int64_t>>> order(shapes.begin(), shapes.end());
  // Largest first, one tensor per task: every core allocates (page faults included) and fills
  // whole tensors, and the last tasks are the smallest. Each tensor's values depend only on the
  // seed and its name, so they are the same for any schedule.
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return Tensor::count(a.second) > Tensor::count(b.second); });
  std::vector<Tensor> made(order.size());
  const auto tasks = static_cast<int64_t>(order.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t t = 0; t < tasks; ++t) {
    const auto& [name, shape] = order[static_cast<size_t>(t)];
    Tensor tensor(shape);
    const NamedNormal normal(seed, name);
    const bool is_norm = name.find("norm") != std::string::npos;
    double mean = 0, std = 0.05;
    if (is_norm && ends_with(name, ".weight")) {
      mean = 1.0;
      std = 0.1;
    } else if (ends_with(name, ".weight")) {
      int64_t fan_in = 1;
      for (size_t i = 1; i < shape.size(); ++i) fan_in *= shape[i];
      std = 1.0 / std::sqrt(static_cast<double>(fan_in));
    }
    const auto n = static_cast<int64_t>(tensor.data.size());
    float* values = tensor.data.data();
    for (int64_t p = 0; p < (n + 1) / 2; ++p) {
      double first = 0, second = 0;
      normal.pair(static_cast<uint64_t>(p), first, second);
      values[2 * p] = static_cast<float>(mean + std * first);
      if (2 * p + 1 < n) values[2 * p + 1] = static_cast<float>(mean + std * second);
    }
    made[static_cast<size_t>(t)] = std::move(tensor);
  }
  VaeWeights weights;
  for (size_t t = 0; t < order.size(); ++t) weights.tensors.emplace(order[t].first, std::move(made[t]));
  return weights;
}

}  // namespace dit
