// GEMM plans (model/gemm_plan.h): parsing, writing and choosing the file for a device.
#include "model/gemm_plan.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <set>
#include <tuple>

#include "core/error.h"
#include "core/files.h"

namespace dit {
namespace {

using nlohmann::json;

const std::set<std::string> kDtypes = {"f32", "f16", "bf16"};
const std::set<std::string> kComputes = {"fp32", "tf32"};
const std::set<std::string> kEpilogues = {"none", "bias", "gelu_bias"};

class PlanReader {
 public:
  explicit PlanReader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw Error(ErrorKind::invalid_file, "GEMM plan " + source_ + ": " + field + ": " + what);
  }

  const json& member(const json& object, const std::string& field, const std::string& name) const {
    if (!object.contains(name)) fail(field + "." + name, "missing");
    return object.at(name);
  }

  void only(const json& object, const std::string& field, const std::set<std::string>& names) const {
    if (!object.is_object()) fail(field, "must be an object");
    for (const auto& [name, value] : object.items())
      if (!names.count(name)) fail(field + "." + name, "unknown field");
  }

  std::string text(const json& object, const std::string& field, const std::string& name) const {
    const json& value = member(object, field, name);
    if (!value.is_string()) fail(field + "." + name, "must be a string");
    return value.get<std::string>();
  }

  std::string one_of(const json& object, const std::string& field, const std::string& name,
                     const std::set<std::string>& allowed) const {
    std::string value = text(object, field, name);
    if (!allowed.count(value)) fail(field + "." + name, "'" + value + "' is not an allowed value");
    return value;
  }

  int64_t integer(const json& object, const std::string& field, const std::string& name, int64_t low,
                  int64_t high) const {
    const json& value = member(object, field, name);
    if (!value.is_number_integer()) fail(field + "." + name, "must be an integer");
    const int64_t v = value.get<int64_t>();
    if (v < low || v > high)
      fail(field + "." + name,
           std::to_string(v) + " is outside [" + std::to_string(low) + ", " + std::to_string(high) + "]");
    return v;
  }

  double number(const json& object, const std::string& field, const std::string& name) const {
    const json& value = member(object, field, name);
    if (!value.is_number() || value.get<double>() < 0.0) fail(field + "." + name, "must be a non-negative number");
    return value.get<double>();
  }

 private:
  std::string source_;
};

}  // namespace

bool GemmPlanKey::operator<(const GemmPlanKey& o) const {
  return std::tie(M, N, K, operands, output, compute, epilogue) <
         std::tie(o.M, o.N, o.K, o.operands, o.output, o.compute, o.epilogue);
}

bool GemmPlanKey::operator==(const GemmPlanKey& o) const {
  return std::tie(M, N, K, operands, output, compute, epilogue) ==
         std::tie(o.M, o.N, o.K, o.operands, o.output, o.compute, o.epilogue);
}

bool GemmPlanDevice::operator==(const GemmPlanDevice& o) const {
  return std::tie(gpu, compute_capability, cublaslt_version, workspace_bytes) ==
         std::tie(o.gpu, o.compute_capability, o.cublaslt_version, o.workspace_bytes);
}

std::string GemmPlanKey::describe() const {
  return "M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K) + " " + operands + "->" +
         output + " " + compute + " " + epilogue;
}

std::string GemmPlanDevice::describe() const {
  return gpu + " (compute capability " + compute_capability + ", cuBLASLt " + std::to_string(cublaslt_version) +
         ", workspace " + std::to_string(workspace_bytes) + " bytes)";
}

const GemmPlanChoice* GemmPlan::find(const GemmPlanKey& key) const {
  for (const GemmPlanChoice& choice : choices)
    if (choice.key == key) return &choice;
  return nullptr;
}

GemmPlan parse_gemm_plan(const std::string& text, const std::string& source) {
  const PlanReader r(source);
  json document;
  try {
    document = json::parse(text);
  } catch (const json::exception& error) {
    r.fail("document", std::string("not JSON: ") + error.what());
  }
  r.only(document, "plan", {"format", "device", "method", "choices"});
  if (r.text(document, "plan", "format") != kGemmPlanFormat)
    r.fail("plan.format", "must be \"" + std::string(kGemmPlanFormat) + "\"");

  GemmPlan plan;
  plan.source = source;
  const json& device = r.member(document, "plan", "device");
  r.only(device, "plan.device", {"gpu", "compute_capability", "cublaslt_version", "workspace_bytes"});
  plan.device.gpu = r.text(device, "plan.device", "gpu");
  plan.device.compute_capability = r.text(device, "plan.device", "compute_capability");
  plan.device.cublaslt_version = r.integer(device, "plan.device", "cublaslt_version", 1, INT64_MAX);
  plan.device.workspace_bytes = r.integer(device, "plan.device", "workspace_bytes", 0, INT64_MAX);
  if (document.contains("method")) plan.method = r.text(document, "plan", "method");

  const json& choices = r.member(document, "plan", "choices");
  if (!choices.is_array()) r.fail("plan.choices", "must be an array");
  std::set<GemmPlanKey> seen;
  for (size_t i = 0; i < choices.size(); ++i) {
    const std::string field = "plan.choices[" + std::to_string(i) + "]";
    const json& c = choices[i];
    r.only(c, field,
           {"M", "N", "K", "operands", "output", "compute", "epilogue", "candidate", "algo", "us", "first_us"});
    GemmPlanChoice choice;
    choice.key.M = static_cast<int>(r.integer(c, field, "M", 1, INT32_MAX));
    choice.key.N = static_cast<int>(r.integer(c, field, "N", 1, INT32_MAX));
    choice.key.K = static_cast<int>(r.integer(c, field, "K", 1, INT32_MAX));
    choice.key.operands = r.one_of(c, field, "operands", kDtypes);
    choice.key.output = r.one_of(c, field, "output", kDtypes);
    choice.key.compute = r.one_of(c, field, "compute", kComputes);
    choice.key.epilogue = r.one_of(c, field, "epilogue", kEpilogues);
    choice.candidate = static_cast<int>(r.integer(c, field, "candidate", 0, 1023));
    const json& algo = r.member(c, field, "algo");
    if (!algo.is_object() || algo.empty()) r.fail(field + ".algo", "must be a non-empty object");
    for (const auto& [name, value] : algo.items()) {
      if (!value.is_number_integer()) r.fail(field + ".algo." + name, "must be an integer");
      choice.algo[name] = value.get<int64_t>();
    }
    choice.us = r.number(c, field, "us");
    choice.first_us = r.number(c, field, "first_us");
    if (!seen.insert(choice.key).second) r.fail(field, "a second choice for " + choice.key.describe());
    plan.choices.push_back(std::move(choice));
  }
  return plan;
}

GemmPlan read_gemm_plan(const std::string& path) { return parse_gemm_plan(read_text_file(path, "GEMM plan "), path); }

std::string gemm_plan_json(const GemmPlan& plan) {
  std::vector<const GemmPlanChoice*> sorted;
  for (const GemmPlanChoice& c : plan.choices) sorted.push_back(&c);
  std::sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) { return a->key < b->key; });
  json choices = json::array();
  for (const GemmPlanChoice* c : sorted) {
    choices.push_back({{"M", c->key.M},
                       {"N", c->key.N},
                       {"K", c->key.K},
                       {"operands", c->key.operands},
                       {"output", c->key.output},
                       {"compute", c->key.compute},
                       {"epilogue", c->key.epilogue},
                       {"candidate", c->candidate},
                       {"algo", c->algo},
                       {"us", c->us},
                       {"first_us", c->first_us}});
  }
  const json document = {{"format", kGemmPlanFormat},
                         {"device",
                          {{"gpu", plan.device.gpu},
                           {"compute_capability", plan.device.compute_capability},
                           {"cublaslt_version", plan.device.cublaslt_version},
                           {"workspace_bytes", plan.device.workspace_bytes}}},
                         {"method", plan.method},
                         {"choices", choices}};
  return document.dump(2) + "\n";
}

void write_gemm_plan(const GemmPlan& plan, const std::string& path) { write_file_atomic(path, gemm_plan_json(plan)); }

std::optional<GemmPlan> select_gemm_plan(const GemmPlanDevice& device, const std::string& setting,
                                         const std::string& directory) {
  if (setting == "off") return std::nullopt;
  if (!setting.empty()) {
    GemmPlan plan = read_gemm_plan(setting);
    if (!(plan.device == device))
      throw Error(ErrorKind::invalid_argument, "DIT_GEMM_PLAN=" + setting + " is a plan for " + plan.device.describe() +
                                                   ", not for this " + device.describe());
    return plan;
  }
  std::error_code error;
  if (directory.empty() || !std::filesystem::is_directory(directory, error)) return std::nullopt;
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(directory, error))
    if (entry.is_regular_file() && entry.path().extension() == ".json") paths.push_back(entry.path().string());
  std::sort(paths.begin(), paths.end());
  std::optional<GemmPlan> found;
  for (const std::string& path : paths) {
    GemmPlan plan = read_gemm_plan(path);
    if (!(plan.device == device)) continue;
    if (found)
      throw Error(ErrorKind::invalid_argument,
                  "two GEMM plans for " + device.describe() + ": " + found->source + " and " + path + " (keep one)");
    found = std::move(plan);
  }
  return found;
}

}  // namespace dit
