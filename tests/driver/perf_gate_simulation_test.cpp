// The performance gate's error rates, measured on synthetic comparisons run through the gate's own
// code: each synthetic benchmark process becomes a BenchmarkEntry added with add_run, the rounds
// are driven by measure_sequentially and decided by evaluate_performance (guardrails included),
// and the effective minimum comes from a simulated A/A run through evaluate_noise and
// effective_min_improvement_percent, all with the session lane of config/autoresearch.json
// (a5500-session-256: minimum 1%, 9 A/A rounds, at most max_rounds compared).
//
// Noise model: every process reports one sample T x exp(s x e), T the side's true time (718 ms,
// the lane's objective on the H200), e independent across processes and drawn from a standard
// normal (lognormal noise) or from Student's t with 3 degrees of freedom (heavy tails: now and
// then a process far off), s chosen so that the samples' half interquartile range, what
// evaluate_noise reports as the noise, is `noise` percent of T. `noise` is the A/A noise the
// lane's baseline recorded on the H200, 0.0682% (knowledge/sessions/2026-12-01/session.log,
// "noise_percent: 0.0682"; the judge-timing baselines recorded 0.0265% and 0.0863%,
// results/h200/2026-12-02-2846a68-judge-timing/{before,after}/session.log), and ten times it,
// 0.682%, where the A/A run raises the minimum to twice the noise: from there on the comparisons
// only scale with the noise, so the ten-times figures stand for every noisier machine too.
//
// Scenarios, each comparison with its own A/A run and its own effective minimum m: the
// candidate's true time is best x (1 - f x m / 100), f = 0.5 (no better than half the minimum),
// -1 (slower by the minimum), 2 (twice the minimum faster) and 0 (the same). Bounds: f = 0.5 is
// kept at most 1% of the time, f = -1 at most 0.1%, f = 2 at least 90%. The mean number of rounds
// of each scenario is printed (the old gate always ran 9; at the recorded noise this rule settles
// a discard after 4 rounds and a KEEP after 5).
//
// The bounds can fail, and do for rules close to this one (controls, at ten times the noise): the
// same rule with a false keep rate of 0.1 instead of 0.01, and the old fixed rule (9 rounds,
// Mann-Whitney U p < 0.05 and a median improvement of at least m), keep f = 0.5 more than 1% of
// the time; the same rule stopped at 9 rounds instead of 20 keeps f = 2 less than 90% of the time
// under Student-t noise. (Measured when the rule took its discard side and its unequal keep
// shares: 2.7%, 7.4% and 67%; the rule itself kept f = 0.5 at most 0.6% of the time and f = 2 at
// least 93%.)
// Fixed seeds and a generator of our own: the test is deterministic.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numbers>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "driver/benchmark_json.h"
#include "driver/config.h"
#include "driver/performance_gate.h"
#include "driver/statistics.h"

using namespace dit::ar;

namespace {

constexpr const char* kLane = "a5500-session-256";
constexpr double kBestMilliseconds = 718.0;
constexpr double kRecordedNoisePercent = 0.0682;
constexpr int kComparisons = 4000;  // per scenario: 16 scenarios and 3 controls, 76,000 comparisons

enum class Noise { lognormal, student_t3 };

// The 0.75 quantile of each standardised noise: s = noise / 100 / quantile gives that half
// interquartile range.
double upper_quartile(Noise noise) { return noise == Noise::lognormal ? 0.6744897501960817 : 0.7648923284035530; }

// Draws from mt19937_64 (its output is fixed by the standard) through Box-Muller, so the figures
// do not depend on a standard library's distributions.
class NoiseSource {
 public:
  NoiseSource(Noise noise, double noise_percent, std::uint64_t seed)
      : noise_(noise), scale_(noise_percent / 100.0 / upper_quartile(noise)), engine_(seed) {}

  // One process's sample of a side whose true time is `milliseconds`.
  double sample(double milliseconds) { return milliseconds * std::exp(scale_ * standard()); }

 private:
  double uniform() { return (static_cast<double>(engine_() >> 11) + 0.5) * 0x1.0p-53; }
  double normal() {
    if (spare_) {
      const double value = *spare_;
      spare_.reset();
      return value;
    }
    const double radius = std::sqrt(-2.0 * std::log(uniform()));
    const double angle = 2.0 * std::numbers::pi * uniform();
    spare_ = radius * std::sin(angle);
    return radius * std::cos(angle);
  }
  double standard() {
    const double z = normal();
    if (noise_ == Noise::lognormal) return z;
    double chi_square = 0.0;
    for (int i = 0; i < 3; ++i) {
      const double x = normal();
      chi_square += x * x;
    }
    return z / std::sqrt(chi_square / 3.0);
  }

  Noise noise_;
  double scale_;
  std::mt19937_64 engine_;
  std::optional<double> spare_;
};

const Lane& session_lane() {
  static const Config config = load_config(DIT_SOURCE_DIR "/config/autoresearch.json", DIT_SOURCE_DIR);
  return config.lane(kLane);
}

// What the benchmark JSON of one process holds: one entry of the objective.
std::vector<BenchmarkEntry> process_entries(const Lane& lane, double milliseconds) {
  BenchmarkEntry entry;
  entry.name = lane.objective.name + "/manual_time";
  entry.run_name = entry.name;
  entry.run_type = "iteration";
  entry.iterations = 1;
  entry.real_time = milliseconds;
  entry.time_unit = "ms";
  if (!lane.guardrails.peak_memory_counter.empty()) entry.counters[lane.guardrails.peak_memory_counter] = 1 << 30;
  return {entry};
}

// The effective minimum after a simulated baseline: its A/A run of `repetitions` rounds.
double simulated_minimum(const Lane& lane, NoiseSource& source) {
  Measurement first;
  Measurement second;
  for (int round = 0; round < lane.repetitions; ++round) {
    add_run(first, process_entries(lane, source.sample(kBestMilliseconds)), lane);
    add_run(second, process_entries(lane, source.sample(kBestMilliseconds)), lane);
  }
  const GateReport noise = evaluate_noise(lane, first, second);
  return effective_min_improvement_percent(lane.min_improvement_percent, noise.details["noise_percent"].get<double>());
}

struct Outcome {
  int comparisons = 0;
  int kept = 0;
  long rounds = 0;
  double minimum_sum = 0.0;
  double keep_rate() const { return static_cast<double>(kept) / comparisons; }
  double mean_rounds() const { return static_cast<double>(rounds) / comparisons; }
  double mean_minimum() const { return minimum_sum / comparisons; }
};

// `comparisons` comparisons of a candidate `factor` minimums faster than the best, through the
// gate's loop and decision under `rule`.
Outcome simulate(const Lane& lane, const SequentialRule& rule, Noise noise, double noise_percent, double factor,
                 std::uint64_t seed, int comparisons = kComparisons) {
  NoiseSource source(noise, noise_percent, seed);
  Outcome outcome;
  for (int i = 0; i < comparisons; ++i) {
    const double minimum = simulated_minimum(lane, source);
    const double candidate_milliseconds = kBestMilliseconds * (1.0 - factor * minimum / 100.0);
    Measurement candidate;
    Measurement best;
    const SequentialRun run = measure_sequentially(
        rule, lane.objective.direction, minimum, candidate, best, [&](int, Measurement& c, Measurement& b) {
          add_run(c, process_entries(lane, source.sample(candidate_milliseconds)), lane);
          add_run(b, process_entries(lane, source.sample(kBestMilliseconds)), lane);
          return true;
        });
    const GateReport report = evaluate_performance(lane, rule, minimum, candidate, best, std::nullopt);
    ++outcome.comparisons;
    outcome.kept += report.passed ? 1 : 0;
    outcome.rounds += run.rounds;
    outcome.minimum_sum += minimum;
  }
  return outcome;
}

// The gate before the sequential rule, as a control: 9 rounds, Mann-Whitney U p < 0.05 and a
// median improvement of at least the minimum.
Outcome simulate_fixed_nine(const Lane& lane, Noise noise, double noise_percent, double factor, std::uint64_t seed) {
  NoiseSource source(noise, noise_percent, seed);
  Outcome outcome;
  for (int i = 0; i < kComparisons; ++i) {
    const double minimum = simulated_minimum(lane, source);
    const double candidate_milliseconds = kBestMilliseconds * (1.0 - factor * minimum / 100.0);
    std::vector<double> candidate;
    std::vector<double> best;
    for (int round = 0; round < 9; ++round) {
      candidate.push_back(source.sample(candidate_milliseconds));
      best.push_back(source.sample(kBestMilliseconds));
    }
    const bool kept = mann_whitney_u(candidate, best).p_value < 0.05 &&
                      improvement_percent(lane.objective.direction, median(candidate), median(best)) >= minimum;
    ++outcome.comparisons;
    outcome.kept += kept ? 1 : 0;
    outcome.rounds += 9;
    outcome.minimum_sum += minimum;
  }
  return outcome;
}

const char* name_of(Noise noise) { return noise == Noise::lognormal ? "lognormal" : "student-t3"; }

void print(const std::string& what, const Outcome& outcome) {
  std::printf("%-58s kept %6.2f%%  mean rounds %5.2f  mean minimum %.3f%%\n", what.c_str(), 100.0 * outcome.keep_rate(),
              outcome.mean_rounds(), outcome.mean_minimum());
}

TEST(PerfGateSimulation, ErrorRatesOfTheSequentialRule) {
  const Lane& lane = session_lane();
  const SequentialRule rule = sequential_rule(lane.max_rounds);
  std::printf("lane %s: minimum %g%%, A/A rounds %d, looks from %d (KEEP from %d) to %d, %d comparisons per scenario\n",
              kLane, lane.min_improvement_percent, lane.repetitions, rule.first_look, rule.first_keep_look,
              rule.max_rounds, kComparisons);
  std::uint64_t seed = 20261201;
  for (Noise noise : {Noise::lognormal, Noise::student_t3}) {
    for (double noise_percent : {kRecordedNoisePercent, 10.0 * kRecordedNoisePercent}) {
      for (double factor : {0.5, -1.0, 2.0, 0.0}) {
        const Outcome outcome = simulate(lane, rule, noise, noise_percent, factor, ++seed);
        char what[96];
        std::snprintf(what, sizeof what, "%s noise %.4f%%, candidate %+.1f x minimum faster", name_of(noise),
                      noise_percent, factor);
        print(what, outcome);
        SCOPED_TRACE(what);
        if (factor <= 0.5) {
          EXPECT_LE(outcome.keep_rate(), factor < 0.0 ? 0.001 : 0.01);
        } else {
          EXPECT_GE(outcome.keep_rate(), 0.90);
        }
        // The point of the rule: 4 or 5 rounds where the noise is low (the old gate ran 9).
        if (noise_percent == kRecordedNoisePercent) {
          EXPECT_LE(outcome.mean_rounds(), 5.5);
        }
      }
    }
  }
}

TEST(PerfGateSimulation, TheBoundsCatchWeakerRulesAndTheOldOne) {
  const Lane& lane = session_lane();
  const double noise_percent = 10.0 * kRecordedNoisePercent;
  const Outcome weaker = simulate(lane, sequential_rule(lane.max_rounds, 0.1), Noise::lognormal, noise_percent, 0.5, 7);
  print("control: false keep rate 0.1, lognormal 10x, +0.5 x minimum", weaker);
  EXPECT_GT(weaker.keep_rate(), 0.01);
  const Outcome old = simulate_fixed_nine(lane, Noise::lognormal, noise_percent, 0.5, 8);
  print("control: fixed 9 rounds, p < 0.05, lognormal 10x, +0.5 x min", old);
  EXPECT_GT(old.keep_rate(), 0.01);
  const Outcome short_run = simulate(lane, sequential_rule(9), Noise::student_t3, noise_percent, 2.0, 9);
  print("control: at most 9 rounds, student-t3 10x, +2 x minimum", short_run);
  EXPECT_LT(short_run.keep_rate(), 0.90);
}

}  // namespace
