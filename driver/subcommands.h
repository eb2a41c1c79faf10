// How dit-ar's subcommands are registered.
//
// Contract for subcommand authors:
// - A subcommand lives in driver/<name>_command.cpp and defines one registration function
//   declared here. It adds a CLI11 subcommand to `app`, binds its own options, and sets a
//   callback that returns through `throw CLI::RuntimeError(exit_code)` (or simply returns for
//   exit code 0). Errors that are the user's input or setup throw dit::Error; main() prints
//   them and exits with 2 (kExitSetupError).
// - Every subcommand inherits --config PATH, --repo DIR and --json from CommonOptions; call
//   `load_session_config(options)` (driver/common_options.h) to get the validated dit::ar::Config
//   (config.state_dir is absolute).
// - `dit-ar init` builds the knowledge index by calling rebuild_knowledge_index()
//   (knowledge_index.cpp, in dit::ar_core); search_command.cpp and the report*.cpp files are
//   compiled into dit-ar.
// - State a report can read (all under config.state_dir): results.tsv (header row, then one
//   row per experiment; statuses KEEP, DISCARD-QUALITY, DISCARD-PERFORMANCE, CRASH, REJECTED;
//   the baseline row is KEEP with classification "baseline"), best.json, session.json,
//   runs/<id>/ (run.json, logs, junit-*.xml, bench/, gate reports), environment.json.
#pragma once

#include <ostream>

#include <CLI/CLI.hpp>

#include "driver/common_options.h"
#include "driver/config.h"

namespace dit::ar {

void add_doctor_command(CLI::App& app, CommonOptions& options);
void add_init_command(CLI::App& app, CommonOptions& options);
void add_baseline_command(CLI::App& app, CommonOptions& options);
void add_experiment_command(CLI::App& app, CommonOptions& options);
void add_summary_command(CLI::App& app, CommonOptions& options);
void add_status_command(CLI::App& app, CommonOptions& options);
void add_profile_command(CLI::App& app, CommonOptions& options);
void add_search_commands(CLI::App& app, CommonOptions& options);  // driver/search_command.cpp
void add_index_command(CLI::App& app, CommonOptions& options);    // driver/knowledge_index.cpp
void add_report_command(CLI::App& app, CommonOptions& options);   // driver/report_command.cpp
// queue add | list, work and the internal worker (driver/work_command.cpp).
void add_work_commands(CLI::App& app, CommonOptions& options);
// audit BASE [TIP]: every commit changing a mutable path is a kept experiment (driver/audit.h).
void add_audit_command(CLI::App& app, CommonOptions& options);

// Builds (or rebuilds) the knowledge index of config.knowledge_dir under config.state_dir,
// writing progress to `log`; throws dit::Error on failure. Defined in knowledge_index.cpp.
void rebuild_knowledge_index(const Config& config, std::ostream& log);

}  // namespace dit::ar
