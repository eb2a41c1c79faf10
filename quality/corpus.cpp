// Fixed during a session (quality/ is the evaluator; see quality/README.md).
#include "quality/corpus.h"

#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/files.h"
#include "core/sha256.h"

namespace dit::quality {

namespace {

using nlohmann::json;

const std::set<std::string> kKnownFields = {"id",      "model",        "image_size", "class_label", "seed",
                                            "sampler", "steps",        "cfg_scale",  "batch",       "critical",
                                            "vae",     "weights_seed", "weights"};

// The most images one case's request may hold: the throughput lane's 32 with room, and far below
// what a 24 GB card renders at 512 in fp32.
constexpr int64_t kMaxCaseBatch = 64;

class LineReader {
 public:
  LineReader(const std::string& label, int line, const json& object) : label_(label), line_(line), object_(object) {}

  [[noreturn]] void fail(const std::string& problem) const {
    throw Error(ErrorKind::invalid_file, label_ + ":" + std::to_string(line_) + ": " + problem);
  }
  const json& required(const char* key) const {
    if (!object_.contains(key)) fail(std::string("missing field \"") + key + "\"");
    return object_.at(key);
  }
  std::string string(const char* key) const {
    const json& value = required(key);
    if (!value.is_string() || value.get<std::string>().empty())
      fail(std::string("field \"") + key + "\" must be a non-empty string");
    return value.get<std::string>();
  }
  int64_t integer(const char* key, int64_t low, int64_t high) const {
    const json& value = required(key);
    if (!value.is_number_integer() || value.get<int64_t>() < low || value.get<int64_t>() > high)
      fail(std::string("field \"") + key + "\" must be an integer in [" + std::to_string(low) + ", " +
           std::to_string(high) + "]");
    return value.get<int64_t>();
  }
  uint64_t unsigned_integer(const char* key) const {
    const json& value = required(key);
    if (!value.is_number_unsigned()) fail(std::string("field \"") + key + "\" must be a non-negative integer");
    return value.get<uint64_t>();
  }

 private:
  const std::string& label_;
  int line_;
  const json& object_;
};

bool valid_id(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  }
  return true;
}

Case parse_case(const json& object, const std::string& label, int line) {
  const LineReader read(label, line, object);
  if (!object.is_object()) read.fail("a case must be a JSON object");
  for (const auto& [key, value] : object.items()) {
    if (!kKnownFields.count(key)) read.fail("unknown field \"" + key + "\"");
  }
  Case c;
  c.line = line;
  c.id = read.string("id");
  if (!valid_id(c.id)) read.fail("id \"" + c.id + "\" must be 1-64 characters of [A-Za-z0-9_-]");
  c.model = read.string("model");
  c.image_size = static_cast<int>(read.integer("image_size", 8, 4096));
  if (c.image_size % 8 != 0) read.fail("image_size must be a multiple of 8");
  c.class_label = static_cast<int>(read.integer("class_label", 0, 1 << 20));
  c.seed = read.unsigned_integer("seed");
  c.sampler = read.string("sampler");
  if (c.sampler != "ddpm" && c.sampler != "ddim") read.fail("sampler must be \"ddpm\" or \"ddim\"");
  c.steps = static_cast<int>(read.integer("steps", 1, 1000));
  const json& cfg = read.required("cfg_scale");
  if (!cfg.is_number() || !std::isfinite(cfg.get<double>()) || cfg.get<double>() < 1.0)
    read.fail("field \"cfg_scale\" must be a number >= 1");
  c.cfg_scale = cfg.get<double>();
  if (object.contains("batch")) c.batch = static_cast<int>(read.integer("batch", 1, kMaxCaseBatch));
  const json& critical = read.required("critical");
  if (!critical.is_boolean()) read.fail("field \"critical\" must be true or false");
  c.critical = critical.get<bool>();
  if (object.contains("vae")) {
    c.vae = read.string("vae");
    if (c.vae != "sd" && c.vae != "tiny") read.fail("vae must be \"sd\" or \"tiny\"");
  }
  if (object.contains("weights_seed")) c.weights_seed = read.unsigned_integer("weights_seed");
  if (object.contains("weights")) {
    if (object.contains("weights_seed"))
      read.fail("fields \"weights\" and \"weights_seed\" exclude each other (a checkpoint, or seeded random weights)");
    const std::string problem = weights_reference_problem(object.at("weights"));
    if (!problem.empty()) read.fail("field \"weights\" " + problem);
    c.weights = weights_reference_from_json(object.at("weights"), std::filesystem::path(label).parent_path());
  }
  return c;
}

}  // namespace

bool is_tiny_model(const std::string& model) { return model == "tiny_a" || model == "tiny_b"; }

std::string model_problem(const Case& c) {
  if (is_tiny_model(c.model)) return {};
  if (c.image_size != 256 && c.image_size != 512)
    return "image size " + std::to_string(c.image_size) + " is not supported (256 or 512)";
  std::string key;
  for (char ch : c.model) key += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  if (key.rfind("DIT-", 0) == 0) key = key.substr(4);
  std::string known;
  for (const char* family : {"S", "B", "L", "XL"}) {
    for (const char* patch : {"2", "4", "8"}) {
      known += std::string(known.empty() ? "" : ", ") + "DiT-" + family + "/" + patch;
      for (const char* separator : {"/", "-"})
        if (key == std::string(family) + separator + patch) return {};
    }
  }
  return "unknown model '" + c.model + "' (known: " + known + ")";
}

const Case& Corpus::at(std::string_view id) const {
  for (const Case& c : cases) {
    if (c.id == id) return c;
  }
  throw Error(ErrorKind::invalid_argument, "case \"" + std::string(id) + "\" is not in " + path);
}

bool Corpus::contains(std::string_view id) const {
  for (const Case& c : cases) {
    if (c.id == id) return true;
  }
  return false;
}

std::vector<std::string> Corpus::ids() const {
  std::vector<std::string> out;
  for (const Case& c : cases) out.push_back(c.id);
  return out;
}

std::vector<std::string> Corpus::critical_ids() const {
  std::vector<std::string> out;
  for (const Case& c : cases) {
    if (c.critical) out.push_back(c.id);
  }
  return out;
}

Corpus parse_corpus(std::string_view text, const std::string& label) {
  Corpus corpus;
  corpus.path = label;
  corpus.name = std::filesystem::path(label).filename().string();
  corpus.sha256 = sha256_hex(text);
  std::map<std::string, int> first_line_of;
  int line_number = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    ++line_number;
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] == '#') {
      if (end == text.size()) break;
      continue;
    }
    json object;
    try {
      object = json::parse(line);
    } catch (const json::exception& error) {  // a syntax error, or out_of_range for 1e999
      throw Error(ErrorKind::invalid_file,
                  label + ":" + std::to_string(line_number) + ": not valid JSON (" + error.what() + ")");
    }
    Case c = parse_case(object, label, line_number);
    if (auto seen = first_line_of.find(c.id); seen != first_line_of.end()) {
      throw Error(ErrorKind::invalid_file, label + ":" + std::to_string(line_number) + ": id \"" + c.id +
                                               "\" already used on line " + std::to_string(seen->second));
    }
    first_line_of[c.id] = line_number;
    corpus.cases.push_back(std::move(c));
    if (end == text.size()) break;
  }
  if (corpus.cases.empty()) throw Error(ErrorKind::invalid_file, label + ": the corpus has no cases");
  return corpus;
}

Corpus load_corpus(const std::string& path) { return parse_corpus(read_text_file(path), path); }

}  // namespace dit::quality
