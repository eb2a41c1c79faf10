// dit-ar summary: the session's results at a glance: counts per status, the best, and the
// latest rows of results.tsv.
#include <iomanip>
#include <iostream>

#include <CLI/CLI.hpp>

#include "core/error.h"
#include "driver/session.h"
#include "driver/subcommands.h"

namespace dit::ar {

namespace {

// best.json as apply_record writes it; a field of another type is a damaged file.
void check_best(const nlohmann::json& best) {
  auto damaged = [](const std::string& problem) {
    return Error(ErrorKind::invalid_file, "best.json: " + problem +
                                              " (the file is damaged: restore it, or start a new session in a fresh "
                                              "state directory with `dit-ar init`)");
  };
  if (!best.is_object()) throw damaged("not a JSON object");
  for (const char* key : {"commit", "lane", "objective", "unit", "run_dir", "timestamp"}) {
    if (best.contains(key) && !best[key].is_string()) throw damaged("\"" + std::string(key) + "\" is not a string");
  }
  if (best.contains("value") && !best["value"].is_number() && !best["value"].is_null())
    throw damaged("\"value\" is not a number or null");
}

// A row's cell; rows of read_results() hold every column dit-ar writes.
const std::string& cell(const std::map<std::string, std::string>& row, const std::string& column) {
  static const std::string empty;
  auto found = row.find(column);
  return found == row.end() ? empty : found->second;
}

// Cut to at most `size` bytes, before a character, never inside one.
std::string prefix(const std::string& text, std::size_t size) {
  if (text.size() <= size) return text;
  while (size > 0 && (static_cast<unsigned char>(text[size]) & 0xC0) == 0x80) --size;
  return text.substr(0, size);
}

int run_summary(const CommonOptions& options, int limit) {
  Config config = load_session_config(options);
  StateDirectory state(config.state_dir);
  nlohmann::json session = state.load_session();
  const Lane& lane = config.lane(session.value("lane", config.default_lane));
  print_summary(std::cout, lane, session, state.read_results(), state.load_best(), limit, options.json);
  return kExitKeep;
}

}  // namespace

void print_summary(std::ostream& out, const Lane& lane, const nlohmann::json& session,
                   const std::vector<std::map<std::string, std::string>>& rows,
                   const std::optional<nlohmann::json>& best, int limit, bool json) {
  if (!session.is_object()) throw Error(ErrorKind::invalid_file, "session.json: not a JSON object");
  if (best) check_best(*best);
  auto text = [&session](const char* key) {
    return session.contains(key) && session[key].is_string() ? session[key].get<std::string>() : std::string();
  };
  std::map<std::string, int> counts;
  for (const auto& row : rows) ++counts[cell(row, "status")];
  std::size_t first = limit > 0 && rows.size() > static_cast<std::size_t>(limit) ? rows.size() - limit : 0;
  // The minimum improvement experiments face: the lane's, raised to twice the baseline's A/A
  // noise when that is larger (program.md, step 7 of the start).
  const double minimum = effective_min_improvement(session, lane);
  std::string minimum_text = format_number(minimum, 4) + "%";
  if (session.contains("baseline") && session["baseline"].is_object()) {
    const nlohmann::json& baseline = session["baseline"];
    double noise = 0.0;
    if (baseline.contains("noise_percent")) {
      if (!baseline["noise_percent"].is_number())
        throw Error(ErrorKind::invalid_file, "session.json: baseline.noise_percent is not a number (damaged)");
      noise = baseline["noise_percent"].get<double>();
    }
    minimum_text +=
        " (lane " + format_number(lane.min_improvement_percent, 4) + "%, A/A noise " + format_number(noise, 4) + "%)";
  } else {
    minimum_text += " (the lane's; no baseline yet)";
  }

  if (json) {
    nlohmann::json document{{"branch", text("branch")},
                            {"lane", text("lane")},
                            {"experiments", rows.size()},
                            {"counts", counts},
                            {"best", best ? *best : nlohmann::json(nullptr)},
                            {"min_improvement_percent", minimum},
                            {"rows", nlohmann::json::array()}};
    for (std::size_t i = first; i < rows.size(); ++i) document["rows"].push_back(rows[i]);
    // results.tsv holds commit messages as they are: invalid UTF-8 is replaced, not refused.
    out << document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return;
  }
  out << "dit-ar summary: " << text("branch") << ", lane " << text("lane") << ", " << rows.size() << " row(s)\n\n";
  out << std::left << std::setw(10) << "commit" << std::setw(21) << "status" << std::setw(15) << "class"
      << std::setw(14) << "candidate" << std::setw(12) << "improv. %"
      << "description\n";
  for (std::size_t i = first; i < rows.size(); ++i) {
    const auto& row = rows[i];
    out << std::setw(10) << prefix(cell(row, "commit"), 8) << std::setw(21) << cell(row, "status") << std::setw(15)
        << cell(row, "classification") << std::setw(14) << cell(row, "candidate") << std::setw(12)
        << cell(row, "improvement_percent") << cell(row, "description") << "\n";
  }
  std::string count_line;
  for (const auto& [status, count] : counts)
    count_line += (count_line.empty() ? "" : ", ") + status + " " + std::to_string(count);
  const bool measured = best && best->contains("value") && (*best)["value"].is_number();
  print_result_block(
      out,
      {{"experiments", std::to_string(rows.size())},
       {"counts", count_line.empty() ? "none" : count_line},
       {"best", best ? best->value("commit", "") : "none"},
       {"objective", measured ? best->value("objective", "") + " " + format_number((*best)["value"].get<double>()) +
                                    " " + best->value("unit", "")
                              : "not measured"},
       {"min_improvement_percent", minimum_text}},
      false);
}

void add_summary_command(CLI::App& app, CommonOptions& options) {
  auto limit = std::make_shared<int>(20);
  CLI::App* command =
      app.add_subcommand("summary", "Counts per status, the best commit and the latest results.tsv rows");
  command->add_option("--limit", *limit, "How many of the latest rows to show (0: all)")->capture_default_str();
  add_common_options(*command, options, true);
  command->callback([&options, limit] { finish_with(run_summary(options, *limit)); });
}

}  // namespace dit::ar
