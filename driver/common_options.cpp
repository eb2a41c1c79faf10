// Resolution of the shared options: repository root and config file.
#include "driver/common_options.h"

#include "driver/git_repository.h"
#include "driver/progress.h"

namespace dit::ar {

std::filesystem::path resolve_repository_root(const CommonOptions& options) {
  std::filesystem::path start =
      options.repository.empty() ? std::filesystem::current_path() : std::filesystem::path(options.repository);
  return GitRepository::discover_workdir(start);
}

Config load_session_config(const CommonOptions& options) {
  std::filesystem::path root = resolve_repository_root(options);
  std::filesystem::path path = options.config_path;
  if (path.is_relative()) path = root / path;
  return load_config(path, root);
}

}  // namespace dit::ar

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace dit::ar {

void add_common_options(CLI::App& command, CommonOptions& options, bool with_json) {
  command
      .add_option("--config", options.config_path, "Session config, relative to the repository root unless absolute")
      ->capture_default_str();
  command.add_option("--repo", options.repository,
                     "The repository's working tree (default: discovered from the current folder)");
  if (with_json) command.add_flag("--json", options.json, "Print JSON instead of the readable report");
}

void add_progress_option(CLI::App& command, CommonOptions& options) {
  command
      .add_option("--progress", options.progress,
                  "How progress is printed while the run goes: text (readable lines), json (one JSON object a "
                  "line on stdout, the decision last, instead of the readable report), none (only the final "
                  "report)")
      ->check(CLI::IsMember(kProgressFormats))
      ->capture_default_str();
}

void finish_with(int exit_code) {
  if (exit_code != 0) throw CLI::RuntimeError(exit_code);
}

void add_candidate_options(CLI::App& command, std::string& classification, std::string& description,
                           const std::string& classification_help) {
  static const std::vector<std::string> classifications{"exact", "numerical", "approximate", "quantization"};
  command.add_option("--classification", classification, classification_help)
      ->required()
      ->check(CLI::IsMember(classifications));
  command.add_option("--description", description, "One line: the hypothesis")
      ->required()
      ->check(CLI::Validator(
          [](std::string& text) {
            // The records are JSON and UTF-8: refuse here what their writers would throw on later.
            try {
              (void)nlohmann::json(text).dump();
              return std::string();
            } catch (const nlohmann::json::type_error&) {
              return std::string("the description is not valid UTF-8");
            }
          },
          "UTF-8"));
}

}  // namespace dit::ar
