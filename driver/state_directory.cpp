// State directory records on top of the durable file operations.
#include "driver/state_directory.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <iomanip>
#include <sstream>

#include "core/files.h"
#include "driver/git_repository.h"
#include "core/error.h"

namespace dit::ar {

namespace fs = std::filesystem;

nlohmann::json StateDirectory::load_session() const {
  if (!has_session()) {
    throw Error(ErrorKind::invalid_argument, "no research session in " + root_.string() +
                                                 "; start one with `dit-ar init` on a branch autoresearch/<tag>");
  }
  nlohmann::json session = read_json_file(session_file());
  // What dit-init wrote; anything less is a damaged file, named as such (never an internal error).
  const auto damaged = [&](const std::string& problem) {
    return Error(ErrorKind::invalid_file, session_file().string() + ": " + problem +
                                              " (the session file is damaged; restore it, or start a new session"
                                              " in a fresh state directory with `dit-ar init`)");
  };
  if (!session.is_object()) throw damaged("not a JSON object");
  for (const char* field : {"tag", "branch", "lane", "init_commit"}) {
    if (!session.contains(field) || !session[field].is_string())
      throw damaged("no string field \"" + std::string(field) + "\"");
  }
  if (!session.contains("locks") || !session["locks"].is_object()) throw damaged("no object field \"locks\"");
  if (session.contains("baseline") && !session["baseline"].is_object())
    throw damaged("field \"baseline\" is not an object");
  return session;
}

void StateDirectory::store_session(const nlohmann::json& session) const { write_json_atomic(session_file(), session); }

std::optional<nlohmann::json> StateDirectory::load_best() const {
  if (!fs::exists(best_file())) return std::nullopt;
  return read_json_file(best_file());
}

void StateDirectory::store_best(const nlohmann::json& best) const { write_json_atomic(best_file(), best); }

std::optional<nlohmann::json> StateDirectory::load_inflight() const {
  if (!fs::exists(inflight_file())) return std::nullopt;
  return read_json_file(inflight_file());
}

void StateDirectory::store_inflight(const nlohmann::json& inflight) const {
  write_json_atomic(inflight_file(), inflight);
}

void StateDirectory::clear_inflight() const {
  std::error_code ignored;
  fs::remove(inflight_file(), ignored);
}

fs::path StateDirectory::create_run_dir(const std::string& commit) const {
  fs::create_directories(runs_dir());
  int highest = 0;
  for (const auto& entry : fs::directory_iterator(runs_dir())) {
    std::string name = entry.path().filename().string();
    highest = std::max(highest, std::atoi(name.substr(0, name.find('-')).c_str()));
  }
  std::ostringstream name;
  name << std::setw(4) << std::setfill('0') << highest + 1 << "-" << short_id(commit);
  fs::path path = runs_dir() / name.str();
  fs::create_directories(path);
  return path;
}

std::vector<std::map<std::string, std::string>> StateDirectory::read_results() const {
  std::vector<std::map<std::string, std::string>> rows;
  if (!fs::exists(results_file())) return rows;
  std::istringstream lines(read_text_file(results_file()));
  std::vector<std::string> header;
  for (std::string line; std::getline(lines, line);) {
    if (lines.eof() && !line.empty()) break;  // a torn last line (no newline) is not a row
    std::vector<std::string> fields;
    std::istringstream cells(line);
    for (std::string cell; std::getline(cells, cell, '\t');) fields.push_back(cell);
    if (!line.empty() && line.back() == '\t') fields.emplace_back();
    if (header.empty()) {
      header = fields;
      // Every column dit-ar writes must be there, so no reader meets a missing one.
      std::string missing;
      for (const std::string& column : kResultColumns) {
        if (std::find(header.begin(), header.end(), column) == header.end())
          missing += (missing.empty() ? "" : ", ") + column;
      }
      if (!missing.empty())
        throw Error(ErrorKind::invalid_file, results_file().string() + ": the header lacks dit-ar's column(s) " +
                                                 missing + " (not a results log dit-ar wrote; restore it or " +
                                                 "start a new session in a fresh state directory)");
      continue;
    }
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < header.size(); ++i) row[header[i]] = i < fields.size() ? fields[i] : "";
    rows.push_back(std::move(row));
  }
  return rows;
}

void StateDirectory::append_result(const std::map<std::string, std::string>& row) const {
  auto join = [](const std::vector<std::string>& fields) {
    std::string line;
    for (std::size_t i = 0; i < fields.size(); ++i) {
      if (i > 0) line += '\t';
      line += tsv_field(fields[i]);
    }
    return line;
  };
  if (!fs::exists(results_file()) || fs::file_size(results_file()) == 0) {
    append_line_durable(results_file(), join(kResultColumns));
  }
  std::vector<std::string> fields;
  for (const auto& column : kResultColumns) {
    auto found = row.find(column);
    fields.push_back(found == row.end() ? "" : found->second);
  }
  append_line_durable(results_file(), join(fields));
}

bool StateDirectory::has_result_for_run(const std::string& run_dir) const {
  for (const auto& row : read_results()) {
    if (row.count("run_dir") && row.at("run_dir") == run_dir) return true;
  }
  return false;
}

std::string tsv_field(const std::string& text) {
  std::string field = text;
  for (char& character : field) {
    if (character == '\t' || character == '\n' || character == '\r') character = ' ';
  }
  return field;
}

std::string utc_timestamp() {
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::ostringstream text;
  text << std::put_time(&utc, "%Y-%m-%dT%H:%M:%SZ");
  return text.str();
}

}  // namespace dit::ar
