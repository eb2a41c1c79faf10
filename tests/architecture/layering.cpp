#include "tests/architecture/layering.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace dit::architecture {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json read_json(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  try {
    return json::parse(in);
  } catch (const json::exception& error) {
    throw std::runtime_error(path.string() + ": " + error.what());
  }
}

// `path` relative to `root` when it lies inside it, else as given.
std::string relative_to(const std::string& path, const fs::path& root) {
  const fs::path p(path);
  if (!p.is_absolute()) return p.lexically_normal().string();
  const fs::path relative = p.lexically_normal().lexically_relative(root.lexically_normal());
  if (relative.empty() || *relative.begin() == "..") return path;
  return relative.string();
}

std::string first_component(const std::string& path) {
  const fs::path p(path);
  return p.empty() || p.is_absolute() ? std::string() : p.begin()->string();
}

bool is_mutable_path(const std::string& relative) {
  const std::string top = first_component(relative);
  return top == "model" || top == "kernels";
}

const std::set<std::string> kRendererTargets = {"dit_quality_renderer", "dit-quality-render"};
const std::set<std::string> kBenchSupportTargets = {"dit_bench_support", "dit_bench_main", "dit_gpu_bench_support",
                                                    "dit_gpu_bench_main"};
const std::set<std::string> kLibraryTypes = {"STATIC_LIBRARY", "SHARED_LIBRARY", "MODULE_LIBRARY", "OBJECT_LIBRARY"};

}  // namespace

TargetGraph load_target_graph(const fs::path& build_dir) {
  const fs::path reply = build_dir / ".cmake" / "api" / "v1" / "reply";
  std::vector<fs::path> indexes;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(reply, error)) {
    if (entry.path().filename().string().rfind("index-", 0) == 0) indexes.push_back(entry.path());
  }
  if (indexes.empty())
    throw std::runtime_error("no file API reply under " + reply.string() +
                             " (write .cmake/api/v1/query/codemodel-v2 there, then configure)");
  std::sort(indexes.begin(), indexes.end());
  const json index = read_json(indexes.back());
  if (!index.contains("reply") || !index["reply"].contains("codemodel-v2"))
    throw std::runtime_error(indexes.back().string() + " holds no codemodel-v2 reply");
  const json codemodel = read_json(reply / index["reply"]["codemodel-v2"]["jsonFile"].get<std::string>());

  TargetGraph graph;
  graph.source_dir = codemodel["paths"]["source"].get<std::string>();
  graph.build_dir = codemodel["paths"]["build"].get<std::string>();
  for (const json& entry : codemodel["configurations"].at(0)["targets"]) {
    const json target_json = read_json(reply / entry["jsonFile"].get<std::string>());
    Target target;
    target.id = target_json["id"].get<std::string>();
    target.name = target_json["name"].get<std::string>();
    target.type = target_json["type"].get<std::string>();
    target.folder = target_json["paths"]["source"].get<std::string>();
    for (const json& source : target_json.value("sources", json::array()))
      target.sources.push_back(relative_to(source["path"].get<std::string>(), graph.source_dir));
    for (const json& artifact : target_json.value("artifacts", json::array()))
      target.artifacts.push_back(relative_to(artifact["path"].get<std::string>(), graph.build_dir));
    if (target_json.contains("link")) {
      for (const json& fragment : target_json["link"].value("commandFragments", json::array())) {
        if (fragment.value("role", "") == "libraries")
          target.link_libraries.push_back(fragment["fragment"].get<std::string>());
      }
    }
    for (const json& dependency : target_json.value("dependencies", json::array()))
      target.dependency_ids.push_back(dependency["id"].get<std::string>());
    graph.targets.push_back(std::move(target));
  }
  return graph;
}

std::string part_of(const Target& target) {
  const std::string top = first_component(target.folder);
  if (top == "core" || top == "kernels" || top == "model" || top == "driver" || top == "tests" || top == "fuzz")
    return top;
  if (top == "quality") return kRendererTargets.count(target.name) ? "quality-renderer" : "quality-judge";
  if (top == "bench") return kBenchSupportTargets.count(target.name) ? "bench-support" : "bench-engine";
  return "other";
}

bool may_use_engine(const std::string& part) {
  return part == "kernels" || part == "model" || part == "quality-renderer" || part == "bench-engine" ||
         part == "tests" || part == "fuzz";
}

std::vector<std::string> layering_violations(const TargetGraph& graph, bool expect_driver) {
  std::map<std::string, const Target*> by_id, by_artifact;
  std::set<std::string> names;
  for (const Target& target : graph.targets) {
    by_id[target.id] = &target;
    names.insert(target.name);
    for (const std::string& artifact : target.artifacts) by_artifact[artifact] = &target;
  }
  std::vector<std::string> violations;
  std::vector<std::string> required = {"dit_core", "dit_quality", "dit-quality"};
  if (expect_driver) required.insert(required.end(), {"dit_ar_core", "dit-ar", "dit-perf-gate"});
  for (const std::string& name : required) {
    if (!names.count(name)) violations.push_back(name + ": missing from the build (the rules cannot be checked)");
  }

  for (const Target& target : graph.targets) {
    const std::string part = part_of(target);
    if (may_use_engine(part) || target.type == "UTILITY" || target.type == "INTERFACE_LIBRARY") continue;
    // What this target's code is made of: itself, the libraries it depends on (transitively), and
    // whatever its link line names.
    std::vector<const Target*> reached = {&target};
    std::set<std::string> seen = {target.id};
    for (size_t i = 0; i < reached.size(); ++i) {
      for (const std::string& id : reached[i]->dependency_ids) {
        auto found = by_id.find(id);
        if (found == by_id.end() || !kLibraryTypes.count(found->second->type) || !seen.insert(id).second) continue;
        reached.push_back(found->second);
      }
    }
    std::vector<std::string> unknown_libraries;
    for (const std::string& fragment : target.link_libraries) {
      const std::string relative = relative_to(fragment, graph.build_dir);
      auto found = by_artifact.find(relative);
      if (found != by_artifact.end()) {
        if (seen.insert(found->second->id).second) reached.push_back(found->second);
      } else if (is_mutable_path(relative) || is_mutable_path(relative_to(fragment, graph.source_dir))) {
        unknown_libraries.push_back(fragment);
      }
    }
    const std::string who = target.name + " (" + part + ")";
    for (const Target* other : reached) {
      const std::string other_part = part_of(*other);
      if (other != &target && (other_part == "model" || other_part == "kernels")) {
        violations.push_back(who + " links " + other->name + " of " + other->folder + "/");
        continue;
      }
      for (const std::string& source : other->sources) {
        if (is_mutable_path(source))
          violations.push_back(who + " compiles " + source + (other == &target ? "" : " through " + other->name));
      }
    }
    for (const std::string& library : unknown_libraries) violations.push_back(who + " links " + library);
  }
  return violations;
}

std::vector<IncludeRule> project_include_rules() {
  const std::vector<std::string> engine = {"model/", "kernels/"};
  return {{"core", engine, {}},
          {"driver", engine, {}},
          {"quality", engine, {"quality/renderer"}},
          {"bench/support", engine, {}},
          {"kernels", {"model/"}, {}}};
}

std::vector<std::string> include_violations(const fs::path& source_dir, const std::vector<IncludeRule>& rules) {
  static const std::regex include_line(R"(^\s*#\s*include\b\s*(.*)$)");
  static const std::regex quoted(R"(^["<]([^">]+)[">])");
  static const std::set<std::string> extensions = {".h", ".hpp", ".cuh", ".c", ".cc", ".cpp", ".cu", ".inl"};
  std::vector<std::string> violations;
  for (const IncludeRule& rule : rules) {
    const fs::path folder = source_dir / rule.folder;
    if (!fs::is_directory(folder)) {
      violations.push_back(rule.folder + "/: not a folder of " + source_dir.string());
      continue;
    }
    for (auto it = fs::recursive_directory_iterator(folder); it != fs::recursive_directory_iterator(); ++it) {
      const std::string relative = it->path().lexically_relative(source_dir).string();
      if (it->is_directory() && std::find(rule.skip.begin(), rule.skip.end(), relative) != rule.skip.end()) {
        it.disable_recursion_pending();
        continue;
      }
      if (!it->is_regular_file() || !extensions.count(it->path().extension().string())) continue;
      std::ifstream in(it->path());
      std::string line;
      for (int number = 1; std::getline(in, line); ++number) {
        std::smatch match;
        if (!std::regex_match(line, match, include_line)) continue;
        const std::string argument = match[1];
        std::smatch target;
        const std::string where = relative + ":" + std::to_string(number) + ": ";
        if (!std::regex_search(argument, target, quoted)) {
          violations.push_back(where + "computed include " + argument);
          continue;
        }
        const std::string path = target[1];
        if (path.find("..") != std::string::npos) violations.push_back(where + "parent-relative include " + path);
        for (const std::string& prefix : rule.forbidden) {
          if (path.rfind(prefix, 0) == 0) violations.push_back(where + "includes " + path);
        }
      }
    }
  }
  return violations;
}

std::vector<std::string> environment_uses(const fs::path& source_dir, const std::vector<std::string>& folders) {
  static const std::regex use(R"(\b(secure_getenv|getenv|setenv|putenv|unsetenv|environ)\b)");
  std::vector<std::string> found;
  for (const std::string& folder : folders) {
    if (!fs::is_directory(source_dir / folder)) {
      found.push_back(folder + "/: not a folder of " + source_dir.string());
      continue;
    }
    for (const auto& entry : fs::recursive_directory_iterator(source_dir / folder)) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path());
      std::string line;
      for (int number = 1; std::getline(in, line); ++number) {
        if (std::regex_search(line, use))
          found.push_back(entry.path().lexically_relative(source_dir).string() + ":" + std::to_string(number) + ": " +
                          line);
      }
    }
  }
  return found;
}

}  // namespace dit::architecture
