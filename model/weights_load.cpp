// DitWeights::load: a safetensors checkpoint checked tensor by tensor against a configuration:
// every expected tensor present with its shape, nothing else, every value finite.
#include <string>
#include <vector>

#include "core/error.h"
#include "core/safetensors.h"
#include "model/weights.h"

namespace dit {

namespace {

// Enough mismatches to see the pattern (a wrong depth, a wrong hidden size) without a wall.
constexpr size_t kProblemsListed = 8;

}  // namespace

DitWeights DitWeights::load(const std::string& path, const ModelConfig& config) {
  config.validate();
  const SafetensorsFile file = SafetensorsFile::open(path);
  const std::map<std::string, std::vector<int64_t>> expected = expected_weight_shapes(config);

  std::vector<std::string> problems;
  for (const auto& [name, shape] : expected) {
    const auto found = file.tensors().find(name);
    if (found == file.tensors().end()) {
      problems.push_back("missing tensor '" + name + "' (expected shape " + shape_string(shape) + ")");
    } else if (found->second.shape != shape) {
      problems.push_back("tensor '" + name + "' has shape " + shape_string(found->second.shape) + ", expected " +
                         shape_string(shape));
    }
  }
  for (const auto& [name, view] : file.tensors()) {
    if (expected.count(name) == 0) {
      problems.push_back("unexpected tensor '" + name + "' of shape " + shape_string(view.shape));
    }
  }
  if (!problems.empty()) {
    std::string message = "checkpoint '" + path + "' does not match " +
                          (config.name.empty() ? std::string("the configuration") : config.name) + " (" +
                          std::to_string(problems.size()) + " problem" + (problems.size() == 1 ? "" : "s") + "): ";
    for (size_t i = 0; i < problems.size() && i < kProblemsListed; ++i) message += (i ? "; " : "") + problems[i];
    if (problems.size() > kProblemsListed) {
      message += "; and " + std::to_string(problems.size() - kProblemsListed) + " more";
    }
    throw Error(ErrorKind::invalid_file, message);
  }

  // Non-finite weights would only show as NaN latents: each tensor is refused by name and first
  // bad element, in the conversion's own pass.
  DitWeights weights;
  for (const auto& [name, shape] : expected) weights.tensors.emplace(name, file.to_finite_float(name, shape));
  return weights;
}

}  // namespace dit
