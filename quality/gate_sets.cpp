// Fixed during a session (quality/ is the evaluator; see quality/README.md).
#include "quality/gate_sets.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/files.h"

namespace dit::quality {

std::vector<GateSet> parse_gate_sets(std::string_view text, const std::string& path) {
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {  // a syntax error, or out_of_range for 1e999
    throw Error(ErrorKind::invalid_file, path + ": not valid JSON (" + error.what() + ")");
  }
  if (!root.is_object() || !root.contains("sets") || !root.at("sets").is_array())
    throw Error(ErrorKind::invalid_file, path + ": expected {\"sets\": [...]}");
  std::vector<GateSet> sets;
  for (const auto& entry : root.at("sets")) {
    GateSet set;
    try {
      set.name = entry.at("name").get<std::string>();
      set.corpus = entry.at("corpus").get<std::string>();
      set.contract = entry.at("contract").get<std::string>();
      set.backend = entry.at("backend").get<std::string>();
      set.precision = entry.at("precision").get<std::string>();
      set.data_dir = entry.at("data_dir").get<std::string>();
    } catch (const nlohmann::json::exception& error) {
      throw Error(ErrorKind::invalid_file, path + ": malformed set entry (" + error.what() + ")");
    }
    if (entry.contains("weights")) {
      const std::string problem = weights_reference_problem(entry.at("weights"));
      if (!problem.empty())
        throw Error(ErrorKind::invalid_file, path + ": set \"" + set.name + "\": field \"weights\" " + problem);
      set.weights = weights_reference_from_json(entry.at("weights"), std::filesystem::path(path).parent_path());
    }
    sets.push_back(set);
  }
  return sets;
}

std::vector<GateSet> load_gate_sets(const std::string& path) { return parse_gate_sets(read_text_file(path), path); }

}  // namespace dit::quality
