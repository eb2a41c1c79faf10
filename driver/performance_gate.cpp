// The performance gate: its sequential rule and decision (every reason names the numbers behind
// it), its request, the timed-outputs protocol's checks and the measuring loop dit-perf-gate runs.
#include "driver/performance_gate.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <tuple>

#include "core/error.h"
#include "core/files.h"
#include "core/safetensors.h"
#include "core/sha256.h"
#include "driver/process.h"
#include "driver/statistics.h"

namespace dit::ar {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string format(double value, int digits = 4) {
  std::ostringstream text;
  text.precision(digits);
  text << value;
  return text.str();
}

// Regression in percent of `reference` (positive is worse), for a quantity where `direction`
// says which way is better.
double regression_percent(Direction direction, double candidate, double reference) {
  return -improvement_percent(direction, candidate, reference);
}

void check_guardrail(GateReport& report, nlohmann::json& record, const std::string& what, Direction direction,
                     double candidate, double reference, double limit_percent, const std::string& against) {
  double regression = regression_percent(direction, candidate, reference);
  bool ok = regression <= limit_percent;
  record.push_back({{"measure", what},
                    {"against", against},
                    {"candidate", candidate},
                    {"reference", reference},
                    {"regression_percent", regression},
                    {"limit_percent", limit_percent},
                    {"passed", ok}});
  if (!ok) {
    report.reasons.push_back(what + " regressed " + format(regression) + "% against the " + against + " (" +
                             format(candidate) + " vs " + format(reference) + "; limit " + format(limit_percent) +
                             "%)");
  }
}

// --- perf-request.json field readers: each names the field on error ---------------------------

[[noreturn]] void request_error(const std::string& where, const std::string& message) {
  throw Error(ErrorKind::invalid_file, where + ": " + message);
}

void reject_unknown(const json& object, const std::string& where, const std::set<std::string>& known) {
  for (const auto& [key, value] : object.items()) {
    if (known.count(key)) continue;
    std::string list;
    for (const auto& name : known) list += (list.empty() ? "" : ", ") + name;
    request_error(where + key, "unknown field (known: " + list + ")");
  }
}

const json* field(const json& object, const std::string& key) {
  auto found = object.find(key);
  return found == object.end() ? nullptr : &*found;
}

std::string string_field(const json& object, const std::string& key, const std::string& where,
                         const std::optional<std::string>& fallback = std::nullopt) {
  const json* value = field(object, key);
  if (!value) {
    if (fallback) return *fallback;
    request_error(where + key, "missing (a string is required)");
  }
  if (!value->is_string()) request_error(where + key, "must be a string, not " + std::string(value->type_name()));
  return value->get<std::string>();
}

fs::path absolute_path_field(const json& object, const std::string& key, const std::string& where) {
  std::string text = string_field(object, key, where);
  if (text.empty() || text.front() != '/') request_error(where + key, "must be an absolute path, not '" + text + "'");
  return fs::path(text).lexically_normal();
}

PerfSide parse_side(const json& document, const std::string& key, const std::string& where) {
  const json* object = field(document, key);
  if (!object) request_error(where + key, "missing (an object is required)");
  if (!object->is_object()) request_error(where + key, "must be an object");
  const std::string at = where + key + ".";
  reject_unknown(*object, at, {"build_dir", "outputs_dir", "command_prefix", "environment"});
  PerfSide side;
  side.build_dir = absolute_path_field(*object, "build_dir", at);
  side.outputs_dir = absolute_path_field(*object, "outputs_dir", at);
  if (const json* prefix = field(*object, "command_prefix")) {
    if (!prefix->is_array()) request_error(at + "command_prefix", "must be a list of strings");
    for (std::size_t i = 0; i < prefix->size(); ++i) {
      const json& item = (*prefix)[i];
      if (!item.is_string() || item.get<std::string>().empty()) {
        request_error(at + "command_prefix[" + std::to_string(i) + "]", "must be a non-empty string");
      }
      side.command_prefix.push_back(item.get<std::string>());
    }
  }
  if (const json* environment = field(*object, "environment")) {
    if (!environment->is_object()) request_error(at + "environment", "must be an object of strings");
    for (const auto& [name, value] : environment->items()) {
      if (name.empty() || name.find('=') != std::string::npos) {
        request_error(at + "environment", "'" + name + "' is not a variable name");
      }
      if (!value.is_string()) request_error(at + "environment." + name, "must be a string");
      side.environment[name] = value.get<std::string>();
    }
  }
  return side;
}

bool is_safetensors_kind(const std::string& kind) {
  const std::string suffix = ".safetensors";
  return kind == "safetensors" ||
         (kind.size() > suffix.size() && kind.compare(kind.size() - suffix.size(), suffix.size(), suffix) == 0);
}

std::string image_file(std::uint64_t index, const std::string& kind) {
  return "image-" + std::to_string(index) + "." + kind;
}

// Why image `index` differs between the sides under `rule`; empty when it agrees.
std::string image_difference(std::uint64_t index, const std::map<std::string, OutputFile>& candidate,
                             const std::map<std::string, OutputFile>& best, const OutputRule& rule,
                             double& max_relative) {
  std::set<std::string> kinds;
  for (const auto& [kind, file] : candidate) kinds.insert(kind);
  for (const auto& [kind, file] : best) kinds.insert(kind);
  for (const std::string& kind : kinds) {
    if (!rule.exact && !is_safetensors_kind(kind)) continue;
    const std::string name = image_file(index, kind);
    auto c = candidate.find(kind);
    auto b = best.find(kind);
    if (c == candidate.end()) return name + " was written by the best only";
    if (b == best.end()) return name + " was written by the candidate only";
    if (rule.exact) {
      if (c->second.sha256 != b->second.sha256) return name + " is not byte-identical";
      continue;
    }
    if (!c->second.unreadable.empty()) return "the candidate's " + name + " cannot be read: " + c->second.unreadable;
    if (!b->second.unreadable.empty()) return "the best's " + name + " cannot be read: " + b->second.unreadable;
    std::set<std::string> names;
    for (const auto& [tensor, value] : c->second.tensors) names.insert(tensor);
    for (const auto& [tensor, value] : b->second.tensors) names.insert(tensor);
    for (const std::string& tensor : names) {
      auto ct = c->second.tensors.find(tensor);
      auto bt = b->second.tensors.find(tensor);
      if (ct == c->second.tensors.end() || bt == b->second.tensors.end()) {
        return name + " holds tensor '" + tensor + "' on one side only";
      }
      if (ct->second.shape != bt->second.shape) {
        return "tensor '" + tensor + "' of " + name + " has shape " + shape_string(ct->second.shape) + ", the best's " +
               shape_string(bt->second.shape);
      }
      double relative = relative_l2(ct->second, bt->second);
      max_relative = std::max(max_relative, std::isnan(relative) ? std::numeric_limits<double>::infinity() : relative);
      if (!(relative <= rule.tolerance)) {
        return "tensor '" + tensor + "' of " + name + " is " + format(relative) +
               " relative L2 from the best's (tolerance " + format(rule.tolerance) + ")";
      }
    }
  }
  return "";
}

// The protocol's checks of one side's outputs on their own.
void check_side(const SideOutputs& side, const std::string& who, std::vector<std::string>& reasons) {
  const std::string prefix = "timed outputs invalid: the " + who;
  if (!side.unexpected.empty()) {
    std::string list;
    for (std::size_t i = 0; i < side.unexpected.size() && i < 5; ++i) list += (i ? ", " : "") + side.unexpected[i];
    if (side.unexpected.size() > 5) list += ", ...";
    reasons.push_back(prefix + " wrote " + std::to_string(side.unexpected.size()) +
                      " image-* entries that are not image-<i>.<kind> files (" + list + ")");
  }
  if (side.images.empty()) {
    reasons.push_back(prefix + " wrote no timed outputs (its benchmark JSON says it timed " +
                      std::to_string(side.timed_iterations) + " iterations)");
    return;
  }
  std::uint64_t expected = 0;
  for (const auto& [index, files] : side.images) {
    if (index != expected) {
      reasons.push_back(prefix + "'s images are not contiguous from 0: image " + std::to_string(expected) +
                        " is missing (" + std::to_string(side.images.size()) + " images, the last image-" +
                        std::to_string(side.images.rbegin()->first) + ")");
      break;
    }
    ++expected;
  }
  if (static_cast<std::int64_t>(side.images.size()) != side.timed_iterations) {
    reasons.push_back(prefix + " wrote " + std::to_string(side.images.size()) +
                      " images but its benchmark JSON says it timed " + std::to_string(side.timed_iterations));
  }
}

// What one benchmark process of a round left: its wall and timed seconds and its outputs.
struct ProcessRecord {
  double wall_seconds = 0.0;
  TimedTotals timed;
  SideOutputs outputs;
  json to_json() const {
    return {{"wall_seconds", wall_seconds},
            {"timed_seconds", timed.seconds},
            {"untimed_seconds", wall_seconds - timed.seconds},
            {"timed_iterations", timed.iterations},
            {"timed_from", timed.from_counters ? "harness counters" : "benchmark entries"},
            {"images", outputs.images.size()}};
  }
};

void append_to_log(const fs::path& log, const std::string& line) {
  std::ofstream out(log, std::ios::app);
  out << "[dit-perf-gate] " << line << "\n";
}

std::string joined(const std::vector<std::string>& words) {
  std::string text;
  for (const auto& word : words) text += (text.empty() ? "" : " ") + word;
  return text;
}

}  // namespace

void add_run(Measurement& measurement, const std::vector<BenchmarkEntry>& entries, const Lane& lane) {
  const std::size_t first_sample = measurement.samples.size();
  for (const auto& entry : entries) {
    if (!entry_matches(entry, lane.objective.name)) continue;
    if (!entry.error_message.empty()) {
      throw Error(ErrorKind::invalid_file, "benchmark " + entry.name + " failed: " + entry.error_message);
    }
    measurement.samples.push_back(entry_value(entry, lane.objective.metric, lane.objective.unit));
    if (!lane.guardrails.p95_counter.empty()) {
      measurement.p95_counter.push_back(entry_value(entry, lane.guardrails.p95_counter, lane.objective.unit));
    }
    if (!lane.guardrails.peak_memory_counter.empty()) {
      measurement.peak_memory.push_back(entry_value(entry, lane.guardrails.peak_memory_counter, ""));
    }
  }
  if (measurement.samples.size() > first_sample) {
    measurement.process_medians.push_back(median(std::vector<double>(
        measurement.samples.begin() + static_cast<std::ptrdiff_t>(first_sample), measurement.samples.end())));
  }
}

nlohmann::json Summary::to_json() const {
  nlohmann::json document{{"median", median}, {"p95", p95}, {"count", count}};
  document["peak_memory"] = peak_memory ? nlohmann::json(*peak_memory) : nlohmann::json(nullptr);
  return document;
}

Summary Summary::from_json(const nlohmann::json& document) {
  Summary summary;
  summary.median = document.at("median").get<double>();
  summary.p95 = document.at("p95").get<double>();
  summary.count = document.value("count", std::size_t{0});
  if (document.contains("peak_memory") && document["peak_memory"].is_number()) {
    summary.peak_memory = document["peak_memory"].get<double>();
  }
  return summary;
}

Summary summarize(const Measurement& measurement) {
  Summary summary;
  summary.count = measurement.samples.size();
  summary.median = median(measurement.samples);
  summary.p95 =
      measurement.p95_counter.empty() ? percentile(measurement.samples, 0.95) : median(measurement.p95_counter);
  if (!measurement.peak_memory.empty()) {
    double peak = 0.0;
    for (double value : measurement.peak_memory) peak = std::max(peak, value);
    summary.peak_memory = peak;
  }
  return summary;
}

nlohmann::json GateReport::to_json() const {
  return {{"gate", gate}, {"passed", passed}, {"reasons", reasons}, {"details", details}};
}

double effective_min_improvement_percent(double configured_percent, double noise_percent) {
  return std::max(configured_percent, kNoiseMultiple * noise_percent);
}

std::optional<std::string> noise_cap_problem(const Lane& lane, double noise_percent) {
  const double effective = effective_min_improvement_percent(lane.min_improvement_percent, noise_percent);
  if (effective <= lane.max_min_improvement_percent) return std::nullopt;
  std::ostringstream text;
  text << "the A/A noise of the baseline's measurement, " << noise_percent << "%, would raise lane " << lane.name
       << "'s minimum improvement from " << lane.min_improvement_percent << "% to " << effective
       << "%, above its cap of " << lane.max_min_improvement_percent
       << "% (max_min_improvement_percent): no experiment could be judged; the baseline is not recorded. Quiet the "
          "machine (nothing else running, clocks locked) and run `dit-ar baseline` again to measure anew";
  return text.str();
}

double improvement_percent(Direction direction, double candidate, double reference) {
  if (reference == 0.0) return 0.0;
  double change = (reference - candidate) / std::abs(reference) * 100.0;
  return direction == Direction::lower ? change : -change;
}

// --- The sequential rule -----------------------------------------------------------------------

nlohmann::json SequentialRule::to_json() const {
  json levels = json::array();
  for (const LookLevels& look : looks) {
    levels.push_back({{"rounds", look.rounds},
                      {"keep_alpha", look.keep_alpha},
                      {"keep_rank", look.keep_rank},
                      {"discard_alpha", look.discard_alpha},
                      {"discard_rank", look.discard_rank}});
  }
  return {{"procedure",
           "Hodges-Lehmann shift of log(candidate) - log(best) over the processes' medians, Lehmann's rank "
           "intervals: KEEP-worthy when the estimate reaches the minimum and the keep interval's lower end "
           "exceeds keep_floor_fraction of it (keep levels spent over the looks, summing to at most "
           "false_keep_rate), settled against when the discard interval's upper end (discard_alpha a side at "
           "every look) is below the minimum"},
          {"false_keep_rate", false_keep_rate},
          {"keep_floor_fraction", kKeepFloorFraction},
          {"discard_alpha", discard_alpha},
          {"first_look", first_look},
          {"first_keep_look", first_keep_look},
          {"max_rounds", max_rounds},
          {"looks", levels}};
}

SequentialRule sequential_rule(int max_rounds, double false_keep_rate, double discard_alpha) {
  for (const auto& [name, rate] : {std::pair{"false-keep rate", false_keep_rate}, {"discard level", discard_alpha}}) {
    if (!(rate > 0.0 && rate < 0.5)) {
      throw Error(ErrorKind::invalid_argument,
                  std::string("a ") + name + " of " + format(rate) + " is not in (0, 0.5)");
    }
  }
  // The level of the rank-1 interval after r rounds a side: P(U = 0) = 1 / C(2r, r).
  const auto rank_one_level = [](int r) { return std::exp(2.0 * std::lgamma(r + 1.0) - std::lgamma(2.0 * r + 1.0)); };
  SequentialRule rule;
  rule.max_rounds = max_rounds;
  rule.false_keep_rate = false_keep_rate;
  rule.discard_alpha = discard_alpha;
  double left = false_keep_rate;
  bool even_shares = false;
  for (int r = 2; r <= max_rounds; ++r) {
    const auto rounds = static_cast<std::size_t>(r);
    LookLevels look;
    look.rounds = r;
    // The keep side's share of this look (see the header).
    const double share = left / static_cast<double>(max_rounds - r + 1);
    if (even_shares || shift_interval_rank(rounds, rounds, share) > 0) {
      even_shares = true;
      look.keep_alpha = share;
    } else if (const double level = rank_one_level(r) * (1.0 + 1e-9); left - level >= false_keep_rate / 2.0) {
      look.keep_alpha = level;  // (1 + 1e-9: the rank-1 level, not lost to rounding)
    }
    if (look.keep_alpha > 0.0) {
      look.keep_rank = shift_interval_rank(rounds, rounds, look.keep_alpha);
      if (look.keep_rank == 0) look.keep_alpha = 0.0;  // the rank-1 level lost to rounding: no look
    }
    left -= look.keep_alpha;
    // The discard interval is never wider than the keep interval of the same look.
    look.discard_alpha = std::max(discard_alpha, look.keep_alpha);
    look.discard_rank = shift_interval_rank(rounds, rounds, look.discard_alpha);
    if (look.keep_rank > 0 && rule.first_keep_look == 0) rule.first_keep_look = r;
    if (rule.first_look == 0 && look.discard_rank == 0 && look.keep_rank == 0) continue;
    if (rule.first_look == 0) rule.first_look = r;
    rule.looks.push_back(look);
  }
  if (rule.first_keep_look == 0) {
    throw Error(ErrorKind::invalid_argument, std::to_string(max_rounds) +
                                                 " rounds are too few for a false-keep rate of " +
                                                 format(false_keep_rate) + ": no look could keep");
  }
  return rule;
}

nlohmann::json Look::to_json() const {
  static const char* const verdicts[] = {"keep-worthy", "cannot reach the minimum", "unsettled"};
  json document{{"rounds", rounds}, {"verdict", verdicts[static_cast<int>(verdict)]}};
  if (has_estimate) document["estimate_percent"] = estimate_percent;
  if (has_interval) {
    document["lower_percent"] = lower_percent;
    document["upper_percent"] = upper_percent;
    document["confidence"] = confidence;
  }
  if (has_discard_interval) {
    document["discard_lower_percent"] = discard_lower_percent;
    document["discard_upper_percent"] = discard_upper_percent;
    document["discard_confidence"] = discard_confidence;
  }
  return document;
}

Look look_at(const SequentialRule& rule, Direction direction, double min_improvement_percent,
             const Measurement& candidate, const Measurement& best) {
  Look look;
  look.rounds = static_cast<int>(std::min(candidate.process_medians.size(), best.process_medians.size()));
  if (candidate.process_medians.size() != best.process_medians.size() || look.rounds < rule.first_look ||
      look.rounds > rule.max_rounds || rule.looks.empty()) {
    return look;
  }
  std::vector<double> candidate_logs;
  std::vector<double> best_logs;
  for (const auto& [values, logs] :
       {std::pair{&candidate.process_medians, &candidate_logs}, std::pair{&best.process_medians, &best_logs}}) {
    for (double value : *values) {
      if (!(value > 0.0) || !std::isfinite(value)) return look;  // a ratio needs positive values
      logs->push_back(std::log(value));
    }
  }
  const LookLevels& levels = rule.at(look.rounds);
  // The shift is log(candidate / best): a lower candidate is an improvement when lower is better.
  auto improvement = [direction](double log_ratio) {
    const double change = (std::exp(log_ratio) - 1.0) * 100.0;
    return (direction == Direction::lower ? -change : change) + 0.0;  // + 0.0: no "-0%"
  };
  // The interval of `rank` as improvements, lower end first.
  const auto interval = [&](std::size_t rank) {
    const ShiftInterval shift = shift_interval(candidate_logs, best_logs, rank);
    look.has_estimate = true;
    look.estimate_percent = improvement(shift.estimate);
    return std::pair{std::min(improvement(shift.lower), improvement(shift.upper)),
                     std::max(improvement(shift.lower), improvement(shift.upper))};
  };
  if (levels.keep_rank > 0) {
    look.has_interval = true;
    std::tie(look.lower_percent, look.upper_percent) = interval(levels.keep_rank);
    look.confidence = 1.0 - 2.0 * levels.keep_alpha;
  }
  if (levels.discard_rank > 0) {
    look.has_discard_interval = true;
    std::tie(look.discard_lower_percent, look.discard_upper_percent) = interval(levels.discard_rank);
    look.discard_confidence = 1.0 - 2.0 * levels.discard_alpha;
  }
  if (look.has_interval && look.estimate_percent >= min_improvement_percent &&
      look.lower_percent > kKeepFloorFraction * min_improvement_percent) {
    look.verdict = Verdict::keep_worthy;
  } else if (look.has_discard_interval && look.discard_upper_percent < min_improvement_percent) {
    look.verdict = Verdict::cannot_reach_minimum;
  }
  return look;
}

nlohmann::json SequentialRun::to_json() const {
  json document{{"rounds_used", rounds}, {"stopping_reason", stopping_reason}, {"looks", json::array()}};
  for (const Look& look : looks) document["looks"].push_back(look.to_json());
  return document;
}

SequentialRun measure_sequentially(const SequentialRule& rule, Direction direction, double min_improvement_percent,
                                   Measurement& candidate, Measurement& best, const RoundMeasurer& measure_round) {
  SequentialRun run;
  while (run.rounds < rule.max_rounds) {
    const bool passed = measure_round(run.rounds, candidate, best);
    ++run.rounds;
    if (!passed) {
      run.stopping_reason = "round " + std::to_string(run.rounds - 1) + " failed its checks";
      return run;
    }
    const auto measured = static_cast<std::size_t>(run.rounds);
    if (candidate.process_medians.size() != measured || best.process_medians.size() != measured) {
      run.stopping_reason = "round " + std::to_string(run.rounds - 1) + " measured no " +
                            (candidate.process_medians.size() != measured ? "candidate" : "best") + " sample";
      return run;
    }
    if (run.rounds < rule.first_look) continue;
    run.looks.push_back(look_at(rule, direction, min_improvement_percent, candidate, best));
    if (run.looks.back().verdict == Verdict::keep_worthy) {
      run.stopping_reason = "settled: keep-worthy";
      return run;
    }
    if (run.looks.back().verdict == Verdict::cannot_reach_minimum) {
      run.stopping_reason = "settled: cannot reach the minimum";
      return run;
    }
  }
  run.stopping_reason = "unsettled after max_rounds";
  return run;
}

GateReport evaluate_performance(const Lane& lane, const SequentialRule& rule, double min_improvement_percent,
                                const Measurement& candidate, const Measurement& best,
                                const std::optional<Summary>& baseline) {
  GateReport report;
  report.gate = "performance";
  const auto minimum_count = static_cast<std::size_t>(rule.first_look);
  if (candidate.process_medians.size() < minimum_count || best.process_medians.size() < minimum_count) {
    report.reasons.push_back("too few samples of " + lane.objective.name + ": candidate " +
                             std::to_string(candidate.process_medians.size()) + " processes, best " +
                             std::to_string(best.process_medians.size()) + " (need " + std::to_string(minimum_count) +
                             " each)");
    return report;
  }
  Summary candidate_summary = summarize(candidate);
  Summary best_summary = summarize(best);
  MannWhitneyResult test = mann_whitney_u(candidate.samples, best.samples);
  double improvement = improvement_percent(lane.objective.direction, candidate_summary.median, best_summary.median);
  const Look look = look_at(rule, lane.objective.direction, min_improvement_percent, candidate, best);

  auto& details = report.details;
  details["objective"] = {{"benchmark", lane.objective.benchmark},
                          {"name", lane.objective.name},
                          {"metric", lane.objective.metric},
                          {"unit", lane.objective.unit},
                          {"direction", to_string(lane.objective.direction)}};
  details["candidate"] = candidate_summary.to_json();
  details["candidate"]["samples"] = candidate.samples;
  details["best"] = best_summary.to_json();
  details["best"]["samples"] = best.samples;
  details["improvement_percent"] = improvement;
  details["min_improvement_percent"] = min_improvement_percent;
  details["p_value"] = test.p_value;
  details["u"] = test.u;
  details["exact_p_value"] = test.exact;
  details["rule"] = rule.to_json();
  details["interval"] = look.to_json();

  // "median improved only 0.2% (716.5 vs 718.1 ms; minimum 1%)", or "regressed".
  const std::string median_change = std::string("median ") + (improvement >= 0 ? "improved only " : "regressed ") +
                                    format(std::abs(improvement)) + "% (" + format(candidate_summary.median) + " vs " +
                                    format(best_summary.median) + " " + lane.objective.unit + "; minimum " +
                                    format(min_improvement_percent) + "%)";
  // "99.9% interval of the improvement 0.4% to 1.9% after 7 of at most 20 rounds".
  const auto interval_text = [&](double confidence, double lower, double upper) {
    return format(100.0 * confidence) + "% interval of the improvement " + format(lower) + "% to " + format(upper) +
           "% after " + std::to_string(look.rounds) + " of at most " + std::to_string(rule.max_rounds) + " rounds";
  };
  if (!look.has_estimate) {
    report.reasons.push_back("no significant difference can be shown: the rule needs " +
                             std::to_string(rule.first_look) + " to " + std::to_string(rule.max_rounds) +
                             " rounds of positive values on both sides (candidate " +
                             std::to_string(candidate.process_medians.size()) + " processes, best " +
                             std::to_string(best.process_medians.size()) + ")");
  } else if (look.verdict == Verdict::cannot_reach_minimum) {
    report.reasons.push_back(
        median_change + ": the " +
        interval_text(look.discard_confidence, look.discard_lower_percent, look.discard_upper_percent) +
        " lies below the minimum");
  } else if (look.verdict == Verdict::unsettled && !look.has_interval) {
    report.reasons.push_back(
        median_change + ", not settled: the " +
        interval_text(look.discard_confidence, look.discard_lower_percent, look.discard_upper_percent) +
        " reaches the minimum, and a KEEP needs " + std::to_string(rule.first_keep_look) + " rounds at least");
  } else if (look.verdict == Verdict::unsettled && look.estimate_percent < min_improvement_percent) {
    report.reasons.push_back(median_change + ", not settled: the " +
                             interval_text(look.confidence, look.lower_percent, look.upper_percent) + " (estimate " +
                             format(look.estimate_percent) + "%) does not show the minimum reached");
  } else if (look.verdict == Verdict::unsettled) {
    report.reasons.push_back("no significant difference from the best large enough to keep: the estimate " +
                             format(look.estimate_percent) + "% reaches the minimum " +
                             format(min_improvement_percent) + "%, but the " +
                             interval_text(look.confidence, look.lower_percent, look.upper_percent) +
                             " reaches below " + format(kKeepFloorFraction * min_improvement_percent) + "%");
  }

  nlohmann::json guardrails = nlohmann::json::array();
  const Guardrails& limits = lane.guardrails;
  check_guardrail(report, guardrails, "p95", lane.objective.direction, candidate_summary.p95, best_summary.p95,
                  limits.p95_step_percent, "best");
  if (candidate_summary.peak_memory && best_summary.peak_memory) {
    check_guardrail(report, guardrails, "peak memory", Direction::lower, *candidate_summary.peak_memory,
                    *best_summary.peak_memory, limits.peak_memory_step_percent, "best");
  }
  if (baseline) {
    check_guardrail(report, guardrails, "p95", lane.objective.direction, candidate_summary.p95, baseline->p95,
                    limits.p95_total_percent, "baseline");
    if (candidate_summary.peak_memory && baseline->peak_memory) {
      check_guardrail(report, guardrails, "peak memory", Direction::lower, *candidate_summary.peak_memory,
                      *baseline->peak_memory, limits.peak_memory_total_percent, "baseline");
    }
  }
  details["guardrails"] = guardrails;

  report.passed = report.reasons.empty();
  return report;
}

GateReport evaluate_noise(const Lane& lane, const Measurement& first, const Measurement& second) {
  GateReport report;
  report.gate = "performance";
  const auto minimum_count = static_cast<std::size_t>(lane.repetitions);
  if (first.samples.size() < minimum_count || second.samples.size() < minimum_count) {
    report.reasons.push_back("too few samples for the A/A comparison (need " + std::to_string(minimum_count) +
                             " each)");
    return report;
  }
  Summary first_summary = summarize(first);
  Summary second_summary = summarize(second);
  auto half_iqr_percent = [](const std::vector<double>& samples) {
    double middle = median(samples);
    if (middle == 0.0) return 0.0;
    return (percentile(samples, 0.75) - percentile(samples, 0.25)) / 2.0 / std::abs(middle) * 100.0;
  };
  double median_difference =
      std::abs(improvement_percent(lane.objective.direction, first_summary.median, second_summary.median));
  double noise = std::max({median_difference, half_iqr_percent(first.samples), half_iqr_percent(second.samples)});
  MannWhitneyResult test = mann_whitney_u(first.samples, second.samples);
  report.details = {
      {"mode", "A/A"},          {"candidate", first_summary.to_json()},           {"best", second_summary.to_json()},
      {"noise_percent", noise}, {"median_difference_percent", median_difference}, {"p_value", test.p_value}};
  report.details["candidate"]["samples"] = first.samples;
  report.details["best"]["samples"] = second.samples;
  report.details["objective"] = {
      {"name", lane.objective.name}, {"unit", lane.objective.unit}, {"direction", to_string(lane.objective.direction)}};
  report.passed = report.reasons.empty();
  return report;
}

// --- perf-request.json ----------------------------------------------------------------------------

PerfRequest parse_perf_request(const nlohmann::json& document, const std::string& where) {
  const std::string at = where + ": ";
  if (!document.is_object()) request_error(where, "must be a JSON object");
  reject_unknown(document, at,
                 {"lane", "mode", "min_improvement_percent", "classification", "baseline_performance", "report",
                  "candidate", "best"});
  PerfRequest request;
  const json* lane = field(document, "lane");
  if (!lane) request_error(at + "lane", "missing (the lane as lane_to_json writes it)");
  request.lane = lane_from_json(*lane, at + "lane");
  const std::string mode = string_field(document, "mode", at);
  if (mode != "compare" && mode != "noise") request_error(at + "mode", "'" + mode + "' is not compare or noise");
  request.noise = mode == "noise";
  request.min_improvement_percent = request.lane.min_improvement_percent;
  if (const json* minimum = field(document, "min_improvement_percent")) {
    if (!minimum->is_number()) request_error(at + "min_improvement_percent", "must be a number");
    request.min_improvement_percent = minimum->get<double>();
    if (!(request.min_improvement_percent >= 0.0)) request_error(at + "min_improvement_percent", "must be >= 0");
  }
  request.classification = string_field(document, "classification", at, std::string("exact"));
  static const std::set<std::string> classifications{"exact", "numerical", "approximate", "quantization"};
  if (!classifications.count(request.classification)) {
    request_error(at + "classification",
                  "'" + request.classification + "' is not exact, numerical, approximate or quantization");
  }
  if (const json* baseline = field(document, "baseline_performance"); baseline && !baseline->is_null()) {
    request.baseline_performance = absolute_path_field(document, "baseline_performance", at);
  }
  request.report = absolute_path_field(document, "report", at);
  request.candidate = parse_side(document, "candidate", at);
  request.best = parse_side(document, "best", at);
  if (request.candidate.outputs_dir == request.best.outputs_dir) {
    request_error(at + "best.outputs_dir", "must differ from candidate.outputs_dir");
  }
  return request;
}

std::vector<std::string> benchmark_command(const PerfSide& side, const Lane& lane, const fs::path& round_dir,
                                           std::uint64_t seed) {
  std::vector<std::string> argv = side.command_prefix;
  argv.push_back((side.build_dir / lane.objective.benchmark).string());
  for (const auto& argument : lane.objective.arguments) argv.push_back(argument);
  argv.push_back("--benchmark_out=" + (round_dir / "benchmark.json").string());
  argv.push_back("--benchmark_out_format=json");
  argv.push_back("--request-seed=" + std::to_string(seed));
  argv.push_back("--outputs-dir=" + round_dir.string());
  return argv;
}

// --- Timed outputs ------------------------------------------------------------------------------

OutputRule output_rule(const std::string& classification, const Objective& objective) {
  OutputRule rule;
  const bool exact_class = classification == "exact";
  rule.exact = exact_class && objective.exact_output_tolerance == 0.0;
  rule.tolerance = exact_class ? objective.exact_output_tolerance : objective.output_tolerance;
  return rule;
}

nlohmann::json OutputComparison::to_json() const {
  json document{{"images_compared", images_compared}, {"differing", json::array()}, {"reasons", reasons}};
  for (std::size_t i = 0; i < differing.size() && i < 20; ++i) document["differing"].push_back(differing[i]);
  document["differing_count"] = differing.size();
  document["max_relative_l2"] = max_relative_l2;
  return document;
}

double relative_l2(const Tensor& candidate, const Tensor& reference) {
  if (candidate.data.size() != reference.data.size()) return std::numeric_limits<double>::infinity();
  double difference = 0.0;
  double norm = 0.0;
  for (std::size_t i = 0; i < reference.data.size(); ++i) {
    const double delta = static_cast<double>(candidate.data[i]) - static_cast<double>(reference.data[i]);
    difference += delta * delta;
    norm += static_cast<double>(reference.data[i]) * static_cast<double>(reference.data[i]);
  }
  if (std::isnan(difference) || std::isnan(norm)) return std::numeric_limits<double>::quiet_NaN();
  if (norm == 0.0) return difference == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
  return std::sqrt(difference / norm);
}

OutputComparison compare_outputs(const SideOutputs& candidate, const SideOutputs& best, const OutputRule& rule) {
  OutputComparison comparison;
  check_side(candidate, "candidate", comparison.reasons);
  check_side(best, "best", comparison.reasons);
  std::string first;
  for (const auto& [index, files] : candidate.images) {
    auto found = best.images.find(index);
    if (found == best.images.end()) continue;
    ++comparison.images_compared;
    std::string difference = image_difference(index, files, found->second, rule, comparison.max_relative_l2);
    if (difference.empty()) continue;
    comparison.differing.push_back(index);
    if (first.empty()) first = difference;
  }
  if (!comparison.differing.empty()) {
    comparison.reasons.push_back("timed outputs differ from the best's (" +
                                 std::string(rule.exact ? "exact: byte-identical files"
                                                        : "relative L2 of each tensor <= " + format(rule.tolerance)) +
                                 "): " + std::to_string(comparison.differing.size()) + " of " +
                                 std::to_string(comparison.images_compared) + " images, first " + first);
  }
  return comparison;
}

std::optional<std::pair<std::uint64_t, std::string>> parse_image_file_name(const std::string& name) {
  const std::string prefix = "image-";
  if (name.rfind(prefix, 0) != 0) return std::nullopt;
  const std::size_t dot = name.find('.', prefix.size());
  if (dot == std::string::npos || dot == prefix.size() || dot + 1 >= name.size()) return std::nullopt;
  const std::string digits = name.substr(prefix.size(), dot - prefix.size());
  if (digits.size() > 1 && digits.front() == '0') return std::nullopt;
  std::uint64_t index = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  std::string kind = name.substr(dot + 1);
  if (kind.find('/') != std::string::npos) return std::nullopt;
  return std::make_pair(index, kind);
}

SideOutputs read_outputs(const fs::path& dir, std::int64_t timed_iterations) {
  SideOutputs outputs;
  outputs.timed_iterations = timed_iterations;
  if (!fs::is_directory(dir)) return outputs;
  std::vector<fs::directory_entry> entries{fs::directory_iterator(dir), fs::directory_iterator()};
  std::sort(entries.begin(), entries.end());
  for (const fs::directory_entry& entry : entries) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("image-", 0) != 0) continue;
    auto parsed = parse_image_file_name(name);
    // Only plain files: a link could lead anywhere (the best's files, a device).
    if (!parsed || entry.symlink_status().type() != fs::file_type::regular) {
      outputs.unexpected.push_back(name);
      continue;
    }
    OutputFile file;
    file.sha256 = sha256_file(entry.path().string());
    file.is_safetensors = is_safetensors_kind(parsed->second);
    if (file.is_safetensors) {
      try {
        SafetensorsFile tensors = SafetensorsFile::open(entry.path().string());
        for (const auto& [tensor, view] : tensors.tensors()) file.tensors[tensor] = tensors.to_float(tensor);
      } catch (const std::exception& error) {
        file.unreadable = error.what();
        file.tensors.clear();
      }
    }
    outputs.images[parsed->first][parsed->second] = std::move(file);
  }
  return outputs;
}

void delete_outputs(const fs::path& dir) {
  if (!fs::is_directory(dir)) return;
  std::vector<fs::path> doomed;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind("image-", 0) == 0) doomed.push_back(entry.path());
  }
  for (const auto& path : doomed) fs::remove_all(path);
}

// --- Untimed growth -----------------------------------------------------------------------------

nlohmann::json UntimedGrowth::to_json() const {
  return {{"candidate_median_seconds", candidate_median},
          {"best_median_seconds", best_median},
          {"growth_seconds", growth},
          {"limit_seconds", limit},
          {"passed", passed}};
}

UntimedGrowth check_untimed_growth(const std::vector<double>& candidate_untimed,
                                   const std::vector<double>& best_untimed, double max_growth_seconds) {
  UntimedGrowth result;
  if (candidate_untimed.empty() || best_untimed.empty()) return result;
  result.candidate_median = median(candidate_untimed);
  result.best_median = median(best_untimed);
  result.growth = result.candidate_median - result.best_median;
  result.limit = max_growth_seconds + kUntimedGrowthFraction * result.best_median;
  result.passed = result.growth <= result.limit;
  if (!result.passed) {
    result.reason = "untimed time grew " + format(result.growth) +
                    " s per process (median wall minus timed: " + format(result.candidate_median) +
                    " s vs the best's " + format(result.best_median) + " s; limit " + format(result.limit) +
                    " s = " + format(max_growth_seconds) + " s + " + format(kUntimedGrowthFraction * 100.0) +
                    "% of the best's): work moved out of the timed region";
  }
  return result;
}

// --- The whole gate -----------------------------------------------------------------------------

GateReport run_performance_gate(const PerfRequest& request, const fs::path& log,
                                const std::function<std::uint64_t()>& draw_seed) {
  const Lane& lane = request.lane;
  const fs::path candidate_binary = request.candidate.build_dir / lane.objective.benchmark;
  const fs::path best_binary = request.best.build_dir / lane.objective.benchmark;
  for (const auto& binary : {candidate_binary, best_binary}) {
    if (!fs::exists(binary)) throw Error(ErrorKind::io, "benchmark binary not found: " + binary.string());
  }
  if (!log.parent_path().empty()) fs::create_directories(log.parent_path());
  const OutputRule rule = output_rule(request.classification, lane.objective);

  // Runs one side once in round `round` and reads (then deletes) what it wrote.
  auto run_side = [&](const PerfSide& side, const fs::path& binary, const std::string& who, int round,
                      std::uint64_t seed, Measurement& measurement) {
    const fs::path round_dir = side.outputs_dir / std::to_string(round);
    fs::remove_all(round_dir);
    fs::create_directories(round_dir);
    ProcessOptions options;
    options.argv = benchmark_command(side, lane, round_dir, seed);
    options.working_dir = binary.parent_path();
    options.environment = side.environment;
    options.drop_inherited_prefixes = {"DIT_"};
    options.log_path = log;
    append_to_log(log, "round " + std::to_string(round) + ", " + who + ": " + joined(options.argv));
    ProcessResult result = run_process(options);
    if (!result.succeeded()) {
      throw Error(ErrorKind::io, "the " + who + "'s benchmark (round " + std::to_string(round) + ") " +
                                     result.describe() + " (log: " + log.string() + ")");
    }
    const fs::path json_path = round_dir / "benchmark.json";
    std::vector<BenchmarkEntry> entries = parse_benchmark_json(read_json_file(json_path), json_path.string());
    add_run(measurement, entries, lane);
    ProcessRecord record;
    record.wall_seconds = result.seconds;
    record.timed = timed_totals(entries, lane.objective.name);
    record.outputs = read_outputs(round_dir, record.timed.iterations);
    delete_outputs(round_dir);
    return record;
  };

  Measurement candidate;
  Measurement best;
  std::vector<double> candidate_untimed;
  std::vector<double> best_untimed;
  std::vector<std::string> output_reasons;
  std::size_t images_compared = 0;
  double max_relative_l2 = 0.0;
  json rounds = json::array();
  // One interleaved round; false when its outputs do not agree: the gate has failed, and the
  // remaining rounds would only spend time.
  const RoundMeasurer measure_round = [&](int round, Measurement& candidate_side, Measurement& best_side) {
    const std::uint64_t seed = draw_seed();
    // Alternate which side goes first each round (ABBA), so a drift in clocks or temperature
    // falls on both sides alike.
    const bool candidate_first = round % 2 == 0;
    ProcessRecord candidate_record;
    ProcessRecord best_record;
    if (candidate_first) {
      candidate_record = run_side(request.candidate, candidate_binary, "candidate", round, seed, candidate_side);
      best_record = run_side(request.best, best_binary, "best", round, seed, best_side);
    } else {
      best_record = run_side(request.best, best_binary, "best", round, seed, best_side);
      candidate_record = run_side(request.candidate, candidate_binary, "candidate", round, seed, candidate_side);
    }
    candidate_untimed.push_back(candidate_record.wall_seconds - candidate_record.timed.seconds);
    best_untimed.push_back(best_record.wall_seconds - best_record.timed.seconds);
    OutputComparison comparison = compare_outputs(candidate_record.outputs, best_record.outputs, rule);
    images_compared += comparison.images_compared;
    max_relative_l2 = std::max(max_relative_l2, comparison.max_relative_l2);
    rounds.push_back({{"round", round},
                      {"seed", seed},
                      {"order", candidate_first ? json{"candidate", "best"} : json{"best", "candidate"}},
                      {"candidate", candidate_record.to_json()},
                      {"best", best_record.to_json()},
                      {"outputs", comparison.to_json()}});
    for (const auto& reason : comparison.reasons) {
      output_reasons.push_back(reason + " (round " + std::to_string(round) + ", seed " + std::to_string(seed) + ")");
    }
    // The running medians, for dit-ar's heartbeat (read back by read_heartbeat_detail,
    // driver/progress.h).
    if (!candidate_side.process_medians.empty() && !best_side.process_medians.empty()) {
      append_to_log(log, "round " + std::to_string(round) + " done: candidate median " +
                             format(median(candidate_side.process_medians), 6) + " " + lane.objective.unit +
                             ", best median " + format(median(best_side.process_medians), 6) + " " +
                             lane.objective.unit + " (" + std::to_string(round + 1) + " rounds)");
    }
    return comparison.passed();
  };

  GateReport report;
  json sequential;
  if (request.noise) {
    // The A/A run has nothing to settle: it measures the noise over a fixed number of rounds.
    int rounds_run = 0;
    bool passed = true;
    while (passed && rounds_run < lane.repetitions) passed = measure_round(rounds_run++, candidate, best);
    sequential = {{"rounds_used", rounds_run},
                  {"stopping_reason", passed ? "fixed rounds (A/A: the lane's repetitions)"
                                             : "round " + std::to_string(rounds_run - 1) + " failed its checks"}};
    if (passed) report = evaluate_noise(lane, candidate, best);
  } else {
    const SequentialRule stopping_rule = sequential_rule(lane.max_rounds);
    const SequentialRun run = measure_sequentially(stopping_rule, lane.objective.direction,
                                                   request.min_improvement_percent, candidate, best, measure_round);
    sequential = run.to_json();
    sequential["rule"] = stopping_rule.to_json();
    if (output_reasons.empty()) {
      std::optional<Summary> baseline;
      if (request.baseline_performance && fs::exists(*request.baseline_performance)) {
        baseline = Summary::from_json(read_json_file(*request.baseline_performance));
      }
      report = evaluate_performance(lane, stopping_rule, request.min_improvement_percent, candidate, best, baseline);
    }
  }
  if (!output_reasons.empty()) {
    report.gate = "performance";
    report.reasons = output_reasons;
    report.details["stopped_after_round"] = rounds.size() - 1;
  }
  UntimedGrowth untimed =
      check_untimed_growth(candidate_untimed, best_untimed, lane.objective.max_untimed_growth_seconds);
  // The A/A run measures the noise of the untimed part too; it does not fail on it.
  if (!request.noise && !untimed.passed) report.reasons.push_back(untimed.reason);
  report.details["mode"] = request.noise ? "noise" : "compare";
  report.details["classification"] = request.classification;
  report.details["candidate_build_dir"] = request.candidate.build_dir.string();
  report.details["best_build_dir"] = request.best.build_dir.string();
  report.details["untimed"] = untimed.to_json();
  report.details["untimed"]["max_growth_seconds"] = lane.objective.max_untimed_growth_seconds;
  report.details["outputs"] = {{"rule", rule.exact ? "exact" : "tolerance"},
                               {"images_compared", images_compared},
                               {"max_relative_l2", max_relative_l2}};
  if (!rule.exact) report.details["outputs"]["tolerance"] = rule.tolerance;
  report.details["rounds"] = rounds;
  report.details["sequential"] = sequential;
  report.passed = report.reasons.empty();
  return report;
}

}  // namespace dit::ar
