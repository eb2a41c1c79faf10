// The progress reporter: readable lines, JSON lines or nothing (driver/progress.h).
#include "driver/progress.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <regex>
#include <sstream>

#include "core/error.h"

namespace dit::ar {

namespace fs = std::filesystem;

namespace {

// The end of a file, at most `bytes` of it; empty when it cannot be read.
std::string file_tail(const fs::path& path, std::streamoff bytes) {
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) return "";
  const std::streamoff size = file.tellg();
  if (size <= 0) return "";
  const std::streamoff start = std::max<std::streamoff>(0, size - bytes);
  file.seekg(start);
  std::string tail(static_cast<size_t>(size - start), '\0');
  file.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  tail.resize(static_cast<size_t>(std::max<std::streamsize>(0, file.gcount())));
  return tail;
}

// A line without terminal colour sequences and control characters.
std::string readable(const std::string& text) {
  std::string line;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\x1b' && i + 1 < text.size() && text[i + 1] == '[') {  // CSI ... final byte
      i += 2;
      while (i < text.size() &&
             (static_cast<unsigned char>(text[i]) < 0x40 || static_cast<unsigned char>(text[i]) > 0x7e))
        ++i;
      continue;
    }
    if (static_cast<unsigned char>(text[i]) >= 0x20) line += text[i];
  }
  return line;
}

std::string utc_now_iso8601() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  char text[40];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  std::ostringstream out;
  out << text << '.' << std::setw(3) << std::setfill('0') << millis << 'Z';
  return out.str();
}

nlohmann::json step_json(const StepCount& step) { return {{"done", step.done}, {"total", step.total}}; }

}  // namespace

std::optional<ProgressFormat> parse_progress_format(const std::string& name) {
  if (name == "text") return ProgressFormat::text;
  if (name == "json") return ProgressFormat::json;
  if (name == "none") return ProgressFormat::none;
  return std::nullopt;
}

std::string stage_column(const std::string& stage) {
  constexpr size_t kWidth = 28;
  return "  " + stage + std::string(stage.size() + 2 > kWidth ? 2 : kWidth - stage.size(), ' ');
}

std::string last_log_line(const fs::path& log) {
  const std::string tail = file_tail(log, 4096);
  const size_t end = tail.find_last_not_of("\r\n \t");
  if (end == std::string::npos) return "";
  const size_t newline = tail.find_last_of("\r\n", end);
  const size_t begin = newline == std::string::npos ? 0 : newline + 1;
  const std::string line = readable(tail.substr(begin, end - begin + 1));
  return line.size() > 120 ? line.substr(0, 117) + "..." : line;
}

std::optional<StepCount> parse_build_step(const std::string& line) {
  static const std::regex pattern(R"(^\s*\[(\d{1,9})/(\d{1,9})\])");
  std::smatch match;
  if (!std::regex_search(line, match, pattern)) return std::nullopt;
  return StepCount{std::stol(match[1]), std::stol(match[2])};
}

std::optional<StepCount> parse_test_step(const std::string& line) {
  static const std::regex pattern(R"(^\s*(\d{1,9})/(\d{1,9}) Test\s+#)");
  std::smatch match;
  if (!std::regex_search(line, match, pattern)) return std::nullopt;
  return StepCount{std::stol(match[1]), std::stol(match[2])};
}

bool parse_gate_line(const std::string& line, GateProgress& gate) {
  static const std::regex starting(R"(^\[dit-perf-gate\] round (\d{1,6}), (candidate|best): )");
  static const std::regex done(
      R"(^\[dit-perf-gate\] round (\d{1,6}) done: candidate median (\S+) (\S*), best median (\S+) \S* \((\d{1,6}) rounds?\))");
  std::smatch match;
  if (std::regex_search(line, match, starting)) {
    gate.round = std::stoi(match[1]);
    gate.running = match[2];
    return true;
  }
  if (std::regex_search(line, match, done)) {
    gate.round = std::stoi(match[1]);
    gate.running.clear();
    try {
      gate.candidate_median = std::stod(match[2]);
      gate.best_median = std::stod(match[4]);
    } catch (const std::exception&) {
      gate.candidate_median.reset();
      gate.best_median.reset();
    }
    gate.unit = match[3];
    gate.rounds_done = std::stoi(match[5]);
    return true;
  }
  return false;
}

HeartbeatDetail read_heartbeat_detail(const std::vector<fs::path>& logs) {
  HeartbeatDetail detail;
  const fs::path* newest = nullptr;
  fs::file_time_type newest_time{};
  for (const auto& log : logs) {
    std::error_code error;
    const auto time = fs::last_write_time(log, error);
    if (!error && (!newest || time > newest_time)) newest = &log, newest_time = time;
  }
  if (newest) detail.last_line = last_log_line(*newest);
  for (const auto& log : logs) {
    // A line a tool rewrote in place (a terminal's \r) counts as lines of its own.
    std::string tail = file_tail(log, 64 << 10);
    std::replace(tail.begin(), tail.end(), '\r', '\n');
    std::istringstream lines(tail);
    GateProgress gate;
    bool gate_seen = false;
    for (std::string line; std::getline(lines, line);) {
      line = readable(line);
      if (auto step = parse_build_step(line)) detail.build = step;
      if (auto step = parse_test_step(line)) detail.tests = step;
      gate_seen = parse_gate_line(line, gate) || gate_seen;
    }
    if (gate_seen) detail.gate = gate;
  }
  return detail;
}

ProgressReporter::ProgressReporter(ProgressFormat format, std::ostream& text_out, std::ostream& json_out,
                                   std::ostream& warning_out)
    : format_(format),
      text_out_(text_out),
      json_out_(json_out),
      warning_out_(warning_out),
      started_(std::chrono::steady_clock::now()) {}

void ProgressReporter::record_to(const std::filesystem::path& file) {
  std::lock_guard lock(mutex_);
  record_.open(file, std::ios::app);
  if (!record_) throw Error(ErrorKind::io, "cannot open " + file.string() + " for the run's progress events");
}

void ProgressReporter::emit(const std::string& event, nlohmann::json fields) {
  if (format_ != ProgressFormat::json && !record_.is_open()) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  nlohmann::json line{
      {"event", event}, {"time", utc_now_iso8601()}, {"elapsed_s", std::round(elapsed * 1000.0) / 1000.0}};
  if (fields.is_object()) {
    for (auto& [key, value] : fields.items()) {
      if (!line.contains(key)) line[key] = std::move(value);
    }
  }
  // Log lines and commit messages can hold anything: invalid UTF-8 is replaced, never thrown on.
  const std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::lock_guard lock(mutex_);
  if (format_ == ProgressFormat::json) json_out_ << text << std::flush;
  // The record is the run's, best effort after it opened: a failed write never ends the run.
  if (record_.is_open()) record_ << text << std::flush;
}

void ProgressReporter::write_text(const std::string& line) {
  if (format_ != ProgressFormat::text) return;
  std::lock_guard lock(mutex_);
  text_out_ << line << std::flush;
}

void ProgressReporter::run_started(const nlohmann::json& fields, const std::string& text) {
  write_text(text + "\n");
  emit("started", fields);
}

void ProgressReporter::stage_started(const std::string& stage, const std::string& preset) {
  nlohmann::json fields{{"stage", stage}};
  if (!preset.empty()) fields["preset"] = preset;
  emit("stage_started", std::move(fields));
}

void ProgressReporter::stage_heartbeat(const std::string& stage, const std::string& preset, long seconds,
                                       const HeartbeatDetail& detail) {
  write_text(stage_column(stage) + "running " + std::to_string(seconds) + " s" +
             (detail.last_line.empty() ? "" : ": " + detail.last_line) + "\n");
  if (format_ != ProgressFormat::json && !record_.is_open()) return;
  nlohmann::json fields{{"stage", stage}, {"seconds", seconds}};
  if (!preset.empty()) fields["preset"] = preset;
  if (!detail.last_line.empty()) fields["last_line"] = detail.last_line;
  if (detail.build) fields["build"] = step_json(*detail.build);
  if (detail.tests) fields["tests"] = step_json(*detail.tests);
  if (detail.gate) {
    nlohmann::json gate{{"round", detail.gate->round}};
    if (!detail.gate->running.empty()) gate["running"] = detail.gate->running;
    if (detail.gate->rounds_done) gate["rounds_done"] = *detail.gate->rounds_done;
    if (detail.gate->candidate_median) gate["candidate_median"] = *detail.gate->candidate_median;
    if (detail.gate->best_median) gate["best_median"] = *detail.gate->best_median;
    if (!detail.gate->unit.empty()) gate["unit"] = detail.gate->unit;
    fields["gate"] = std::move(gate);
  }
  emit("stage_heartbeat", std::move(fields));
}

void ProgressReporter::stage_finished(const std::string& stage, const std::string& preset, const ProcessResult& result,
                                      const std::optional<std::string>& text) {
  const bool ok = result.succeeded();
  if (format_ == ProgressFormat::text) {
    if (text) {
      write_text(*text + "\n");
    } else {
      std::ostringstream line;
      line << stage_column(stage) << (ok ? "ok    " : "FAILED ") << std::fixed << std::setprecision(1) << result.seconds
           << " s" << (ok ? "" : "  (" + result.describe() + ")") << "\n";
      write_text(line.str());
    }
  }
  nlohmann::json fields{
      {"stage", stage}, {"status", ok ? "ok" : "FAILED"}, {"seconds", std::round(result.seconds * 1000.0) / 1000.0}};
  if (!preset.empty()) fields["preset"] = preset;
  if (result.started && !result.timed_out && result.signal == 0) fields["exit_code"] = result.exit_code;
  if (!ok) fields["detail"] = result.describe();
  emit("stage_finished", std::move(fields));
}

void ProgressReporter::stage_skipped(const std::string& stage, const std::string& preset, const std::string& reason) {
  write_text(stage_column(stage) + "skipped (" + reason + ")\n");
  nlohmann::json fields{{"stage", stage}, {"status", "skipped"}, {"seconds", 0}, {"detail", reason}};
  if (!preset.empty()) fields["preset"] = preset;
  emit("stage_finished", std::move(fields));
}

void ProgressReporter::phase(const std::string& name) { emit("phase", {{"phase", name}}); }

void ProgressReporter::note(const std::string& text) {
  write_text(text + "\n");
  const size_t begin = text.find_first_not_of(' ');
  emit("note", {{"text", begin == std::string::npos ? "" : text.substr(begin)}});
}

void ProgressReporter::warning(const std::string& text) {
  write_text("warning: " + text + "\n");
  if (format_ == ProgressFormat::none) {
    std::lock_guard lock(mutex_);
    warning_out_ << "warning: " << text << "\n" << std::flush;
  }
  emit("warning", {{"text", text}});
}

void ProgressReporter::decision(const nlohmann::json& document) { emit("decision", document); }

void ProgressReporter::dry_run(const nlohmann::json& document) { emit("dry_run", document); }

}  // namespace dit::ar
