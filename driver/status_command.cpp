// dit-ar status: where the session stands and what to do next (which command, or what is
// blocking it), without changing anything.
#include <iostream>

#include <CLI/CLI.hpp>

#include "driver/lock_file.h"
#include "driver/session.h"
#include "driver/subcommands.h"

namespace dit::ar {

namespace {

std::string next_step(const SessionContext& context, const nlohmann::json& session, const std::string& head,
                      const std::optional<std::string>& best) {
  auto branch = context.repository->current_branch();
  if (!branch || *branch != session.value("branch", "")) return "git switch " + session.value("branch", "");
  if (!context.repository->dirty_paths().empty()) return "commit or discard the working-tree changes";
  if (!session.contains("baseline")) return "dit-ar baseline";
  if (!best) return "dit-ar baseline";
  if (head == *best) return "commit one hypothesis, then dit-ar experiment --classification C --description D";
  if (context.repository->is_descendant_of(*best, head)) return "git reset --hard " + std::string(kBestRef);
  auto parents = context.repository->parents(head);
  if (parents.size() == 1 && parents.front() == *best) return "dit-ar experiment --classification C --description D";
  return "squash to one commit on top of the best: git reset --soft " + short_id(*best) + " && git commit";
}

int run_status(const CommonOptions& options) {
  SessionContext context = open_session_context(options);
  nlohmann::json session = context.state.load_session();
  const std::string head = context.repository->head_commit();
  auto best = context.repository->resolve_reference(kBestRef);
  auto branch = context.repository->current_branch();
  auto holder = LockFile::holder(context.state.lock_file());
  auto inflight = context.state.load_inflight();
  auto discarded = context.repository->references_matching(std::string(kDiscardedRefPrefix) + "*");
  Fields fields{
      {"session", session.value("tag", "")},
      {"branch", branch ? *branch : "(detached)"},
      {"session_branch", session.value("branch", "")},
      {"lane", session.value("lane", "")},
      {"head", head},
      {"best", best ? *best : "none"},
      {"baseline", session.contains("baseline") ? session["baseline"].value("commit", "") : "not recorded"},
      {"min_improvement_percent",
       format_number(effective_min_improvement(session, context.config.lane(session.value("lane", ""))), 4)},
      {"experiments", std::to_string(context.state.read_results().size())},
      {"discarded_refs", std::to_string(discarded.size())},
      {"driver_running", holder ? "yes (pid " + std::to_string(*holder) + ")" : "no"},
      {"in_flight",
       inflight ? inflight->value("commit", "").substr(0, 8) + " (" + inflight->value("phase", "") + ")" : "none"},
      {"next", next_step(context, session, head, best)}};
  if (!options.json) std::cout << "dit-ar status\n";
  print_result_block(std::cout, fields, options.json);
  return kExitKeep;
}

}  // namespace

void add_status_command(CLI::App& app, CommonOptions& options) {
  CLI::App* command = app.add_subcommand("status",
                                         "Where the session stands: branch, HEAD, best, baseline, a running driver, an "
                                         "interrupted run, and the next step");
  add_common_options(*command, options, true);
  command->callback([&options] { finish_with(run_status(options)); });
}

}  // namespace dit::ar
