// dit-ar summary: the session's results at a glance: counts per status, the best, and the
// latest rows of results.tsv.
#include <iomanip>
#include <iostream>

#include <CLI/CLI.hpp>

#include "driver/session.h"
#include "driver/subcommands.h"

namespace dit::ar {

namespace {

int run_summary(const CommonOptions& options, int limit) {
  Config config = load_session_config(options);
  StateDirectory state(config.state_dir);
  nlohmann::json session = state.load_session();
  auto rows = state.read_results();
  std::map<std::string, int> counts;
  for (const auto& row : rows) ++counts[row.at("status")];
  auto best = state.load_best();
  std::size_t first = limit > 0 && rows.size() > static_cast<std::size_t>(limit) ? rows.size() - limit : 0;
  // The minimum improvement experiments face: the lane's, raised to twice the baseline's A/A
  // noise when that is larger (program.md, step 7 of the start).
  const Lane& lane = config.lane(session.value("lane", config.default_lane));
  const double minimum = effective_min_improvement(session, lane);
  std::string minimum_text = format_number(minimum, 4) + "%";
  if (session.contains("baseline")) {
    minimum_text += " (lane " + format_number(lane.min_improvement_percent, 4) + "%, A/A noise " +
                    format_number(session["baseline"].value("noise_percent", 0.0), 4) + "%)";
  } else {
    minimum_text += " (the lane's; no baseline yet)";
  }

  if (options.json) {
    nlohmann::json document{{"branch", session.value("branch", "")},
                            {"lane", session.value("lane", "")},
                            {"experiments", rows.size()},
                            {"counts", counts},
                            {"best", best ? *best : nlohmann::json(nullptr)},
                            {"min_improvement_percent", minimum},
                            {"rows", nlohmann::json::array()}};
    for (std::size_t i = first; i < rows.size(); ++i) document["rows"].push_back(rows[i]);
    std::cout << document.dump(2) << "\n";
    return kExitKeep;
  }
  std::cout << "dit-ar summary: " << session.value("branch", "") << ", lane " << session.value("lane", "") << ", "
            << rows.size() << " row(s)\n\n";
  std::cout << std::left << std::setw(10) << "commit" << std::setw(21) << "status" << std::setw(15) << "class"
            << std::setw(14) << "candidate" << std::setw(12) << "improv. %"
            << "description\n";
  for (std::size_t i = first; i < rows.size(); ++i) {
    const auto& row = rows[i];
    std::cout << std::setw(10) << row.at("commit").substr(0, 8) << std::setw(21) << row.at("status") << std::setw(15)
              << row.at("classification") << std::setw(14) << row.at("candidate") << std::setw(12)
              << row.at("improvement_percent") << row.at("description") << "\n";
  }
  std::string count_line;
  for (const auto& [status, count] : counts)
    count_line += (count_line.empty() ? "" : ", ") + status + " " + std::to_string(count);
  print_result_block(
      std::cout,
      {{"experiments", std::to_string(rows.size())},
       {"counts", count_line.empty() ? "none" : count_line},
       {"best", best ? best->value("commit", "") : "none"},
       {"objective", best && (*best)["value"].is_number()
                         ? best->value("objective", "") + " " + format_number((*best)["value"].get<double>()) + " " +
                               best->value("unit", "")
                         : "not measured"},
       {"min_improvement_percent", minimum_text}},
      false);
  return kExitKeep;
}

}  // namespace

void add_summary_command(CLI::App& app, CommonOptions& options) {
  auto limit = std::make_shared<int>(20);
  CLI::App* command =
      app.add_subcommand("summary", "Counts per status, the best commit and the latest results.tsv rows");
  command->add_option("--limit", *limit, "How many of the latest rows to show (0: all)")->capture_default_str();
  add_common_options(*command, options, true);
  command->callback([&options, limit] { finish_with(run_summary(options, *limit)); });
}

}  // namespace dit::ar
