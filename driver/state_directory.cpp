// State directory records on top of the durable file operations: JSON records through
// core/files.h's atomic writer, results.tsv through an append that is cut back when it fails.
#include "driver/state_directory.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <iomanip>
#include <set>
#include <sstream>

#include "core/files.h"
#include "driver/git_repository.h"
#include "core/error.h"

namespace dit::ar {

namespace fs = std::filesystem;

namespace {

constexpr const char* kSealedSuffix = ".interrupted";

// The length of `descriptor`'s content up to and including its last newline (a killed or failed
// writer may have left part of a line after it).
off_t whole_lines_length(int descriptor, off_t size, const fs::path& path) {
  char buffer[4096];
  for (off_t end = size; end > 0;) {
    const off_t begin = std::max<off_t>(0, end - static_cast<off_t>(sizeof buffer));
    const ssize_t got = ::pread(descriptor, buffer, static_cast<size_t>(end - begin), begin);
    if (got != end - begin)
      throw Error(ErrorKind::io, "cannot read " + path.string() + ": " + std::strerror(got < 0 ? errno : EIO));
    for (ssize_t i = got; i > 0; --i) {
      if (buffer[i - 1] == '\n') return begin + i;
    }
    end = begin;
  }
  return 0;
}

// Seals one undecided run folder (seal_undecided_runs); returns its new path.
fs::path seal_run_folder(const fs::path& folder) {
  const fs::path marker = folder / "interrupted.json";
  if (!fs::exists(marker)) {
    write_json_atomic(marker, {{"interrupted", true},
                               {"noticed_at", utc_timestamp()},
                               {"reason",
                                "no decision was recorded for this run: its driver was stopped, or ended with an "
                                "error, before it decided"}});
  }
  fs::path sealed = folder.string() + kSealedSuffix;
  for (int attempt = 2; fs::exists(sealed); ++attempt)
    sealed = folder.string() + kSealedSuffix + "-" + std::to_string(attempt);
  std::error_code error;
  fs::rename(folder, sealed, error);
  if (error) throw Error(ErrorKind::io, "cannot seal the run folder " + folder.string() + ": " + error.message());
  // A path into the old folder now meets a file: nothing can create runs/<id>/... again.
  write_file_atomic(folder, "this run ended without a decision; its folder, sealed, is " + sealed.filename().string() +
                                " (interrupted.json says when)\n");
  const auto read_only = fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write;
  fs::permissions(folder, read_only, fs::perm_options::remove, error);
  for (auto entry = fs::recursive_directory_iterator(sealed, error);
       !error && entry != fs::recursive_directory_iterator(); entry.increment(error)) {
    std::error_code ignored;
    if (entry->is_regular_file(ignored) && !entry->is_symlink(ignored))
      fs::permissions(entry->path(), read_only, fs::perm_options::remove, ignored);
  }
  return sealed;
}

}  // namespace

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
  if (session.contains("baseline")) {
    const nlohmann::json& baseline = session["baseline"];
    if (!baseline.is_object()) throw damaged("field \"baseline\" is not an object");
    // Each field the commands read, of the type `dit-ar baseline` wrote it with.
    const auto expect = [&](const char* field, bool (nlohmann::json::*is)() const noexcept, const char* what) {
      if (baseline.contains(field) && !(baseline[field].*is)())
        throw damaged("baseline." + std::string(field) + " is not " + what);
    };
    for (const char* field : {"commit", "run_dir", "recorded_at", "gpu"})
      expect(field, &nlohmann::json::is_string, "a string");
    for (const char* field : {"noise_percent", "min_improvement_percent", "effective_min_improvement_percent"})
      expect(field, &nlohmann::json::is_number, "a number");
    for (const char* field : {"goldens", "test_signature"}) expect(field, &nlohmann::json::is_object, "an object");
    expect("warnings", &nlohmann::json::is_array, "an array");
  }
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

std::vector<fs::path> StateDirectory::seal_undecided_runs() const {
  for (const fs::path& record : {session_file(), best_file(), inflight_file(), best_built_file()}) {
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(record.parent_path(), error)) {
      const std::string name = entry.path().filename().string();
      const std::string prefix = record.filename().string() + ".tmp.";
      std::error_code ignored;
      if (name.size() == prefix.size() + 6 && name.rfind(prefix, 0) == 0) fs::remove(entry.path(), ignored);
    }
  }
  std::vector<fs::path> sealed;
  if (!fs::is_directory(runs_dir())) return sealed;
  std::set<std::string> decided;
  for (const auto& row : read_results()) {
    if (row.count("run_dir")) decided.insert(row.at("run_dir"));
  }
  std::vector<fs::path> undecided;
  for (const auto& entry : fs::directory_iterator(runs_dir())) {
    const std::string name = entry.path().filename().string();
    if (entry.is_symlink() || !entry.is_directory()) continue;
    if (name.find(kSealedSuffix) != std::string::npos) continue;
    if (!decided.count(fs::relative(entry.path(), root_).generic_string())) undecided.push_back(entry.path());
  }
  std::sort(undecided.begin(), undecided.end());
  for (const auto& folder : undecided) sealed.push_back(seal_run_folder(folder));
  return sealed;
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
  std::vector<std::string> fields;
  for (const auto& column : kResultColumns) {
    auto found = row.find(column);
    fields.push_back(found == row.end() ? "" : found->second);
  }
  const fs::path path = results_file();
  const int descriptor = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (descriptor < 0) throw Error(ErrorKind::io, "cannot open " + path.string() + ": " + std::strerror(errno));
  // Cut back to `length` and fail, naming the step and the system's reason.
  auto fail = [&](off_t length, const std::string& step) {
    const int error = errno;
    (void)!::ftruncate(descriptor, length);
    (void)!::fsync(descriptor);
    ::close(descriptor);
    throw Error(ErrorKind::io, "cannot append a row to " + path.string() + ": " + step + ": " + std::strerror(error) +
                                   " (the file is left as it was; the run is recorded when the command runs again)");
  };
  struct stat status {};
  if (::fstat(descriptor, &status) != 0) fail(0, "fstat");
  off_t length = 0;
  try {
    length = whole_lines_length(descriptor, status.st_size, path);
  } catch (const Error&) {
    ::close(descriptor);
    throw;
  }
  if (length != status.st_size && ::ftruncate(descriptor, length) != 0) fail(status.st_size, "cutting a torn line");
  const std::string text = (length == 0 ? join(kResultColumns) + "\n" : std::string()) + join(fields) + "\n";
  for (std::size_t written = 0; written < text.size();) {
    const ssize_t count = ::write(descriptor, text.data() + written, text.size() - written);
    if (count < 0 && errno == EINTR) continue;
    if (count <= 0) {
      if (count == 0) errno = ENOSPC;
      fail(length, "write");
    }
    written += static_cast<std::size_t>(count);
  }
  if (::fsync(descriptor) != 0) fail(length, "fsync");
  if (::close(descriptor) != 0)
    throw Error(ErrorKind::io, "cannot close " + path.string() + " after appending a row: " + std::strerror(errno));
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
