// The performance gate: its request (perf-request.json), the timed-outputs protocol it runs both
// sides under, its sequential rule and its decision, separate from the program that measures
// (dit-perf-gate) so that each rule can be tested on data held in memory. KEEP-worthy only when
// the rank interval of the improvement, after as few interleaved rounds as settle it, shows the
// lane's minimum reached (within the guardrails, with timed outputs that match the best's and an
// untimed part that did not grow).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tensor.h"
#include "driver/benchmark_json.h"
#include "driver/config.h"

namespace dit::ar {

// One side's measurements of the objective: one sample per benchmark entry that matched.
struct Measurement {
  std::vector<double> samples;      // the objective, in the lane's unit
  std::vector<double> p95_counter;  // per sample, when the lane names a p95 counter
  std::vector<double> peak_memory;  // per sample, when the lane names a memory counter
  // Per benchmark process, the median of its samples: what the sequential rule compares, since
  // processes (interleaved, each with its own start, memory and clocks) are the independent unit;
  // several timed samples in one process (--benchmark_repetitions) make its value less noisy.
  std::vector<double> process_medians;
};

// Adds the matching entries of one benchmark run (one process). Throws dit::Error when an entry
// reported an error, or when a counter the lane names is missing.
void add_run(Measurement& measurement, const std::vector<BenchmarkEntry>& entries, const Lane& lane);

struct Summary {
  double median = 0.0;
  double p95 = 0.0;
  std::optional<double> peak_memory;  // the largest seen
  std::size_t count = 0;
  nlohmann::json to_json() const;
  static Summary from_json(const nlohmann::json& document);
};
Summary summarize(const Measurement& measurement);

struct GateReport {
  std::string gate;
  bool passed = false;
  std::vector<std::string> reasons;
  nlohmann::json details = nlohmann::json::object();
  nlohmann::json to_json() const;
};

// --- The sequential rule -----------------------------------------------------------------------
//
// A comparison ends as soon as it is settled. After each interleaved round r from the rule's first
// look on, the gate takes each side's process values (Measurement::process_medians), their
// logarithms, and Lehmann's distribution-free intervals for the shift log(candidate) - log(best)
// (Hodges-Lehmann's estimate at their centre; a multiplicative noise is a shift of the logarithms),
// read as an improvement in percent. Two intervals, one per way a look can settle:
//   the keep interval: its sides miss with probability keep_alpha at look r, and the keep levels of
//     all the looks add up to at most kFalseKeepRate (Bonferroni with unequal shares), so over
//     every look together its lower end exceeds the true improvement with probability at most
//     kFalseKeepRate, for any continuous noise both sides share up to the shift. A look is
//     keep-worthy when the estimate reaches the minimum and the lower end exceeds
//     kKeepFloorFraction of it: a candidate truly no better than half the minimum is kept at most
//     kFalseKeepRate of the time;
//   the discard interval, at kDiscardAlphaPerLook a side (95%): the look cannot reach the minimum
//     when its upper end is below it (any clear regression included). A discard costs only a
//     missed KEEP, so this side is not spent over the looks; how often a candidate twice the
//     minimum faster is lost to it is measured by the simulation (at most 10%).
// Otherwise the look is unsettled: one more round; after max_rounds an unsettled comparison is
// discarded. An interval of rank 1 (the extreme pairwise differences) exists at r rounds from the
// level 1 / C(2r, r) on. The discard side looks from the first r whose rank-1 level is within its
// alpha (4 rounds: 1 / 70). The keep side spends its rate from the first r whose rank-1 level is at
// most half the rate (5 rounds for 0.01: 1 / 252): a look whose even share of what is left would
// give no interval spends its rank-1 level if that leaves at least half the rate, else it is
// skipped; from the first look whose even share gives an interval on, every look takes the even
// share. For 20 rounds at 0.01: 1/252 at 5, none at 6 (1/924 would leave less than half), then
// 0.00043 each for 7 to 20. The error
// rates are measured on synthetic comparisons in tests/driver/perf_gate_simulation_test.cpp.
inline constexpr double kFalseKeepRate = 0.01;
inline constexpr double kKeepFloorFraction = 0.5;
inline constexpr double kDiscardAlphaPerLook = 0.025;

// The two intervals of the look after `rounds` rounds: a side's rank 0 means no interval of that
// side at this look.
struct LookLevels {
  int rounds = 0;
  double keep_alpha = 0.0;  // each side of the keep interval
  std::size_t keep_rank = 0;
  double discard_alpha = 0.0;  // each side of the discard interval
  std::size_t discard_rank = 0;
};

struct SequentialRule {
  int first_look = 0;       // the earliest look (the discard side's)
  int first_keep_look = 0;  // the earliest look that can keep
  int max_rounds = 0;
  double false_keep_rate = kFalseKeepRate;
  double discard_alpha = kDiscardAlphaPerLook;
  std::vector<LookLevels> looks;  // rounds first_look to max_rounds, in order
  // The levels after `rounds` rounds, first_look <= rounds <= max_rounds.
  const LookLevels& at(int rounds) const { return looks.at(static_cast<std::size_t>(rounds - first_look)); }
  nlohmann::json to_json() const;
};

// The rule's schedule for `max_rounds`. Throws dit::Error(invalid_argument) when no look could
// keep (too few rounds for the rate) or a rate is outside (0, 0.5).
SequentialRule sequential_rule(int max_rounds, double false_keep_rate = kFalseKeepRate,
                               double discard_alpha = kDiscardAlphaPerLook);

enum class Verdict { keep_worthy, cannot_reach_minimum, unsettled };

struct Look {
  int rounds = 0;
  // Whether the look has an estimate at all: false before the first look, past max_rounds, with
  // unequal sides or on unusable values.
  bool has_estimate = false;
  double estimate_percent = 0.0;
  bool has_interval = false;  // the keep interval (rounds from first_keep_look on)
  double lower_percent = 0.0;
  double upper_percent = 0.0;
  double confidence = 0.0;  // 1 - 2 keep_alpha
  bool has_discard_interval = false;
  double discard_lower_percent = 0.0;
  double discard_upper_percent = 0.0;
  double discard_confidence = 0.0;
  Verdict verdict = Verdict::unsettled;
  nlohmann::json to_json() const;
};

// The look at what both sides measured so far: as many rounds as each side has processes (they
// must be equal, and every value positive, or the look has no interval).
Look look_at(const SequentialRule& rule, Direction direction, double min_improvement_percent,
             const Measurement& candidate, const Measurement& best);

// Measures round `round` (from 0) of both sides into the two measurements; returns false to stop
// there (the round failed a check of its own: the gate has failed).
using RoundMeasurer = std::function<bool(int round, Measurement& candidate, Measurement& best)>;

struct SequentialRun {
  int rounds = 0;  // measured
  std::string stopping_reason;
  std::vector<Look> looks;
  nlohmann::json to_json() const;
};

// Measures rounds until a look settles, the measurer stops, a round leaves a side without a
// value for it, or rule.max_rounds have run. The gate runs this, and so does the simulation
// that measures the rule's error rates.
SequentialRun measure_sequentially(const SequentialRule& rule, Direction direction, double min_improvement_percent,
                                   Measurement& candidate, Measurement& best, const RoundMeasurer& measure_round);

// Candidate against the best measured in the same run: the rule's look at everything measured
// (KEEP-worthy, or the reason it is not), the guardrails, also against the baseline summary when
// one was recorded. The Mann-Whitney U p-value of the samples is reported, not decided on.
GateReport evaluate_performance(const Lane& lane, const SequentialRule& rule, double min_improvement_percent,
                                const Measurement& candidate, const Measurement& best,
                                const std::optional<Summary>& baseline);

// The A/A comparison `baseline` runs: the same build measured against itself. Reports the
// noise (the larger of the median difference and each side's half interquartile range, in
// percent of the median); fails only when the measurements are unusable.
GateReport evaluate_noise(const Lane& lane, const Measurement& first, const Measurement& second);

// The lane minimum after the A/A measurement: never below kNoiseMultiple times the noise, so
// noise alone cannot produce a KEEP.
inline constexpr double kNoiseMultiple = 2.0;
double effective_min_improvement_percent(double configured_percent, double noise_percent);
// Why the baseline's noise makes the lane unjudgeable here (the effective minimum above the lane's
// max_min_improvement_percent), with the figures and the way out; nothing when it does not.
std::optional<std::string> noise_cap_problem(const Lane& lane, double noise_percent);

// Signed improvement in percent: positive when `candidate` is better than `reference`.
double improvement_percent(Direction direction, double candidate, double reference);

// --- perf-request.json (the driver -> dit-perf-gate) ------------------------------------------

inline constexpr const char* kPerfRequestFile = "perf-request.json";  // in $DIT_JUDGE_DIR

// One side of the comparison: where its objective binary is built, the folder its processes
// write their timed outputs to (one subfolder per round), what goes before the benchmark's argv
// (the sandbox, possibly nothing) and the variables added to its environment.
struct PerfSide {
  std::filesystem::path build_dir;
  std::filesystem::path outputs_dir;
  std::vector<std::string> command_prefix;
  std::map<std::string, std::string> environment;
};

struct PerfRequest {
  Lane lane;
  bool noise = false;  // "mode": "noise" (the baseline's A/A run), else "compare"
  double min_improvement_percent = 0.0;
  std::string classification = "exact";
  std::optional<std::filesystem::path> baseline_performance;  // the baseline's performance.json
  std::filesystem::path report;
  PerfSide candidate;
  PerfSide best;
};

// Validates the request: every problem is a dit::Error(invalid_file) naming `where` and the
// field ("perf-request.json: candidate.outputs_dir: must be an absolute path").
PerfRequest parse_perf_request(const nlohmann::json& document, const std::string& where);

// The argv of one benchmark process of round r: the side's command prefix, its objective binary
// (build_dir / lane.objective.benchmark), the objective's arguments, then
// --benchmark_out=<round_dir>/benchmark.json --benchmark_out_format=json
// --request-seed=<seed> --outputs-dir=<round_dir>.
std::vector<std::string> benchmark_command(const PerfSide& side, const Lane& lane,
                                           const std::filesystem::path& round_dir, std::uint64_t seed);

// --- Timed outputs ------------------------------------------------------------------------------

// One file a benchmark process wrote for a timed image: its SHA-256, and for a *.safetensors file
// its tensors as float32 (or why they could not be read).
struct OutputFile {
  std::string sha256;
  bool is_safetensors = false;
  std::map<std::string, Tensor> tensors;
  std::string unreadable;  // set when a *.safetensors file did not parse
};

// What one process wrote: image index -> (file kind, "latent.safetensors" of
// "image-3.latent.safetensors" -> file), and how many iterations its benchmark JSON says it timed.
struct SideOutputs {
  std::map<std::uint64_t, std::map<std::string, OutputFile>> images;
  std::int64_t timed_iterations = 0;
  std::vector<std::string> unexpected;  // files named image-* that are not image-<i>.<kind>
};

// How outputs are compared: byte-identical files (`exact`), or each safetensors tensor within
// `tolerance` relative L2 of the best's (other files not compared).
struct OutputRule {
  bool exact = true;
  double tolerance = 1e-2;
};
OutputRule output_rule(const std::string& classification, const Objective& objective);

struct OutputComparison {
  std::vector<std::string> reasons;      // empty when the outputs agree
  std::size_t images_compared = 0;       // images present on both sides
  std::vector<std::uint64_t> differing;  // the compared images that differ
  double max_relative_l2 = 0.0;          // over the tensors compared (tolerance rule only)
  bool passed() const { return reasons.empty(); }
  nlohmann::json to_json() const;
};

// The protocol's checks of one round: each side wrote images 0..n-1 contiguously (n >= 1) and
// exactly as many as its benchmark JSON says it timed; the images present on both sides agree
// under `rule`. A difference is a reason starting "timed outputs differ from the best's".
OutputComparison compare_outputs(const SideOutputs& candidate, const SideOutputs& best, const OutputRule& rule);

// ||candidate - reference||_2 / ||reference||_2 (0 when both are zero, infinity when only the
// reference is; NaN values make it NaN, which passes no tolerance).
double relative_l2(const Tensor& candidate, const Tensor& reference);

// Parses "image-<i>.<kind>" (i canonical decimal, kind not empty); nothing for any other name.
std::optional<std::pair<std::uint64_t, std::string>> parse_image_file_name(const std::string& name);

// Reads every image-* file of `dir` into memory; other files are left alone.
SideOutputs read_outputs(const std::filesystem::path& dir, std::int64_t timed_iterations);
// Removes every image-* file of `dir`.
void delete_outputs(const std::filesystem::path& dir);

// --- Untimed growth -----------------------------------------------------------------------------

// Per process U = wall seconds (measured by the gate, spawn to exit) - timed seconds (what the
// benchmark JSON reports). Fails when median(U candidate) - median(U best) >
// max_growth_seconds + 0.1 x median(U best): work moved out of the timed region into setup, or
// an in-process timer that under-reports. The reason starts "untimed time grew".
struct UntimedGrowth {
  double candidate_median = 0.0;
  double best_median = 0.0;
  double growth = 0.0;
  double limit = 0.0;
  bool passed = true;
  std::string reason;
  nlohmann::json to_json() const;
};
inline constexpr double kUntimedGrowthFraction = 0.1;
UntimedGrowth check_untimed_growth(const std::vector<double>& candidate_untimed,
                                   const std::vector<double>& best_untimed, double max_growth_seconds);

// --- The whole gate -----------------------------------------------------------------------------

// Runs rounds, each with a fresh seed from `draw_seed` shared by both sides, in ABBA order (even
// rounds candidate first): in compare mode until the sequential rule settles (at most
// lane.max_rounds), in noise mode lane.repetitions of them; reads (then deletes) each process's
// outputs, the best's before the candidate of the round runs; stops after a round whose outputs
// do not agree. Every benchmark process gets the inherited environment less every DIT_* variable,
// plus its side's. Throws dit::Error when a side cannot be measured (no binary, a failed
// process, no benchmark JSON). Output of the processes is appended to `log`.
GateReport run_performance_gate(const PerfRequest& request, const std::filesystem::path& log,
                                const std::function<std::uint64_t()>& draw_seed);

}  // namespace dit::ar
