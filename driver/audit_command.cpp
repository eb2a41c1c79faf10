// dit-ar audit BASE [TIP]: checks that every commit of BASE..TIP that changes a mutable path is an
// experiment the loop kept (driver/audit.h), e.g. over a research campaign's range before it
// lands. Exit 0 when every commit passes, 5 (REJECTED) when one fails, 2 for bad input.
#include <iomanip>
#include <iostream>

#include <CLI/CLI.hpp>

#include "driver/audit.h"
#include "driver/subcommands.h"

namespace dit::ar {

namespace {

struct AuditArguments {
  std::string base;
  std::string tip = "HEAD";
  std::vector<std::string> lanes;
  std::vector<std::string> trailers;
  std::string state_dir;
  bool with_state = false;
};

int run_audit(const CommonOptions& options, const AuditArguments& arguments) {
  const Config config = load_session_config(options);
  AuditOptions audit;
  audit.mutable_paths = config.mutable_paths;
  for (const auto& name : arguments.lanes) audit.lanes.push_back(config.lane(name).name);
  audit.required_trailers = arguments.trailers;
  if (!arguments.state_dir.empty()) audit.state_dir = std::filesystem::absolute(arguments.state_dir);
  if (arguments.with_state) audit.state_dir = config.state_dir;
  GitRepository repository(resolve_repository_root(options));
  const std::vector<AuditEntry> entries = audit_range(repository, arguments.base, arguments.tip, audit);
  std::map<AuditVerdict, int> counts;
  for (const auto& entry : entries) ++counts[entry.verdict];
  const bool passed = counts[AuditVerdict::failed] == 0;
  if (options.json) {
    nlohmann::json document{{"base", arguments.base},
                            {"tip", arguments.tip},
                            {"passed", passed},
                            {"kept", counts[AuditVerdict::kept]},
                            {"exempt", counts[AuditVerdict::exempt]},
                            {"fixed_only", counts[AuditVerdict::fixed_only]},
                            {"failed", counts[AuditVerdict::failed]},
                            {"commits", nlohmann::json::array()}};
    for (const auto& entry : entries) document["commits"].push_back(to_json(entry));
    std::cout << document.dump(2) << "\n";
  } else {
    std::cout << "audit " << arguments.base << ".." << arguments.tip << ": " << entries.size() << " commits, "
              << counts[AuditVerdict::kept] << " kept by the loop, " << counts[AuditVerdict::exempt] << " exempt, "
              << counts[AuditVerdict::fixed_only] << " outside the mutable paths, " << counts[AuditVerdict::failed]
              << " failed\n";
    for (const auto& entry : entries) {
      std::cout << "  " << std::left << std::setw(11) << to_string(entry.verdict) << short_id(entry.commit) << "  "
                << entry.summary;
      if (entry.verdict == AuditVerdict::kept) std::cout << "  (lane " << entry.lane << ", " << entry.run_dir << ")";
      if (entry.verdict == AuditVerdict::exempt)
        std::cout << "  (" << kLoopExemptTrailer << ": " << entry.exempt_why << ")";
      std::cout << "\n";
      for (const auto& problem : entry.problems) std::cout << "      - " << problem << "\n";
    }
  }
  return passed ? kExitKeep : kExitRejected;
}

}  // namespace

void add_audit_command(CLI::App& app, CommonOptions& options) {
  auto arguments = std::make_shared<AuditArguments>();
  CLI::App* command = app.add_subcommand(
      "audit",
      "Check a range of history (e.g. a research campaign's, before it lands): every commit of BASE..TIP that "
      "changes a mutable path must be an experiment the loop kept (one parent, nothing outside the mutable paths, "
      "the driver's KEEP record on refs/notes/autoresearch naming it on top of its parent), or say why it is not "
      "with the message trailer 'Loop-exempt: <why>'. Exit 0 when every commit passes, 5 when one fails, 2 for "
      "bad input.");
  add_common_options(*command, options, true);
  command->add_option("base", arguments->base, "The commit the range starts after")->required();
  command->add_option("tip", arguments->tip, "The range's last commit (default HEAD)");
  command->add_option("--lane", arguments->lanes, "Accept KEEP records of these lanes only (repeatable)");
  command->add_option("--require-trailer", arguments->trailers,
                      "Every kept commit's message must carry this trailer (e.g. A5500-effect: the expected effect "
                      "on the target GPU); repeatable");
  auto* state = command->add_option("--state-dir", arguments->state_dir,
                                    "Also check each record against this state directory: the run's run.json and "
                                    "a KEEP row of results.tsv");
  command->add_flag("--with-state", arguments->with_state, "Same, with the config's state directory")->excludes(state);
  command->callback([&options, arguments] { finish_with(run_audit(options, *arguments)); });
}

}  // namespace dit::ar
