// Options every dit-ar subcommand shares; the exit codes it returns are in driver/exit_codes.h.
#pragma once

#include <filesystem>
#include <string>

#include "driver/config.h"
#include "driver/exit_codes.h"

namespace dit::ar {

inline constexpr const char* kDefaultConfigPath = "config/autoresearch.json";

struct CommonOptions {
  std::string config_path = kDefaultConfigPath;  // relative paths are taken from the repository root
  std::string repository;                        // empty: discovered upwards from the current folder
  bool json = false;                             // print JSON instead of the readable report
  std::string progress = "text";                 // --progress of experiment and baseline (driver/progress.h)
};

// The repository's working-tree root: --repo when given, else discovered from the current
// folder. Throws dit::Error(invalid_argument) outside a git repository.
std::filesystem::path resolve_repository_root(const CommonOptions& options);

// Loads and validates the config named by --config (relative to the repository root).
Config load_session_config(const CommonOptions& options);

}  // namespace dit::ar

namespace CLI {
class App;
}

namespace dit::ar {

// Adds --config, --repo (and --json when `with_json`) to a subcommand.
void add_common_options(CLI::App& command, CommonOptions& options, bool with_json);

// Adds a candidate's --classification (required: exact, numerical, approximate or quantization;
// `classification_help` says what it means for the subcommand) and --description (required, one
// line of valid UTF-8: the records are JSON) to `command` (experiment, queue add).
void add_candidate_options(CLI::App& command, std::string& classification, std::string& description,
                           const std::string& classification_help);

// Adds --progress=text|json|none (driver/progress.h) to a subcommand that runs stages.
void add_progress_option(CLI::App& command, CommonOptions& options);

// Ends a subcommand callback with a non-zero exit code (CLI::RuntimeError), or returns for 0.
void finish_with(int exit_code);

}  // namespace dit::ar
