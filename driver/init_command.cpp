// dit-ar init: starts a research session on branch autoresearch/<tag> with a clean tree,
// locking the fixed paths, the config and the contract by their git ids at HEAD.
#include <iostream>

#include <CLI/CLI.hpp>

#include "driver/lock_file.h"
#include "driver/session.h"
#include "driver/subcommands.h"

namespace dit::ar {

namespace fs = std::filesystem;

namespace {

int run_init(const CommonOptions& options, const std::string& lane_name) {
  SessionContext context = open_session_context(options);
  const Config& config = context.config;
  const Lane& lane = config.lane(lane_name.empty() ? config.default_lane : lane_name);
  GitRepository& repository = *context.repository;

  auto branch = repository.current_branch();
  if (!branch || branch->rfind(config.branch_prefix, 0) != 0 || branch->size() == config.branch_prefix.size()) {
    refuse("a session runs on a branch named " + config.branch_prefix + "<tag>; the checkout is on " +
               (branch ? "'" + *branch + "'" : std::string("a detached HEAD")),
           "git switch -c " + config.branch_prefix + "<tag>   (e.g. " + config.branch_prefix + "nov29)");
  }
  std::string state_relative = fs::relative(config.state_dir, context.root).generic_string();
  if (!repository.is_ignored(state_relative + "/")) {
    refuse("the state directory " + state_relative + "/ is not git-ignored (its files would dirty the tree)",
           "add the line '/" + state_relative + "/' to .gitignore and commit it");
  }
  if (context.state.has_session()) {
    nlohmann::json existing = context.state.load_session();
    refuse("a session already exists in " + context.state.root().string() + " (branch " +
               existing.value("branch", "?") + ")",
           "continue it with dit-ar experiment, or remove " + context.state.root().string() + " to start over");
  }
  validate_contract(config);
  nlohmann::json session_stub{{"branch", *branch}};
  require_branch_and_clean_tree(context, session_stub);

  fs::create_directories(context.state.root());
  LockFile lock(context.state.lock_file());
  // With --json, stdout carries only the JSON document; progress goes to stderr.
  std::ostream& progress = options.json ? std::cerr : std::cout;
  const std::string head = repository.head_commit();
  nlohmann::json locks = compute_locks(config, repository, head);
  nlohmann::json session{{"version", 1},
                         {"project", config.project},
                         {"tag", branch->substr(config.branch_prefix.size())},
                         {"branch", *branch},
                         {"lane", lane.name},
                         {"init_commit", head},
                         {"created", utc_timestamp()},
                         {"config", fs::relative(config.path, context.root).generic_string()},
                         {"mutable_paths", config.mutable_paths},
                         {"locks", locks}};
  // Before the session exists, so a failing index leaves no half-made session behind.
  if (fs::is_directory(config.source_dir / config.knowledge_dir)) {
    rebuild_knowledge_index(config, progress);
  } else {
    progress << "  no handbook at " << config.knowledge_dir << ": knowledge index not built\n";
  }
  context.state.store_session(session);
  progress << "dit-ar init: session " << session["tag"].get<std::string>() << " on " << *branch << " at "
           << short_id(head) << ", lane " << lane.name << "\n";
  for (const auto& [path, id] : locks.items()) {
    progress << "  locked " << path << " " << (id.is_null() ? "(absent)" : id.get<std::string>().substr(0, 8)) << "\n";
  }
  print_result_block(std::cout,
                     {{"status", "INITIALISED"},
                      {"branch", *branch},
                      {"commit", head},
                      {"lane", lane.name},
                      {"locked_paths", std::to_string(locks.size())},
                      {"state_dir", context.state.root().string()},
                      {"next", "dit-ar baseline"}},
                     options.json);
  return kExitKeep;
}

}  // namespace

void add_init_command(CLI::App& app, CommonOptions& options) {
  auto lane = std::make_shared<std::string>();
  CLI::App* command = app.add_subcommand(
      "init",
      "Start a research session: requires branch autoresearch/<tag> and a clean tree; locks the fixed paths, the "
      "config and the quality contract by their git tree/blob ids at HEAD; builds the knowledge index.");
  command->add_option("--lane", *lane, "The objective lane (default: the config's default_lane)");
  add_common_options(*command, options, true);
  command->callback([&options, lane] { finish_with(run_init(options, *lane)); });
}

}  // namespace dit::ar
