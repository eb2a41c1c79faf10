// results.tsv read strictly for the report: a malformed line is named, never guessed at.
#include <cstdlib>
#include <map>
#include <set>

#include "core/files.h"
#include "driver/report.h"
#include "core/error.h"

namespace dit::ar {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kColumnsRead{"status",    "classification", "commit",
                                            "candidate", "description",    "run_dir"};
const std::set<std::string> kStatuses{"KEEP", "DISCARD-QUALITY", "DISCARD-PERFORMANCE", "CRASH", "REJECTED"};

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  std::size_t start = 0;
  while (true) {
    std::size_t tab = line.find('\t', start);
    fields.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) return fields;
    start = tab + 1;
  }
}

std::optional<double> parse_number(const std::string& text, bool& valid) {
  valid = true;
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  valid = end == text.c_str() + text.size();
  if (!valid) return std::nullopt;
  return value;
}

}  // namespace

ResultsTable read_results_table(const fs::path& path) {
  ResultsTable table;
  if (!fs::exists(path)) return table;
  const std::string text = read_text_file(path);
  auto malformed = [&](int line, const std::string& what) {
    return Error(ErrorKind::invalid_file, path.string() + " line " + std::to_string(line) + ": " + what);
  };

  std::map<std::string, std::size_t> column;
  std::size_t start = 0;
  for (int line_number = 1; start < text.size(); ++line_number) {
    std::size_t newline = text.find('\n', start);
    if (newline == std::string::npos) {
      // dit-ar cuts a killed writer's partial last line off before its next append.
      table.torn_last_line = true;
      break;
    }
    std::string line = text.substr(start, newline - start);
    start = newline + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<std::string> fields = split_tabs(line);

    if (line_number == 1) {
      table.header = fields;
      for (std::size_t i = 0; i < fields.size(); ++i) {
        if (!column.emplace(fields[i], i).second)
          throw malformed(1, "column '" + fields[i] + "' appears twice in the header");
      }
      for (const auto& name : kColumnsRead) {
        if (!column.count(name))
          throw malformed(1, "the header has no '" + name + "' column (is this dit-ar's results.tsv?)");
      }
      continue;
    }
    if (fields.size() != table.header.size()) {
      throw malformed(line_number, std::to_string(fields.size()) + " tab-separated fields, but the header has " +
                                       std::to_string(table.header.size()));
    }
    ResultRow row;
    row.line = line_number;
    row.status = fields[column["status"]];
    row.classification = fields[column["classification"]];
    row.commit = fields[column["commit"]];
    row.description = fields[column["description"]];
    row.run_dir = fields[column["run_dir"]];
    if (!kStatuses.count(row.status)) {
      throw malformed(line_number, "status '" + row.status +
                                       "' is not one of KEEP, DISCARD-QUALITY, DISCARD-PERFORMANCE, CRASH, REJECTED");
    }
    bool valid = false;
    row.candidate = parse_number(fields[column["candidate"]], valid);
    if (!valid) throw malformed(line_number, "candidate '" + fields[column["candidate"]] + "' is not a number");
    if (column.count("best_before")) {
      row.best_before = parse_number(fields[column["best_before"]], valid);
      if (!valid) throw malformed(line_number, "best_before '" + fields[column["best_before"]] + "' is not a number");
    }
    row.fields = std::move(fields);
    table.rows.push_back(std::move(row));
  }
  return table;
}

}  // namespace dit::ar
