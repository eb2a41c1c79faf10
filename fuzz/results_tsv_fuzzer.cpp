// libFuzzer target for results.tsv, the session's log of experiments: its two readers (the
// driver's StateDirectory::read_results in driver/state_directory.cpp, which `summary` and the
// recording read, and the report's strict read_results_table in driver/report_results.cpp) and
// its writer (ExperimentRecord::tsv_row and StateDirectory::append_result).
//
// Any byte string as results.tsv: each reader accepts it or refuses it with
// dit::Error(invalid_file); what the report accepts the driver reads alike; `summary` prints
// what the driver read, readable or as JSON (invalid UTF-8 included). Rows the driver read,
// written again, read back as written. And a record made of the input's pieces (any bytes:
// tabs, newlines, invalid UTF-8, numbers that are not finite), appended as dit-ar appends it,
// reads back through both readers as that record. Anything else (a crash, undefined behaviour,
// another exception) is a finding.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "driver/recording.h"
#include "driver/report.h"
#include "driver/session.h"
#include "driver/state_directory.h"
#include "fuzz/fuzz_support.h"

namespace {

using dit::fuzz::check;
using namespace dit::ar;
namespace fs = std::filesystem;
using Rows = std::vector<std::map<std::string, std::string>>;

const char* const kStatuses[] = {"KEEP", "DISCARD-QUALITY", "DISCARD-PERFORMANCE", "CRASH", "REJECTED"};

// A fresh state directory (an empty folder) under the scratch folder.
StateDirectory fresh_state(const char* name) {
  const fs::path root = dit::fuzz::scratch_dir() / name;
  fs::remove_all(root);
  fs::create_directories(root);
  return StateDirectory(root);
}

template <typename Read>
auto read_or_refuse(Read read) -> std::optional<decltype(read())> {
  try {
    return read();
  } catch (const dit::Error& error) {
    check(error.kind() == dit::ErrorKind::invalid_file, "a refused results.tsv is an invalid_file error");
    return std::nullopt;
  }
}

bool same_number(std::optional<double> a, std::optional<double> b) {
  if (a.has_value() != b.has_value()) return false;
  return !a || *a == *b || (std::isnan(*a) && std::isnan(*b));
}

std::optional<double> parsed_number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() ? std::optional(value) : std::nullopt;
}

void check_summary(const Rows& rows) {
  const nlohmann::json session{{"tag", "t"},  {"branch", "autoresearch/t"}, {"lane", "cpu"},
                               {"locks", {}}, {"init_commit", "0123abcd"},  {"baseline", {{"noise_percent", 0.5}}}};
  Lane lane;
  lane.name = "cpu";
  for (bool json : {false, true}) {
    std::ostringstream out;
    print_summary(out, lane, session, rows, std::nullopt, 3, json);
    if (json) check(nlohmann::json::accept(out.str()), "summary --json prints JSON");
  }
}

// What the report accepted, the driver reads alike (same rows, same cells).
void check_readers_agree(const ResultsTable& table, const Rows& rows) {
  check(rows.size() == table.rows.size(), "both readers see the same rows");
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t column = 0; column < table.header.size(); ++column) {
      auto found = rows[i].find(table.header[column]);
      check(found != rows[i].end() && found->second == table.rows[i].fields[column], "both readers read one cell");
    }
  }
}

void check_table(const ResultsTable& table) {
  for (const ResultRow& row : table.rows) {
    check(row.fields.size() == table.header.size(), "a row has a field per column");
    check(std::find(std::begin(kStatuses), std::end(kStatuses), row.status) != std::end(kStatuses), "a known status");
    check(row.line >= 2, "rows follow the header");
  }
}

// Rows the driver read, appended again, read back as tsv_field() of what was written.
void check_rows_round_trip(const Rows& rows) {
  const StateDirectory state = fresh_state("rows");
  const size_t count = std::min<size_t>(rows.size(), 4);
  for (size_t i = 0; i < count; ++i) state.append_result(rows[i]);
  const Rows again = state.read_results();
  check(again.size() == count, "every appended row reads back");
  for (size_t i = 0; i < count; ++i) {
    for (const std::string& column : kResultColumns) {
      auto written = rows[i].find(column);
      check(again[i].at(column) == tsv_field(written == rows[i].end() ? "" : written->second),
            "an appended cell reads back as written");
    }
  }
}

// A record of the input's pieces (split at 0x1F, so pieces hold tabs and newlines).
ExperimentRecord record_from(std::string_view text) {
  std::vector<std::string> pieces;
  for (size_t start = 0;;) {
    const size_t end = text.find('\x1f', start);
    pieces.emplace_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  pieces.resize(std::max<size_t>(pieces.size(), 15));
  ExperimentRecord record;
  record.timestamp = pieces[0];
  record.commit = pieces[1];
  record.parent = pieces[2];
  record.lane = pieces[3];
  record.gpu = pieces[4];
  record.classification = pieces[5];
  record.objective_name = pieces[6];
  record.quality = pieces[7];
  record.description = pieces[8];
  record.run_dir = pieces[9];
  record.best_value = parsed_number(pieces[10]);
  record.candidate_value = parsed_number(pieces[11]);
  record.improvement_percent = parsed_number(pieces[12]);
  record.p_value = parsed_number(pieces[13]);
  record.peak_memory = parsed_number(pieces[14]);
  record.status = static_cast<Status>(text.size() % 5);
  return record;
}

// The writer's row reads back through both readers.
void check_record_round_trip(const ExperimentRecord& record) {
  const StateDirectory state = fresh_state("record");
  state.append_result(record.tsv_row());
  const Rows rows = state.read_results();
  check(rows.size() == 1, "an appended record is one row");
  const auto& row = rows.front();
  check(row.at("status") == to_string(record.status), "the status reads back");
  for (const auto& [column, value] : record.tsv_row()) check(row.at(column) == tsv_field(value), "cells read back");
  check(state.has_result_for_run(tsv_field(record.run_dir)), "the run is found by its folder");

  const ResultsTable table = read_results_table(state.results_file());  // the report must read it
  check(table.rows.size() == 1 && !table.torn_last_line, "the report reads the appended row");
  const ResultRow& read = table.rows.front();
  check(read.status == to_string(record.status), "the report reads the status");
  check(read.commit == tsv_field(record.commit) && read.description == tsv_field(record.description) &&
            read.run_dir == tsv_field(record.run_dir) && read.classification == tsv_field(record.classification),
        "the report reads the cells");
  const std::optional<double> written =
      record.candidate_value ? parsed_number(format_number(record.candidate_value)) : std::nullopt;
  check(same_number(read.candidate, written), "the report reads the candidate's value as written");
  check_summary(rows);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = dit::fuzz::as_text(data, size);
  const StateDirectory state = fresh_state("input");
  dit::fuzz::write_bytes(state.results_file(), text);

  const std::optional<ResultsTable> table = read_or_refuse([&] { return read_results_table(state.results_file()); });
  if (table) check_table(*table);
  const std::optional<Rows> rows = read_or_refuse([&] { return state.read_results(); });
  if (rows) {
    for (const auto& row : *rows) {
      for (const std::string& column : kResultColumns) check(row.count(column) == 1, "a row has every column");
    }
    check_summary(*rows);
    check_rows_round_trip(*rows);
  }
  if (table) {
    bool has_driver_columns = true;
    for (const std::string& column : kResultColumns)
      has_driver_columns = has_driver_columns && std::count(table->header.begin(), table->header.end(), column);
    // The driver reads lines as dit-ar writes them (LF); the report also strips a CR before LF.
    if (has_driver_columns && text.find('\r') == std::string_view::npos) {
      check(rows.has_value(), "what the report reads, the driver reads");
      check_readers_agree(*table, *rows);
    }
  }
  check_record_round_trip(record_from(text));  // any exception here is a finding
  return 0;
}
