// Fixed during a session (quality/ is the evaluator; see quality/README.md).
#include "quality/store.h"

#include <chrono>
#include <cstring>
#include <filesystem>
#include <span>

#include "core/error.h"
#include "core/files.h"
#include "core/safetensors.h"
#include "core/sha256.h"

namespace dit::quality {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json parse_json_file(const std::string& path) {
  try {
    return json::parse(read_text_file(path));
  } catch (const json::parse_error& error) {
    throw Error(ErrorKind::invalid_file, path + ": not valid JSON (" + error.what() + ")");
  }
}

std::string string_field(const json& object, const char* key, const std::string& label) {
  if (!object.contains(key) || !object.at(key).is_string())
    throw Error(ErrorKind::invalid_file, label + ": missing string field \"" + key + "\"");
  return object.at(key).get<std::string>();
}

// Relative path -> sha256 of every regular file under golden/, plus scores.json.
std::map<std::string, std::string> hash_baseline_files(const BaselinePaths& paths) {
  std::map<std::string, std::string> hashes;
  const fs::path root(paths.root);
  for (const std::string& folder : {paths.golden(), paths.reference()}) {
    if (!fs::is_directory(folder)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(folder)) {
      if (entry.is_regular_file())
        hashes[fs::relative(entry.path(), root).generic_string()] = sha256_file(entry.path().string());
    }
  }
  for (const std::string& file : {paths.scores(), paths.reference_scores()}) {
    if (fs::is_regular_file(file)) hashes[fs::path(file).filename().string()] = sha256_file(file);
  }
  return hashes;
}

// "weights" of a render.json case: {"path", "sha256"} or {"seed"}.
WeightsUsed weights_from_json(const json& value, const std::string& where) {
  WeightsUsed used;
  if (value.is_object() && value.contains("seed") && value.size() == 1 && value.at("seed").is_number_unsigned()) {
    used.seed = value.at("seed").get<uint64_t>();
    return used;
  }
  const std::string problem = weights_reference_problem(value);
  if (!problem.empty())
    throw Error(ErrorKind::invalid_file,
                where + ": \"weights\" must be {\"seed\": N} or a checkpoint reference, which " + problem);
  used.checkpoint = weights_reference_from_json(value, {});
  return used;
}

}  // namespace

bool WeightsUsed::same_as(const WeightsUsed& other) const {
  if (checkpoint || other.checkpoint)
    return checkpoint && other.checkpoint && checkpoint->sha256 == other.checkpoint->sha256;
  return seed == other.seed;
}

std::string WeightsUsed::describe() const {
  if (checkpoint) return "checkpoint " + checkpoint->path + " (sha256 " + checkpoint->sha256 + ")";
  return "no checkpoint (the embedded default weights, weights_seed " + std::to_string(seed) + ")";
}

json WeightsUsed::to_json() const {
  if (checkpoint) return {{"path", checkpoint->path}, {"sha256", checkpoint->sha256}};
  return {{"seed", seed}};
}

std::vector<std::string> weights_differences(const Corpus& corpus, const RenderManifest& golden,
                                             const RenderManifest& candidate) {
  std::vector<std::string> differences;
  for (const Case& c : corpus.cases) {
    const auto golden_case = golden.cases.find(c.id), candidate_case = candidate.cases.find(c.id);
    if (golden_case == golden.cases.end() || candidate_case == candidate.cases.end()) continue;  // scored as missing
    const WeightsUsed as_the_corpus_said{std::nullopt, c.weights_seed};
    const WeightsUsed& was = golden_case->second.weights.value_or(as_the_corpus_said);
    const WeightsUsed& is = candidate_case->second.weights.value_or(as_the_corpus_said);
    if (!was.same_as(is))
      differences.push_back("case " + c.id + " was rendered from " + is.describe() + ", the baseline from " +
                            was.describe());
  }
  return differences;
}

std::string latent_file_name(const std::string& case_id) { return case_id + ".latent.safetensors"; }
std::string image_file_name(const std::string& case_id) { return case_id + ".png"; }

json RenderManifest::to_json() const {
  json out = {{"set", set},         {"corpus", corpus_name},  {"corpus_sha256", corpus_sha256},
              {"backend", backend}, {"precision", precision}, {"cases", json::object()}};
  for (const auto& [id, record] : cases) {
    out["cases"][id] = {{"latent", latent_file_name(id)},
                        {"image", image_file_name(id)},
                        {"latent_sha256", record.latent_sha256},
                        {"image_sha256", record.image_sha256},
                        {"output_sha256", record.output_sha256},
                        {"deterministic", record.deterministic},
                        {"seconds", record.seconds}};
    if (record.weights) out["cases"][id]["weights"] = record.weights->to_json();
  }
  return out;
}

RenderManifest RenderManifest::from_json(const json& root, const std::string& label) {
  if (!root.is_object() || !root.contains("cases") || !root.at("cases").is_object())
    throw Error(ErrorKind::invalid_file, label + ": expected an object with a \"cases\" object");
  RenderManifest manifest;
  manifest.set = string_field(root, "set", label);
  manifest.corpus_name = string_field(root, "corpus", label);
  manifest.corpus_sha256 = string_field(root, "corpus_sha256", label);
  manifest.backend = string_field(root, "backend", label);
  manifest.precision = string_field(root, "precision", label);
  for (const auto& [id, entry] : root.at("cases").items()) {
    const std::string where = label + ": cases." + id;
    if (!entry.is_object() || !entry.contains("deterministic") || !entry.at("deterministic").is_boolean())
      throw Error(ErrorKind::invalid_file, where + " needs a boolean \"deterministic\"");
    RenderRecord record;
    record.latent_sha256 = string_field(entry, "latent_sha256", where);
    record.image_sha256 = string_field(entry, "image_sha256", where);
    record.output_sha256 = string_field(entry, "output_sha256", where);
    record.deterministic = entry.at("deterministic").get<bool>();
    record.seconds = entry.value("seconds", 0.0);
    if (entry.contains("weights")) record.weights = weights_from_json(entry.at("weights"), where);
    manifest.cases[id] = record;
  }
  return manifest;
}

RenderManifest load_render_manifest(const std::string& render_dir) {
  const std::string path = render_dir + "/render.json";
  return RenderManifest::from_json(parse_json_file(path), path);
}

void save_render_manifest(const std::string& render_dir, const RenderManifest& manifest) {
  write_file_atomic(render_dir + "/render.json", manifest.to_json().dump(2) + "\n", ParentFolders::create);
}

BaselinePaths baseline_paths(const std::string& baseline_dir, const std::string& set) {
  return BaselinePaths{baseline_dir + "/quality/" + set};
}

bool baseline_recorded(const BaselinePaths& paths) { return fs::exists(paths.manifest()); }

void write_baseline_manifest(const BaselinePaths& paths, const std::string& set, const Corpus& corpus,
                             const Contract& contract, const RenderManifest& golden) {
  if (baseline_recorded(paths))
    throw Error(ErrorKind::invalid_argument,
                "a baseline is already recorded at " + paths.root + "; golden outputs are never regenerated");
  const auto now = std::chrono::system_clock::now();
  json weights = json::object();
  for (const auto& [id, record] : golden.cases) {
    if (record.weights) weights[id] = record.weights->to_json();
  }
  json manifest = {
      {"format", 1},
      {"set", set},
      {"corpus", corpus.name},
      {"corpus_sha256", corpus.sha256},
      {"contract_sha256", contract.sha256},
      {"backend", golden.backend},
      {"precision", golden.precision},
      {"recorded_unix_seconds", std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count()},
      {"weights", weights},
      {"files", hash_baseline_files(paths)}};
  write_file_atomic(paths.manifest(), manifest.dump(2) + "\n", ParentFolders::create);
}

std::vector<std::string> verify_baseline(const BaselinePaths& paths, const Corpus& corpus, const Contract& contract) {
  std::vector<std::string> problems;
  const json manifest = parse_json_file(paths.manifest());
  if (!manifest.is_object() || !manifest.contains("files") || !manifest.at("files").is_object())
    return {paths.manifest() + ": no \"files\" table"};
  if (manifest.value("corpus_sha256", "") != corpus.sha256)
    problems.push_back("the baseline was recorded for another version of " + corpus.name +
                       " (the corpus is fixed during a session)");
  if (manifest.value("contract_sha256", "") != contract.sha256)
    problems.push_back("the baseline was recorded under another version of the contract " + contract.path);
  const std::map<std::string, std::string> actual = hash_baseline_files(paths);
  for (const auto& [file, hash] : manifest.at("files").items()) {
    auto found = actual.find(file);
    if (found == actual.end()) {
      problems.push_back("baseline file " + file + " is missing");
    } else if (!hash.is_string() || found->second != hash.get<std::string>()) {
      problems.push_back("baseline file " + file + " changed since the baseline was recorded (sha256 differs)");
    }
  }
  for (const auto& [file, hash] : actual) {
    if (!manifest.at("files").contains(file))
      problems.push_back("baseline file " + file + " was added after the baseline was recorded");
  }
  return problems;
}

bool identical_bytes(const RenderedCase& a, const RenderedCase& b) {
  return a.latent.shape == b.latent.shape &&
         std::memcmp(a.latent.ptr(), b.latent.ptr(), a.latent.data.size() * sizeof(float)) == 0 &&
         a.image.width == b.image.width && a.image.height == b.image.height && a.image.rgb == b.image.rgb;
}

std::string output_hash(const Tensor& latent, const Image& image) {
  Sha256 hash;
  hash.update(std::as_bytes(std::span(latent.data)));
  hash.update(std::as_bytes(std::span(image.rgb)));
  return hash.hex_digest();
}

RenderRecord write_rendered_case(const std::string& out_dir, const std::string& case_id, const RenderedCase& rendered,
                                 Durability durability) {
  const std::string latent_path = out_dir + "/" + latent_file_name(case_id);
  const std::string image_path = out_dir + "/" + image_file_name(case_id);
  write_safetensors(latent_path, {{kLatentTensorName, rendered.latent}}, {{"case", case_id}}, DType::F32, durability);
  write_png(image_path, rendered.image, durability);
  RenderRecord record;
  record.latent_sha256 = sha256_file(latent_path);
  record.image_sha256 = sha256_file(image_path);
  record.output_sha256 = output_hash(rendered.latent, rendered.image);
  return record;
}

}  // namespace dit::quality
