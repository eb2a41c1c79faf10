// DitCheckpoint and DitWeights::load: a safetensors checkpoint checked tensor by tensor against a
// configuration: every expected tensor present with its shape, nothing else, every value finite
// (checked as each piece is read). The engine's
// layout reads each tensor by its own name; diffusers' layout reads it from the names
// diffusers_tensor_names gives (weights_diffusers.cpp).
#include <algorithm>
#include <cstring>
#include <exception>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/safetensors.h"
#include "model/weights.h"

namespace dit {

// The plan of a checkpoint DitCheckpoint keeps (named, not anonymous: its state holds one).
namespace checkpoint_plan {

// A stored tensor and the shape it must have.
struct Part {
  std::string name;
  std::vector<int64_t> shape;
};

// Where each engine tensor comes from, and the stored tensors that must repeat another.
struct Plan {
  std::string layout;  // "" for the engine's own, "diffusers"
  // Engine name -> its parts, concatenated along the first axis; no parts: the fixed sin-cos
  // table (pos_embed of a diffusers checkpoint, which does not save it).
  std::map<std::string, std::vector<Part>> sources;
  // A stored name -> the stored name it must equal byte for byte (diffusers' per-block copies of
  // the one timestep and class embedder).
  std::map<std::string, std::string> copies;
};

}  // namespace checkpoint_plan

namespace {

using checkpoint_plan::Part;
using checkpoint_plan::Plan;

// Enough mismatches to see the pattern (a wrong depth, a wrong hidden size) without a wall.
constexpr size_t kProblemsListed = 8;

Plan engine_plan(const std::map<std::string, std::vector<int64_t>>& expected) {
  Plan plan;
  for (const auto& [name, shape] : expected) plan.sources[name] = {{name, shape}};
  return plan;
}

Plan diffusers_plan(const std::map<std::string, std::vector<int64_t>>& expected, const ModelConfig& config,
                    const SafetensorsFile& file) {
  Plan plan;
  plan.layout = "diffusers";
  for (const auto& [name, shape] : expected) {
    const std::vector<std::string> stored = diffusers_tensor_names(name);
    std::vector<int64_t> part_shape = shape;
    part_shape[0] /= static_cast<int64_t>(stored.size());  // qkv: [3D, ...] from three [D, ...]
    std::vector<Part>& parts = plan.sources[name];
    if (name == "pos_embed" && !file.contains(stored[0])) continue;
    for (const std::string& part : stored) parts.push_back({part, part_shape});
  }
  // Diffusers gives every block its own AdaLayerNormZero.emb, all copies of the original's one
  // t_embedder and y_embedder; its forward uses block 0's for the final layer.
  for (const char* name : {"t_embedder.mlp.0.weight", "t_embedder.mlp.0.bias", "t_embedder.mlp.2.weight",
                           "t_embedder.mlp.2.bias", "y_embedder.embedding_table.weight"}) {
    const std::string first = diffusers_tensor_names(name)[0];  // transformer_blocks.0.norm1.emb...
    const std::string rest = first.substr(std::string("transformer_blocks.0.").size());
    for (int block = 1; block < config.depth; ++block)
      plan.copies["transformer_blocks." + std::to_string(block) + "." + rest] = first;
  }
  return plan;
}

// Diffusers' checkpoints name their blocks transformer_blocks.N; the engine's have none of them.
bool has_diffusers_names(const SafetensorsFile& file) {
  if (file.contains("pos_embed.proj.weight") || file.contains("proj_out_2.weight")) return true;
  const auto after = file.tensors().lower_bound("transformer_blocks.");
  return after != file.tensors().end() && after->first.rfind("transformer_blocks.", 0) == 0;
}

std::string shape_problem(const SafetensorsFile& file, const Part& part) {
  const auto found = file.tensors().find(part.name);
  if (found == file.tensors().end())
    return "missing tensor '" + part.name + "' (expected shape " + shape_string(part.shape) + ")";
  if (found->second.shape != part.shape)
    return "tensor '" + part.name + "' has shape " + shape_string(found->second.shape) + ", expected " +
           shape_string(part.shape);
  return {};
}

// Every mismatch of presence, shape and (for copies) content, in the order of the plan.
std::vector<std::string> plan_problems(const SafetensorsFile& file, const Plan& plan) {
  std::vector<std::string> problems;
  std::set<std::string> used;
  std::map<std::string, std::vector<int64_t>> shapes;  // stored name -> expected shape
  for (const auto& [name, parts] : plan.sources)
    for (const Part& part : parts) {
      used.insert(part.name);
      shapes[part.name] = part.shape;
      if (std::string problem = shape_problem(file, part); !problem.empty())
        problems.push_back(parts.size() > 1 || part.name != name ? problem + " for " + name : problem);
    }
  for (const auto& [copy, original] : plan.copies) {
    used.insert(copy);
    const Part part{copy, shapes.at(original)};
    if (std::string problem = shape_problem(file, part); !problem.empty()) {
      problems.push_back(problem);
      continue;
    }
    if (shape_problem(file, {original, part.shape}).empty()) {
      const TensorView &a = file.at(copy), &b = file.at(original);
      if (a.dtype != b.dtype || a.bytes.size() != b.bytes.size() ||
          std::memcmp(a.bytes.data(), b.bytes.data(), a.bytes.size()) != 0)
        problems.push_back("tensor '" + copy + "' differs from '" + original +
                           "' (the engine has one timestep and class embedder; diffusers repeats it per block)");
    }
  }
  for (const auto& [name, view] : file.tensors())
    if (used.count(name) == 0)
      problems.push_back("unexpected tensor '" + name + "' of shape " + shape_string(view.shape));
  return problems;
}

}  // namespace

struct DitCheckpoint::State {
  SafetensorsFile file;
  ModelConfig config;
  std::map<std::string, std::vector<int64_t>> expected;  // engine name -> shape
  checkpoint_plan::Plan plan;
  Tensor pos_embed;  // the fixed table, when the file does not hold it (plan.sources' empty parts)
};

bool is_diffusers_dit_checkpoint(const std::string& path) { return has_diffusers_names(SafetensorsFile::open(path)); }

DitCheckpoint DitCheckpoint::open(const std::string& path, const ModelConfig& config) {
  config.validate();
  auto state =
      std::make_shared<State>(State{SafetensorsFile::open(path), config, expected_weight_shapes(config), {}, {}});
  const SafetensorsFile& file = state->file;
  state->plan =
      has_diffusers_names(file) ? diffusers_plan(state->expected, config, file) : engine_plan(state->expected);
  const Plan& plan = state->plan;

  const std::vector<std::string> problems = plan_problems(file, plan);
  if (!problems.empty()) {
    std::string message = "checkpoint '" + path + "'" + (plan.layout.empty() ? "" : " (" + plan.layout + " layout)") +
                          " does not match " + (config.name.empty() ? std::string("the configuration") : config.name) +
                          " (" + std::to_string(problems.size()) + " problem" + (problems.size() == 1 ? "" : "s") +
                          "): ";
    for (size_t i = 0; i < problems.size() && i < kProblemsListed; ++i) message += (i ? "; " : "") + problems[i];
    if (problems.size() > kProblemsListed) {
      message += "; and " + std::to_string(problems.size() - kProblemsListed) + " more";
    }
    throw Error(ErrorKind::invalid_file, message);
  }
  if (plan.sources.at("pos_embed").empty()) state->pos_embed = sincos_pos_embed(config.hidden_size, config.grid());
  return DitCheckpoint(std::move(state));
}

const std::string& DitCheckpoint::path() const { return state_->file.path(); }
const ModelConfig& DitCheckpoint::config() const { return state_->config; }
const std::string& DitCheckpoint::layout() const { return state_->plan.layout; }

void DitCheckpoint::read(const std::string& name, size_t first, size_t count, float* out) const {
  const State& state = *state_;
  const auto found = state.plan.sources.find(name);
  if (found == state.plan.sources.end())
    throw Error(ErrorKind::invalid_argument,
                "checkpoint '" + path() + "': " + state.config.name + " has no tensor '" + name + "'");
  const auto numel = static_cast<size_t>(Tensor::count(state.expected.at(name)));
  if (first > numel || count > numel - first)
    throw Error(ErrorKind::invalid_argument, "checkpoint '" + path() + "': elements [" + std::to_string(first) + ", " +
                                                 std::to_string(first + count) + ") of '" + name + "' pass its " +
                                                 std::to_string(numel));
  const std::vector<checkpoint_plan::Part>& parts = found->second;
  if (parts.empty()) {  // the fixed table diffusers does not save
    std::memcpy(out, state.pos_embed.data.data() + first, count * sizeof(float));
    return;
  }
  // The parts are concatenated along the first axis, each numel / parts.size() long.
  const size_t per_part = numel / parts.size();
  while (count > 0) {
    const size_t part = first / per_part, offset = first % per_part;
    const size_t n = std::min(count, per_part - offset);
    state.file.to_finite_float_range(parts[part].name, offset, n, out);
    first += n;
    count -= n;
    out += n;
  }
}

DitWeights DitCheckpoint::read_all() const {
  // Non-finite weights would only show as NaN latents: each tensor is refused by name and first
  // bad element, in the conversion's own pass. The tensors are converted on every core (the
  // mapping is read-only); the first failure in name order is the one reported.
  const std::vector<std::pair<std::string, std::vector<int64_t>>> items(state_->expected.begin(),
                                                                        state_->expected.end());
  std::vector<Tensor> tensors(items.size());
  std::vector<std::exception_ptr> failures(items.size());
  const auto count = static_cast<int64_t>(items.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t i = 0; i < count; ++i) {
    try {
      Tensor tensor(items[i].second);
      read(items[i].first, 0, tensor.data.size(), tensor.ptr());
      tensors[i] = std::move(tensor);
    } catch (...) {
      failures[i] = std::current_exception();
    }
  }
  for (const std::exception_ptr& failure : failures)
    if (failure) std::rethrow_exception(failure);
  DitWeights weights;
  for (size_t i = 0; i < items.size(); ++i) weights.tensors.emplace(items[i].first, std::move(tensors[i]));
  return weights;
}

DitWeights DitWeights::load(const std::string& path, const ModelConfig& config) {
  return DitCheckpoint::open(path, config).read_all();
}

}  // namespace dit
