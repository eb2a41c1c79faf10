// dit-ar: the keep/discard driver. Registers every subcommand (driver/subcommands.h), turns
// decisions and errors into the exit codes of driver/exit_codes.h.
#include <iostream>

#include <CLI/CLI.hpp>

#include "driver/common_options.h"
#include "driver/exit_codes.h"
#include "driver/process.h"
#include "driver/subcommands.h"
#include "core/error.h"

int main(int argc, char** argv) {
  using namespace dit::ar;
  // Orphans of a killed test (even ones that called setsid) are adopted and ended by us.
  become_subreaper();

  CLI::App app{
      "dit-ar: the keep/discard driver of DiT AutoResearch. Each experiment is one committed hypothesis on a "
      "branch autoresearch/<tag>: dit-ar builds it, runs the CTest gates, keeps it only when every gate passed "
      "and it is measurably faster than the best, and records the decision.\n"
      "Exit codes: 0 KEEP (or success), 3 DISCARD-QUALITY or DISCARD-PERFORMANCE, 4 CRASH, 5 REJECTED, "
      "2 setup or input error, 1 internal error."};
  app.require_subcommand(1);
  CommonOptions options;
  add_doctor_command(app, options);
  add_init_command(app, options);
  add_baseline_command(app, options);
  add_experiment_command(app, options);
  add_summary_command(app, options);
  add_status_command(app, options);
  add_profile_command(app, options);
  add_search_commands(app, options);
  add_index_command(app, options);
  add_report_command(app, options);
  add_work_commands(app, options);
  add_audit_command(app, options);

  // A first word that names no command is an unknown command, not a missing one.
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
      known = known || command->check_name(argv[1]);
      names += (names.empty() ? "" : ", ") + command->get_name();
    }
    if (!known) {
      std::cerr << "dit-ar: unknown command '" << argv[1] << "' (commands: " << names << ")\n";
      return kExitSetupError;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& result) {
    return result.get_exit_code();
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::ParseError& error) {
    app.exit(error);
    return kExitSetupError;
  } catch (const dit::Error& error) {
    std::string command =
        app.get_subcommands().empty() ? "dit-ar" : "dit-ar " + app.get_subcommands().front()->get_name();
    std::cerr << command << ": " << error.what() << "\n";
    return kExitSetupError;
  } catch (const std::exception& error) {
    std::cerr << "dit-ar: internal error: " << error.what() << "\n";
    return kExitInternalError;
  }
  return kExitKeep;
}
